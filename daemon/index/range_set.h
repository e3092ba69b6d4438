// A time-versioned set of code ranges: the core of the index (docs/index.md).
//
// Ranges are appended in the order their source defined them; each has a start time. The answer
// for address A at time T is the range that, among those with time <= T, was appended last and
// covers A ("the latest definition covering the address at time t wins", as perf resolves
// overlapping maps). A tombstone is a range that covers addresses with nothing (code moved away or
// unloaded). Times are made non-decreasing on append, so "time <= T" selects a prefix of the
// append order; a record stamped earlier than its predecessor takes its predecessor's time.
//
// Readers never wait for the writer. The writer collects appended ranges and, on Publish(),
// freezes them into an immutable Run. Runs are merged
// as in a log-structured tree (sizes decrease geometrically, so there are O(log n) of them and
// each range is merged O(log n) times). A published RangeSetSnapshot is a list of runs plus the
// store; it stays valid and unchanged while the writer goes on.
//
// Each run holds two sorted structures over its ranges:
//  - the flattened map (latest definition wins) as sorted piece starts, for lookups at a time at
//    or after the run's last range: one binary search;
//  - an implicit interval tree (the run's ranges sorted by start, with subtree maximum ends) for
//    lookups at a time inside the run: it yields every range of the run covering A; the answer
//    is the one appended last among those not later than T.
// Memory per range: 28 (Range) + 8 (tree) + 12 (flattened map, one piece per live range) = 48
// bytes, in exactly sized arrays.
#ifndef JITSYM_DAEMON_INDEX_RANGE_SET_H_
#define JITSYM_DAEMON_INDEX_RANGE_SET_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "daemon/index/huge_page_allocator.h"

namespace jitsym::index {

inline constexpr uint32_t kTombstone = std::numeric_limits<uint32_t>::max();
inline constexpr uint32_t kNoRange = std::numeric_limits<uint32_t>::max();

#pragma pack(push, 4)
struct Range {
  uint64_t start = 0;
  uint64_t time = 0;        // valid from (CLOCK_MONOTONIC ns), non-decreasing in append order
  uint32_t size : 31 = 0;   // bytes; end = start + size
  uint32_t marked : 1 = 0;  // a bit for the owner (CodeMap: has a line table)
  uint32_t payload = 0;     // the owner's data (a name handle), or kTombstone
  uint32_t seq = 0;         // append index

  uint64_t end() const { return start + size; }
};
#pragma pack(pop)
static_assert(sizeof(Range) == 28);

// A part of the address space and the range that answers for it (RangeSetSnapshot::Latest).
struct LatestPiece {
  uint64_t start = 0;
  uint64_t end = 0;
  const Range* range = nullptr;
};

// A lookup's answer: the range and its append index (kNoRange and null when nothing covers).
struct Found {
  uint32_t seq = kNoRange;
  const Range* range = nullptr;
  explicit operator bool() const { return range != nullptr; }
};

// One definition of an address over time (RangeSetSnapshot::History): the range answers
// lookups of the address at every time in [from, to) (to: nullopt = still). from == to when a
// later definition took over at once (it never answered).
struct Validity {
  const Range* range = nullptr;  // a tombstone says: nothing is there in [from, to)
  uint64_t from = 0;
  std::optional<uint64_t> to;
};

// The validity intervals of the ranges covering one address, given in append order (seq
// increasing). A lookup at T answers the range appended last among those stamped at or before
// T, so range i answers exactly in [time_i, min over later ranges j of time_j). Pure; the
// reference the history query is tested against.
std::vector<Validity> ValidityIntervals(const std::vector<const Range*>& covering);

// Ranges appended together, frozen: owns them, sorted by start.
class Run {
 public:
  // Builds a run over `ranges`, whose append indexes are first, first + 1, ...
  static std::shared_ptr<const Run> Build(const LargeVector<Range>& ranges, uint32_t first);
  // Merges two adjacent runs (older holds the ranges appended just before newer's).
  static std::shared_ptr<const Run> Merge(const Run& older, const Run& newer);

