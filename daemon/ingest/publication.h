// Publication: turns the ingester's followed files and process table into the immutable
// IndexView the query threads read. Only what changed since the last view is rebuilt (a file's
// SourceView, an incarnation's ProcessView); the rest is shared with the previous view.
//
// Pure: it reads the sources' code maps and the table, and clears their `changed` marks; it
// opens nothing, so it is tested with made-up sources (tests/unit/publication_test.cc).
#ifndef JITSYM_DAEMON_INGEST_PUBLICATION_H_
#define JITSYM_DAEMON_INGEST_PUBLICATION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/ingest/followed_file.h"
#include "daemon/ingest/process_table.h"

namespace jitsym::ingest {

// The ingester's counters that are not read off the files or the table.
struct IngestCounters {
  uint64_t files_failed = 0;
  uint64_t files_untrusted = 0;
  uint64_t files_pending = 0;
  uint64_t files_over_limit = 0;
  uint64_t files_unattached = 0;
  uint64_t bytes_ingested = 0;
  uint64_t evictions = 0;
  uint64_t memory_budget_bytes = 0;
};

// The next view, or nullptr when nothing differs from `current` (no file or incarnation
// changed, no incarnation removed, the same counters) and not `force`. `files`: oldest first.
// `current` must be the view built last from this table: its processes are taken as they are
// except for the pids with a changed incarnation and `removed_pids` (whose incarnations the
// table removed since, ProcessTable::TakeRemoved), so a view costs what changed, not the
// number of processes.
std::shared_ptr<index::IndexView> BuildView(const std::vector<std::unique_ptr<FollowedFile>>& files,
                                            ProcessTable::Map& processes,
                                            const IngestCounters& counters,
                                            const index::IndexView& current, bool force,
                                            const std::vector<uint32_t>& removed_pids);

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_PUBLICATION_H_
