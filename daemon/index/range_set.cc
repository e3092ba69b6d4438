#include "daemon/index/range_set.h"

#include <algorithm>
#include <bit>
#include <map>

namespace jitsym::index {
namespace {

constexpr uint64_t kMaxAddr = std::numeric_limits<uint64_t>::max();

template <typename V>
size_t Bytes(const V& v) {
  return v.capacity() * sizeof(typename V::value_type);
}

}  // namespace

// ---- Run: construction ---------------------------------------------------------------------

std::shared_ptr<const Run> Run::Build(const RangeStore& store, uint32_t first, uint32_t last) {
  auto run = std::make_shared<Run>();
  run->first_ = first;
  run->last_ = last;
  run->min_time_ = store[first].time;
  run->max_time_ = store[last - 1].time;

  // Overlay the ranges in append order: each one hides whatever it covers.
  std::map<uint64_t, Interval> live;  // keyed by start; disjoint
  for (uint32_t i = first; i < last; ++i) {
    const Range& r = store[i];
    const uint64_t s = r.start, e = r.end();
    auto it = live.lower_bound(s);
    if (it != live.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > s) {
        if (prev->second.end > e)
          live.emplace(e, Interval{e, prev->second.end, prev->second.index});
        prev->second.end = s;
      }
    }
    while (it != live.end() && it->first < e) {
      if (it->second.end > e) {
        Interval rest{e, it->second.end, it->second.index};
        live.erase(it);
        live.emplace(e, rest);
        break;
      }
      it = live.erase(it);
    }
    live.emplace(s, Interval{s, e, i});
  }
  std::vector<Interval> pieces;
  pieces.reserve(live.size());
  for (auto& [start, iv] : live) pieces.push_back(iv);
  run->SetPieces(store, pieces);

  run->tree_start_.reserve(last - first);
  std::vector<std::pair<uint64_t, uint32_t>> sorted;
  sorted.reserve(last - first);
  for (uint32_t i = first; i < last; ++i) sorted.emplace_back(store[i].start, i);
  std::sort(sorted.begin(), sorted.end());
  run->tree_start_.reserve(sorted.size());
  run->tree_index_.reserve(sorted.size());
  for (auto& [s, i] : sorted) {
    run->tree_start_.push_back(s);
    run->tree_index_.push_back(i);
  }
  run->BuildTree(store);
  return run;
}

std::shared_ptr<const Run> Run::Merge(const RangeStore& store, const Run& older, const Run& newer) {
  auto run = std::make_shared<Run>();
  run->first_ = older.first_;
  run->last_ = newer.last_;
  run->min_time_ = older.min_time_;
  run->max_time_ = newer.max_time_;

  // Overlay newer's pieces on older's.
  std::vector<Interval> old_pieces = older.Pieces(store);
  std::vector<Interval> new_pieces = newer.Pieces(store);
  std::vector<Interval> out;
  out.reserve(old_pieces.size() + new_pieces.size());
  size_t j = 0;
  for (const Interval& n : new_pieces) {
    while (j < old_pieces.size() && old_pieces[j].end <= n.start) out.push_back(old_pieces[j++]);
    if (j < old_pieces.size() && old_pieces[j].start < n.start) {
      out.push_back({old_pieces[j].start, n.start, old_pieces[j].index});
    }
    out.push_back(n);
    while (j < old_pieces.size() && old_pieces[j].end <= n.end) ++j;
    if (j < old_pieces.size() && old_pieces[j].start < n.end) old_pieces[j].start = n.end;
  }
  while (j < old_pieces.size()) out.push_back(old_pieces[j++]);
  run->SetPieces(store, out);

  // Merge the two sorted arrays of the interval trees.
  const size_t n = older.tree_start_.size() + newer.tree_start_.size();
  run->tree_start_.resize(n);
  run->tree_index_.resize(n);
  size_t a = 0, b = 0;
  for (size_t k = 0; k < n; ++k) {
    bool take_a = b == newer.tree_start_.size() ||
                  (a < older.tree_start_.size() && older.tree_start_[a] <= newer.tree_start_[b]);
    if (take_a) {
      run->tree_start_[k] = older.tree_start_[a];
      run->tree_index_[k] = older.tree_index_[a++];
    } else {
      run->tree_start_[k] = newer.tree_start_[b];
      run->tree_index_[k] = newer.tree_index_[b++];
    }
  }
  run->BuildTree(store);
  return run;
}

std::vector<Run::Interval> Run::Pieces(const RangeStore& store) const {
  std::vector<Interval> out;
  out.reserve(keys_.size());
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (pieces_[i] == kGap) continue;
    uint64_t end = store[pieces_[i]].end();
    if (i + 1 < keys_.size()) end = std::min(end, keys_[i + 1]);
    out.push_back({keys_[i], end, pieces_[i]});
  }
  return out;
}