  uint32_t first() const { return first_; }
  uint32_t last() const { return last_; }
  uint32_t size() const { return last_ - first_; }
  uint64_t min_time() const { return min_time_; }
  uint64_t max_time() const { return max_time_; }
  size_t memory_bytes() const;

  // The range covering addr as of the run's last range.
  Found FindLatest(uint64_t addr) const;
  // The range covering addr appended last among this run's ranges stamped at or before time.
  Found FindAt(uint64_t addr, uint64_t time) const;
  // The earliest range (not a tombstone) of this run covering addr stamped after `time`; null if
  // none. For explaining a miss, not for answering.
  const Range* FirstDefinedAfter(uint64_t addr, uint64_t time) const;
  // FindLatest for every addrs[i] whose out[i] is still empty, overlapping the memory accesses
  // of up to kBatchGroup lookups.
  void FindLatestBatch(const uint64_t* addrs, size_t n, Found* out) const;
  static constexpr size_t kBatchGroup = 16;

  // The flattened map as of the run's last range: disjoint pieces sorted by start (tombstones
  // included).
  std::vector<LatestPiece> LatestPieces() const;
  // The same, slot by slot, for a cursor that must not copy it (LatestCursor): slot i holds a
  // piece (true, *piece set) or a gap (false).
  size_t slots() const { return keys_.size(); }
  bool Slot(size_t i, LatestPiece* piece) const;
  // The first slot whose piece ends after addr: the one covering addr, or a later one.
  size_t FirstSlotEndingAfter(uint64_t addr) const;

  // Every range of this run covering addr (tombstones too), in no particular order.
  void Covering(uint64_t addr, std::vector<const Range*>* out) const;

  // Checks the structure's invariants; for tests.
  bool CheckInvariants() const;

 private:
  struct Interval {
    uint64_t start;
    uint64_t end;
    uint32_t pos;  // position in ranges_
  };
  static constexpr uint32_t kGap = kNoRange;
  static constexpr int kFenceStride = 16;
  size_t LocatePiece(uint64_t addr) const;  // index into keys_, or SIZE_MAX
  template <typename F>
  void VisitCovering(uint64_t addr, F&& consider) const;

  Found At(uint32_t pos) const { return {ranges_[pos].seq, &ranges_[pos]}; }
  void SetPieces(const LargeVector<Interval>& intervals);
  LargeVector<Interval> Pieces() const;
  void BuildTree();
  uint64_t SubtreeMax(size_t x, int level) const;

  uint32_t first_ = 0;
  uint32_t last_ = 0;
  uint64_t min_time_ = 0;
  uint64_t max_time_ = 0;
  // The ranges sorted by (start, seq), and for the implicit interval tree over that array the
  // largest end in each node's subtree.
  HugeVector<Range> ranges_;
  HugeVector<uint64_t> tree_max_;
  int tree_levels_ = 0;
  // Flattened map: piece i covers [keys_[i].key, min(end of ranges_[keys_[i].pos],
  // keys_[i+1].key)). Key and position share a cache line.
#pragma pack(push, 4)
  struct Piece {
    uint64_t key;
    uint32_t pos;
  };
#pragma pack(pop)
  static_assert(sizeof(Piece) == 12);
  HugeVector<Piece> keys_;
  // Two-level fence over the piece keys: fence_[j] = keys_[j * kFenceStride].key and
  // top_[j] = fence_[j * kFenceStride]; top_ stays in L1/L2 for millions of pieces.
  std::vector<uint64_t> fence_;
  std::vector<uint64_t> top_;

 public:
};

class RangeSetSnapshot {
 public:
  RangeSetSnapshot() = default;
  RangeSetSnapshot(std::vector<std::shared_ptr<const Run>> runs, uint32_t size, uint64_t first_time,
                   uint64_t last_time);

