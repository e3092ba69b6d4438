// What a lookup without a time answers, one piece at a time in address order: the pieces of
// RangeSetSnapshot::Latest without the copy (a perf map of 2^26 ranges has 1.5 GB of them). The
// runs of the snapshot are overlaid newest first (overlay.h), as Run::Merge overlays them; the
// pieces of tombstones are skipped. Holds pointers into the snapshot, which must outlive it.
#ifndef JITSYM_DAEMON_INDEX_LATEST_CURSOR_H_
#define JITSYM_DAEMON_INDEX_LATEST_CURSOR_H_

#include <cstddef>
#include <cstdint>

#include "daemon/index/overlay.h"
#include "daemon/index/range_set.h"

namespace jitsym::index {

class LatestCursor {
 public:
  explicit LatestCursor(const RangeSetSnapshot& snapshot);

  bool done() const { return done_; }
  // The current piece (not done): its range is never a tombstone.
  const LatestPiece& piece() const { return piece_; }
  void Next();
  // To the first piece that ends after addr, cut to start at addr when it covers it. Never
  // backwards.
  void Seek(uint64_t addr);

  // Bytes it holds besides itself (a few per run of the snapshot).
  size_t memory_bytes() const;

 private:
  // One run's flattened map, slot by slot (gaps skipped).
  class RunLayer {
   public:
    explicit RunLayer(const Run* run) : run_(run) { Settle(); }
    bool done() const { return slot_ >= run_->slots(); }
    uint64_t start() const { return piece_.start; }
    uint64_t end() const { return piece_.end; }
    const Range* range() const { return piece_.range; }
    void Next() {
      ++slot_;
      Settle();
    }
    void Seek(uint64_t addr) {
      const size_t slot = run_->FirstSlotEndingAfter(addr);
      if (slot > slot_) slot_ = slot;
      Settle();
    }

   private:
    void Settle() {
      while (slot_ < run_->slots() && !run_->Slot(slot_, &piece_)) ++slot_;
    }
    const Run* run_;
    size_t slot_ = 0;
    LatestPiece piece_;
  };

  // The next piece of the overlay that is not a tombstone's.
  void Advance();

  Overlay<RunLayer> runs_;
  LatestPiece piece_;
  bool done_ = false;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_LATEST_CURSOR_H_
