// A time-versioned set of code ranges: the core of the index (docs/index.md).
//
// Ranges are appended in the order their source defined them; each has a start time. The answer
// for address A at time T is the range that, among those with time <= T, was appended last and
// covers A ("the latest definition covering the address at time t wins", as perf resolves
// overlapping maps). A tombstone is a range that covers addresses with nothing (code moved away or
// unloaded). Times are made non-decreasing on append, so "time <= T" selects a prefix of the
// append order; a record stamped earlier than its predecessor takes its predecessor's time.
//
// Readers never wait for the writer. The writer appends to an AppendStore and, on Publish(),
// freezes the ranges appended since the last publication into an immutable Run. Runs are merged
// as in a log-structured tree (sizes decrease geometrically, so there are O(log n) of them and
// each range is merged O(log n) times). A published RangeSetSnapshot is a list of runs plus the
// store; it stays valid and unchanged while the writer goes on.
//
// Each run holds two sorted structures over its ranges:
//  - the flattened map (latest definition wins) as sorted piece starts, for lookups at a time at
//    or after the run's last range: one binary search;
//  - an implicit interval tree (array sorted by start with subtree maximum ends) for lookups at
//    a time inside the run: it yields every range of the run covering A; the answer is the one
//    appended last among those not later than T.
#ifndef JITSYM_DAEMON_INDEX_RANGE_SET_H_
#define JITSYM_DAEMON_INDEX_RANGE_SET_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "daemon/index/append_store.h"

namespace jitsym::index {

inline constexpr uint32_t kTombstone = std::numeric_limits<uint32_t>::max();
inline constexpr uint32_t kNoRange = std::numeric_limits<uint32_t>::max();

struct Range {
  uint64_t start = 0;
  uint64_t time = 0;     // valid from (CLOCK_MONOTONIC ns), non-decreasing in append order
  uint32_t size = 0;     // bytes; end = start + size
  uint32_t payload = 0;  // the owner's data (a name id), or kTombstone

  uint64_t end() const { return start + size; }
};

using RangeStore = AppendStore<Range, 10>;

class Run {
 public:
  // Builds a run over ranges [first, last) of the store.
  static std::shared_ptr<const Run> Build(const RangeStore& store, uint32_t first, uint32_t last);
  // Merges two adjacent runs (older covers the ranges just before newer's).
  static std::shared_ptr<const Run> Merge(const RangeStore& store, const Run& older,
                                          const Run& newer);

  uint32_t first() const { return first_; }
  uint32_t last() const { return last_; }
  uint32_t size() const { return last_ - first_; }
  uint64_t min_time() const { return min_time_; }
  uint64_t max_time() const { return max_time_; }
  size_t pieces() const { return keys_.size(); }
  size_t memory_bytes() const;

  // The range covering addr as of the run's end, or kNoRange.
  uint32_t FindLatest(const RangeStore& store, uint64_t addr) const;
  // The range covering addr appended last among this run's ranges with index < limit.
  uint32_t FindBefore(const RangeStore& store, uint64_t addr, uint32_t limit) const;

  // Checks the structure's invariants; for tests.
  bool CheckInvariants(const RangeStore& store) const;

 private:
  struct Interval {
    uint64_t start;
    uint64_t end;
    uint32_t index;
  };
  static constexpr uint32_t kGap = kNoRange;
  static constexpr int kFenceStride = 64;

  void SetPieces(const RangeStore& store, const std::vector<Interval>& intervals);
  std::vector<Interval> Pieces(const RangeStore& store) const;
  void BuildTree(const RangeStore& store);
  uint64_t SubtreeMax(size_t x, int level) const;

  uint32_t first_ = 0;
  uint32_t last_ = 0;
  uint64_t min_time_ = 0;
  uint64_t max_time_ = 0;
  // Flattened map: piece i covers [keys_[i], min(end of range pieces_[i], keys_[i+1])).
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> pieces_;
  std::vector<uint64_t> fence_;  // keys_[j * kFenceStride]: a cache-resident first level
  // Interval tree: ranges sorted by (start, index); tree_max_[x] is the largest end in x's
  // subtree of the implicit tree over the sorted array.
  std::vector<uint64_t> tree_start_;
  std::vector<uint32_t> tree_index_;
  std::vector<uint64_t> tree_max_;
  int tree_levels_ = 0;
};

class RangeSetSnapshot {
 public:
  RangeSetSnapshot(std::shared_ptr<const RangeStore> store,
                   std::vector<std::shared_ptr<const Run>> runs, uint32_t size);
  RangeSetSnapshot() = default;

  // The index of the range answering addr at `time` (nullopt: now, i.e. after every range), or
  // kNoRange. A tombstone answer is returned as such; the caller treats it as unknown.
  uint32_t Find(uint64_t addr, std::optional<uint64_t> time) const;
  const Range& range(uint32_t i) const { return (*store_)[i]; }
  uint32_t size() const { return size_; }
  size_t runs() const { return runs_.size(); }
  std::optional<uint64_t> first_time() const;
  std::optional<uint64_t> last_time() const;

 private:
  std::shared_ptr<const RangeStore> store_;
  std::vector<std::shared_ptr<const Run>> runs_;  // oldest first
  uint32_t size_ = 0;
};

class RangeSet {
 public:
  RangeSet();

  // Appends a range; returns its index, or kNoRange if it is empty or wraps the address space.
  // The time is raised to the previous range's time if it is earlier.
  uint32_t Add(uint64_t start, uint64_t size, uint64_t time, uint32_t payload);
  // Publishes what was appended since the last call.
  std::shared_ptr<const RangeSetSnapshot> Publish();
  // Merges every run into one (when the source is idle): fastest lookups.
  std::shared_ptr<const RangeSetSnapshot> CompactAll();

  uint32_t size() const { return static_cast<uint32_t>(store_->size()); }
  uint32_t published() const { return published_; }
  uint64_t last_time() const { return last_time_; }
  uint64_t out_of_order() const { return out_of_order_; }
  const Range& range(uint32_t i) const { return (*store_)[i]; }
  size_t memory_bytes() const;
  size_t run_count() const { return runs_.size(); }
  const std::vector<std::shared_ptr<const Run>>& runs_for_testing() const { return runs_; }
  const RangeStore& store_for_testing() const { return *store_; }

 private:
  std::shared_ptr<const RangeSetSnapshot> MakeSnapshot();

  std::shared_ptr<RangeStore> store_;
  std::vector<std::shared_ptr<const Run>> runs_;
  uint32_t published_ = 0;
  uint64_t last_time_ = 0;
  uint64_t out_of_order_ = 0;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_RANGE_SET_H_