  // The range answering addr at `time` (nullopt: now, i.e. after every range). A tombstone
  // answer is returned as such; the caller treats it as unknown.
  Found Find(uint64_t addr, std::optional<uint64_t> time) const;
  // The earliest definition (not a tombstone) covering addr stamped after `time`, whichever
  // later ones hide it; null if none. Searches every range covering addr: for explaining a miss
  // ("before_code"), not for answering.
  const Range* FirstDefinedAfter(uint64_t addr, uint64_t time) const;
  // Find for every addrs[i] whose out[i] is still empty (non-empty entries are left alone).
  void FindBatch(const uint64_t* addrs, size_t n, std::optional<uint64_t> time, Found* out) const;
  // What a lookup without a time answers, for every address at once: the disjoint pieces of the
  // address space and the range answering each, sorted by start. Tombstones are left out. A
  // range partly covered by later ones appears as the pieces still its own. A copy of what a
  // LatestCursor walks (latest_cursor.h), which answers that must not hold it use instead.
  std::vector<LatestPiece> Latest() const;
  // Every range that ever covered addr (tombstones included), in append order, with the times
  // it answered lookups of addr (ValidityIntervals): `jitsym explain`'s list of definitions.
  // Costs one interval-tree walk per run.
  std::vector<Validity> History(uint64_t addr) const;
  uint32_t size() const { return size_; }
  size_t runs() const { return runs_.size(); }
  std::optional<uint64_t> first_time() const;
  std::optional<uint64_t> last_time() const;

 private:
  friend class LatestCursor;                      // walks runs_
  std::vector<std::shared_ptr<const Run>> runs_;  // oldest first
  uint32_t size_ = 0;
  uint64_t first_time_ = 0;
  uint64_t last_time_ = 0;
};

class RangeSet {
 public:
  // Appends a range; returns its index, or kNoRange if it is empty or wraps the address space.
  // The time is raised to the previous range's time if it is earlier.
  // Sizes are capped at 2 GiB - 1.
  uint32_t Add(uint64_t start, uint64_t size, uint64_t time, uint32_t payload, bool marked = false);
  // Appends a range valid from `time` even if that is earlier than its predecessors' times. The
  // answer for (A, T) stays "the range appended last among those valid at T that cover A"; use
  // it for a range that covers nothing defined before it (so no earlier answer changes), e.g. a
  // perf map line for fresh addresses that may have been valid long before it was seen.
  uint32_t AddBackdated(uint64_t start, uint64_t size, uint64_t time, uint32_t payload,
                        bool marked = false);
  // A hint: about this many ranges are coming before the next Publish (the buffer collecting
  // them is sized for it rather than grown by doubling, copying as it goes). Hints come from
  // file sizes, which a sparse file makes anything: capped at kMaxReserved (2^26 ranges, the
  // default limit-file-ranges: 1.8 GB of address space, untouched until filled).
  static constexpr size_t kMaxReserved = size_t{1} << 26;
  void Reserve(size_t ranges) {
    last_batch_ = std::max(last_batch_, std::min(ranges, kMaxReserved));
  }
  // Publishes what was appended since the last call.
  std::shared_ptr<const RangeSetSnapshot> Publish();
  // Merges every run into one (when the source is idle): fastest lookups.
  std::shared_ptr<const RangeSetSnapshot> CompactAll();

  uint32_t size() const { return next_; }
  uint64_t last_time() const { return last_time_; }
  uint64_t out_of_order() const { return out_of_order_; }
  size_t memory_bytes() const;
  size_t run_count() const { return runs_.size(); }
  const std::vector<std::shared_ptr<const Run>>& runs_for_testing() const { return runs_; }

 private:
  uint32_t Append(uint64_t start, uint64_t size, uint64_t time, uint32_t payload, bool marked);
  std::shared_ptr<const RangeSetSnapshot> MakeSnapshot();
  static constexpr size_t kMaxRuns = 8;  // a lookup searches every run

  LargeVector<Range> pending_;  // appended, not yet published
  size_t last_batch_ = 0;       // how many the last Publish() took: pending_'s next reservation
  std::vector<std::shared_ptr<const Run>> runs_;
  uint32_t next_ = 0;
  uint64_t first_time_ = 0;
  uint64_t last_time_ = 0;
  uint64_t out_of_order_ = 0;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_RANGE_SET_H_
