// The "symbols" operation: every range the daemon knows for a process as of now, as a perf map
// of it would hold them (what `jitsym perfmap` writes). Sources in precedence order (jitdump,
// mlpd, perf map), each contributing what no earlier source covers, then the process's
// ReadyToRun images with their bases applied, where no JIT source has code.
//
// The answer may be far larger than what it is made of (one image placed at a thousand bases is
// a thousand copies of it), so it is never built: SymbolsCursor walks it in address order, one
// range at a time, overlaying the latest pieces of every source and image placement
// (index::Overlay: at each address the first with code there answers, as in lookups), O(n log k)
// for n pieces in k of them. The server pulls the answer's text from it as the client reads.
#ifndef JITSYM_DAEMON_QUERY_SYMBOLS_QUERY_H_
#define JITSYM_DAEMON_QUERY_SYMBOLS_QUERY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/index/latest_cursor.h"
#include "daemon/index/overlay.h"
#include "daemon/query/image_lookup.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::query {

// The ranges of one symbols answer, in address order. Holds the process's and the images'
// sources (not the whole index view), and a cursor per source and per image placement reached
// so far (an image joins at its base, and lets its cursor go once past its last range).
class SymbolsCursor {
 public:
  SymbolsCursor(int64_t pid, std::shared_ptr<const index::ProcessView> process,
                std::vector<ImageLookup::MappedImage> images);

  int64_t pid() const { return pid_; }
  uint64_t incarnation() const { return process_ ? process_->incarnation : 0; }
  // The next range into *entry (its strings' storage reused); false at the end.
  bool Next(proto::SymbolEntry* entry);
  // What it may hold of its own at most (every placement's cursor at once).
  size_t memory_bytes() const { return memory_bytes_; }

 private:
  // One source at one base: its latest pieces shifted by the base, up to the image's end.
  class Layer {
   public:
    Layer(const index::SourceView* source, uint64_t base, uint64_t limit);
    bool done() const { return cursor_ == nullptr; }
    uint64_t start() const { return start_; }
    uint64_t end() const { return end_; }
    const index::Range& range() const { return *range_; }
    const index::SourceView& source() const { return *source_; }
    void Next();
    void Seek(uint64_t addr);

   private:
    // To the current piece's place, or done (and the cursor freed) when none is left.
    void Settle();
    const index::SourceView* source_;
    uint64_t base_ = 0;
    uint64_t limit_ = 0;  // 0: none
    std::unique_ptr<index::LatestCursor> cursor_;
    uint64_t start_ = 0;
    uint64_t end_ = 0;
    const index::Range* range_ = nullptr;
  };

  int64_t pid_;
  std::shared_ptr<const index::ProcessView> process_;
  std::vector<ImageLookup::MappedImage> images_;  // sorted by base
  size_t next_image_ = 0;                         // the next to join the overlay
  index::Overlay<Layer> overlay_;
  size_t memory_bytes_ = 0;
};

// A symbols request: an error response (bad pid, not found, not allowed, owner unknown), or the
// cursor over its answer. For root, the trusted group and the process's owner only (the list
// reveals where the process's code is); not_found for an unknown pid.
struct SymbolsQuery {
  std::optional<proto::Response> error;
  std::unique_ptr<SymbolsCursor> cursor;
};
SymbolsQuery OpenSymbols(const index::IndexView& view, const proto::SymbolsRequest& request,
                         const security::PeerAccess& access, ImageLookup& images);

// The whole answer at once (OpenSymbols, every range collected): for callers in the process.
proto::Response ListSymbols(const index::IndexView& view, const proto::SymbolsRequest& request,
                            const security::PeerAccess& access, ImageLookup& images);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_SYMBOLS_QUERY_H_
