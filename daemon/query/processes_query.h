// The "processes" operation: the incarnations the index holds, with their sources, and the
// files left unattached, as far as the peer may see them. Walked one process (and one file) at
// a time by ProcessesCursor, which both the whole answer and the one the server pulls step by
// step are made from.
#ifndef JITSYM_DAEMON_QUERY_PROCESSES_QUERY_H_
#define JITSYM_DAEMON_QUERY_PROCESSES_QUERY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "daemon/index/index_view.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::query {

class ProcessesCursor {
 public:
  // With `access`, only what the peer may see. `view` is held.
  ProcessesCursor(std::shared_ptr<const index::IndexView> view,
                  std::optional<security::PeerAccess> access);

  // The next incarnation (in pid order, oldest first), then false.
  bool NextProcess(proto::ProcessInfo* out);
  // Then the next file left unattached (oldest first), then false.
  bool NextUnattached(proto::UnattachedInfo* out);

 private:
  std::shared_ptr<const index::IndexView> view_;
  std::optional<security::PeerAccess> access_;
  uint32_t next_pid_ = 0;   // the pid being listed, or the next one to look for
  size_t incarnation_ = 0;  // of next_pid_'s incarnations, the next to list
  bool done_ = false;
  size_t unattached_ = 0;
};

// The whole answer: every process and file of the cursor.
proto::ProcessesResponse ListProcesses(std::shared_ptr<const index::IndexView> view,
                                       std::optional<security::PeerAccess> access);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_PROCESSES_QUERY_H_