void Run::SetPieces(const RangeStore& store, const std::vector<Interval>& intervals) {
  keys_.clear();
  pieces_.clear();
  keys_.reserve(intervals.size());
  pieces_.reserve(intervals.size());
  for (size_t j = 0; j < intervals.size(); ++j) {
    const Interval& iv = intervals[j];
    if (iv.start >= iv.end) continue;
    keys_.push_back(iv.start);
    pieces_.push_back(iv.index);
    // A piece ends where its range ends or where the next piece starts; anything else needs an
    // explicit gap marker.
    const bool next_adjacent = j + 1 < intervals.size() && intervals[j + 1].start == iv.end;
    if (!next_adjacent && iv.end < store[iv.index].end()) {
      keys_.push_back(iv.end);
      pieces_.push_back(kGap);
    }
  }
  keys_.shrink_to_fit();
  pieces_.shrink_to_fit();
  fence_.clear();
  for (size_t i = 0; i < keys_.size(); i += kFenceStride) fence_.push_back(keys_[i]);
  fence_.shrink_to_fit();
}

// Implicit interval tree over the sorted array (the layout of cgranges and of bloaty's
// RangeMap idea): node x is at level k when its k lowest bits are ones and bit k is zero; its
// children are x -/+ 2^(k-1); a subtree at level k spans 2^(k+1) - 1 slots, some beyond n.
void Run::BuildTree(const RangeStore& store) {
  const size_t n = tree_start_.size();
  tree_max_.assign(n, 0);
  tree_levels_ = n == 0 ? 0 : std::bit_width(n) - 1;
  for (size_t x = 0; x < n; x += 2) tree_max_[x] = store[tree_index_[x]].end();
  for (int k = 1; k <= tree_levels_; ++k) {
    const size_t half = size_t{1} << (k - 1);
    for (size_t x = (size_t{1} << k) - 1; x < n; x += size_t{1} << (k + 1)) {
      uint64_t m = store[tree_index_[x]].end();
      m = std::max(m, SubtreeMax(x - half, k - 1));
      m = std::max(m, SubtreeMax(x + half, k - 1));
      tree_max_[x] = m;
    }
  }
  tree_start_.shrink_to_fit();
  tree_index_.shrink_to_fit();
}

uint64_t Run::SubtreeMax(size_t x, int level) const {
  // Out-of-range nodes have only their left descendants possibly in range.
  while (x >= tree_max_.size()) {
    if (level == 0) return 0;
    x -= size_t{1} << (level - 1);
    --level;
  }
  return tree_max_[x];
}

size_t Run::memory_bytes() const {
  return sizeof(Run) + Bytes(keys_) + Bytes(pieces_) + Bytes(fence_) + Bytes(tree_start_) +
         Bytes(tree_index_) + Bytes(tree_max_);
}

// ---- Run: lookups --------------------------------------------------------------------------

uint32_t Run::FindLatest(const RangeStore& store, uint64_t addr) const {
  auto f = std::upper_bound(fence_.begin(), fence_.end(), addr);
  if (f == fence_.begin()) return kNoRange;
  const size_t lo = static_cast<size_t>(f - fence_.begin() - 1) * kFenceStride;
  const size_t hi = std::min(lo + kFenceStride, keys_.size());
  auto it = std::upper_bound(keys_.begin() + lo, keys_.begin() + hi, addr);
  const size_t i = static_cast<size_t>(it - keys_.begin()) - 1;
  const uint32_t index = pieces_[i];
  if (index == kGap || addr >= store[index].end()) return kNoRange;
  return index;
}

uint32_t Run::FindBefore(const RangeStore& store, uint64_t addr, uint32_t limit) const {
  const size_t n = tree_start_.size();
  if (n == 0) return kNoRange;
  uint32_t best = kNoRange;
  auto consider = [&](size_t i) {
    const uint32_t index = tree_index_[i];
    if (index < limit && addr < store[index].end() && (best == kNoRange || index > best)) {
      best = index;
    }
  };
  struct Frame {
    size_t x;
    int k;
  };
  Frame stack[72];
  int top = 0;
  stack[top++] = {(size_t{1} << tree_levels_) - 1, tree_levels_};
  while (top > 0) {
    const Frame f = stack[--top];
    const size_t span = (size_t{1} << f.k) - 1;
    const size_t lo = f.x - span;
    if (lo >= n) continue;
    if (f.k <= 2) {  // small subtree: scan it
      const size_t hi = std::min(f.x + span + 1, n);
      for (size_t i = lo; i < hi && tree_start_[i] <= addr; ++i) consider(i);
      continue;
    }
    if (SubtreeMax(f.x, f.k) <= addr) continue;
    const size_t half = size_t{1} << (f.k - 1);
    if (f.x < n && tree_start_[f.x] <= addr) {
      consider(f.x);
      stack[top++] = {f.x + half, f.k - 1};
    }
    stack[top++] = {f.x - half, f.k - 1};
  }
  return best;
}

