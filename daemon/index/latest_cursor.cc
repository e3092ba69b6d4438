#include "daemon/index/latest_cursor.h"

#include <utility>

namespace jitsym::index {

LatestCursor::LatestCursor(const RangeSetSnapshot& snapshot) {
  // The newest run first: it wins where runs overlap.
  for (auto it = snapshot.runs_.rbegin(); it != snapshot.runs_.rend(); ++it) {
    runs_.Add(RunLayer(it->get()));
  }
  Advance();
}

void LatestCursor::Advance() {
  Overlay<RunLayer>::Segment s;
  while (runs_.Next(&s)) {
    const Range* range = runs_.layer(s.layer).range();
    if (range->payload == kTombstone) continue;  // nothing is there now
    piece_ = {s.start, s.end, range};
    return;
  }
  done_ = true;
}

void LatestCursor::Next() {
  if (!done_) Advance();
}

void LatestCursor::Seek(uint64_t addr) {
  if (done_ || addr < piece_.end) {
    if (!done_ && piece_.start < addr) piece_.start = addr;
    return;
  }
  runs_.Seek(addr);
  Advance();
}

size_t LatestCursor::memory_bytes() const {
  // The layers and the two heaps of the overlay, one entry per run each.
  return runs_.size() *
         (sizeof(RunLayer) + sizeof(std::pair<uint64_t, uint32_t>) + sizeof(uint32_t));
}

}  // namespace jitsym::index