bool Run::CheckInvariants(const RangeStore& store) const {
  if (keys_.size() != pieces_.size()) return false;
  for (size_t i = 1; i < keys_.size(); ++i) {
    if (keys_[i - 1] >= keys_[i]) return false;
  }
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (pieces_[i] == kGap) continue;
    if (pieces_[i] < first_ || pieces_[i] >= last_) return false;
    const Range& r = store[pieces_[i]];
    if (keys_[i] < r.start || keys_[i] >= r.end()) return false;
  }
  if (tree_start_.size() != size() || tree_index_.size() != size()) return false;
  for (size_t i = 1; i < tree_start_.size(); ++i) {
    if (tree_start_[i - 1] > tree_start_[i]) return false;
  }
  for (size_t i = 0; i < tree_start_.size(); ++i) {
    if (store[tree_index_[i]].start != tree_start_[i]) return false;
  }
  return true;
}

// ---- snapshots -----------------------------------------------------------------------------

RangeSetSnapshot::RangeSetSnapshot(std::shared_ptr<const RangeStore> store,
                                   std::vector<std::shared_ptr<const Run>> runs, uint32_t size)
    : store_(std::move(store)), runs_(std::move(runs)), size_(size) {}

uint32_t RangeSetSnapshot::Find(uint64_t addr, std::optional<uint64_t> time) const {
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    const Run& run = **it;
    uint32_t index;
    if (!time || *time >= run.max_time()) {
      index = run.FindLatest(*store_, addr);
    } else if (*time < run.min_time()) {
      continue;
    } else {
      // First range of the run stamped after `time`.
      uint32_t lo = run.first(), hi = run.last();
      while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if ((*store_)[mid].time <= *time) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      index = run.FindBefore(*store_, addr, lo);
    }
    if (index != kNoRange) return index;
  }
  return kNoRange;
}

std::optional<uint64_t> RangeSetSnapshot::first_time() const {
  if (size_ == 0) return std::nullopt;
  return (*store_)[0].time;
}
std::optional<uint64_t> RangeSetSnapshot::last_time() const {
  if (size_ == 0) return std::nullopt;
  return (*store_)[size_ - 1].time;
}

// ---- writer --------------------------------------------------------------------------------

RangeSet::RangeSet() : store_(std::make_shared<RangeStore>()) {}

uint32_t RangeSet::Add(uint64_t start, uint64_t size, uint64_t time, uint32_t payload) {
  if (size == 0) return kNoRange;
  size = std::min<uint64_t>(size, std::numeric_limits<uint32_t>::max());
  if (start > kMaxAddr - size) return kNoRange;
  if (store_->size() >= std::numeric_limits<uint32_t>::max() - 1) return kNoRange;
  if (time < last_time_) {
    ++out_of_order_;
    time = last_time_;
  }
  last_time_ = time;
  Range r;
  r.start = start;
  r.time = time;
  r.size = static_cast<uint32_t>(size);
  r.payload = payload;
  return static_cast<uint32_t>(store_->Append(r));
}

std::shared_ptr<const RangeSetSnapshot> RangeSet::Publish() {
  const auto size = static_cast<uint32_t>(store_->size());
  if (published_ < size) {
    runs_.push_back(Run::Build(*store_, published_, size));
    published_ = size;
    // Keep run sizes decreasing geometrically: merge while the newest run is at least half the
    // size of the one before it.
    while (runs_.size() >= 2 && runs_[runs_.size() - 2]->size() <= 2 * runs_.back()->size()) {
      auto merged = Run::Merge(*store_, *runs_[runs_.size() - 2], *runs_.back());
      runs_.pop_back();
      runs_.back() = std::move(merged);
    }
  }
  return MakeSnapshot();
}

std::shared_ptr<const RangeSetSnapshot> RangeSet::CompactAll() {
  Publish();
  while (runs_.size() >= 2) {
    auto merged = Run::Merge(*store_, *runs_[runs_.size() - 2], *runs_.back());
    runs_.pop_back();
    runs_.back() = std::move(merged);
  }
  return MakeSnapshot();
}

std::shared_ptr<const RangeSetSnapshot> RangeSet::MakeSnapshot() {
  return std::make_shared<const RangeSetSnapshot>(store_, runs_, published_);
}

size_t RangeSet::memory_bytes() const {
  size_t total = store_->memory_bytes();
  for (const auto& run : runs_) total += run->memory_bytes();
  return total;
}

}  // namespace jitsym::index
