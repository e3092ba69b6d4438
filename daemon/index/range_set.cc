#include "daemon/index/range_set.h"

#include <algorithm>
#include <bit>

#include "daemon/index/latest_cursor.h"

namespace jitsym::index {
namespace {

constexpr uint64_t kMaxAddr = std::numeric_limits<uint64_t>::max();

// Number of elements <= key in a sorted array (std::upper_bound's index), without branches on
// the data: the loop's trip count depends only on the size.
size_t CountNotAbove(const uint64_t* a, size_t n, uint64_t key) {
  const uint64_t* base = a;
  size_t len = n;
  while (len > 1) {
    const size_t half = len / 2;
    base = (base[half - 1] <= key) ? base + half : base;
    len -= half;
  }
  return static_cast<size_t>(base - a) + (n > 0 && *base <= key ? 1 : 0);
}

template <typename V>
size_t Bytes(const V& v) {
  return v.capacity() * sizeof(typename V::value_type);
}

}  // namespace

// ---- Run: construction ---------------------------------------------------------------------

std::shared_ptr<const Run> Run::Build(const LargeVector<Range>& ranges, uint32_t first) {
  auto run = std::make_shared<Run>();
  const auto n = static_cast<uint32_t>(ranges.size());
  run->first_ = first;
  run->last_ = first + n;
  // Times are non-decreasing unless a range was backdated (RangeSet::AddBackdated): their
  // bounds are taken in the first pass below.
  uint64_t min_time = ranges.front().time, max_time = min_time;

  // Sort by (start, append order). Perf maps mostly ascend, with some lines reusing earlier
  // addresses: the ranges starting below the running maximum ("late") are sorted on their own
  // and merged back into the others, which are in order already (nothing to do when none is
  // late). Only the late ones are copied out, as keys: comparisons stay in cache, and the merge
  // reads the others in place, picking them out with the same running maximum.
  struct Key {
    uint64_t start;
    uint32_t index;
    bool operator<(const Key& o) const {
      return start != o.start ? start < o.start : index < o.index;
    }
  };
  // The append order of each position (index into `ranges`), for the overlay sweep. Range::seq
  // holds the same, but without this array in its place the C heap's layout shifted so that
  // index_bench's jitdump ingest gave the heap back to the kernel and faulted it in again at
  // every iteration (a tenth slower).
  LargeVector<uint32_t> order;
  order.reserve(n);
  {
    // The large temporaries here and in Merge come from the index's allocator, which reuses
    // freed blocks instead of faulting in fresh zeroed pages each time.
    LargeVector<Key> late;
    uint64_t high = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t s = ranges[i].start;
      const uint64_t time = ranges[i].time;  // Range is packed: no reference to its members
      min_time = std::min(min_time, time);
      max_time = std::max(max_time, time);
      if (s >= high) {
        high = s;
      } else {
        late.push_back({s, i});
      }
    }
    run->min_time_ = min_time;
    run->max_time_ = max_time;
    if (late.empty()) {
      run->ranges_.assign(ranges.begin(), ranges.end());
      for (uint32_t i = 0; i < n; ++i) order.push_back(i);
    } else {
      std::sort(late.begin(), late.end());
      run->ranges_.reserve(n);
      size_t j = 0;
      high = 0;
      for (uint32_t i = 0; i < n; ++i) {
        const uint64_t s = ranges[i].start;
        if (s < high) continue;  // late: comes from `late`
        high = s;
        for (; j < late.size() && (late[j].start < s || (late[j].start == s && late[j].index < i));
             ++j) {
          run->ranges_.push_back(ranges[late[j].index]);
          order.push_back(late[j].index);
        }
        run->ranges_.push_back(ranges[i]);
        order.push_back(i);
      }
      for (; j < late.size(); ++j) {
        run->ranges_.push_back(ranges[late[j].index]);
        order.push_back(late[j].index);
      }
    }
  }

  // Overlay the ranges in append order (each one hides whatever it covers) by sweeping the
  // address space: at each point the owner is the covering range appended last, the top of a
  // max-heap on append order (ranges that ended are dropped lazily when they reach the top).
  // Pieces change owner only at a start or at the owner's end. Flat arrays, no allocation per
  // range: this runs for every publication.
  struct Active {
    uint32_t index;  // append order
    uint32_t pos;    // position in ranges_
    uint64_t end;
    bool operator<(const Active& o) const { return index < o.index; }
  };
  const auto& sorted = run->ranges_;  // read in order: no cache miss per range
  std::vector<Active> heap;
  LargeVector<Interval> pieces;
  pieces.reserve(n);
  uint32_t p = 0;
  uint64_t x = 0;
  for (;;) {
    // Drop ended ranges before pushing the ones starting here: a range ending where its
    // successor starts (contiguous code) would otherwise stay buried under the successor, which
    // has a later append index, and the heap would grow with the whole run.
    while (!heap.empty() && heap.front().end <= x) {
      std::pop_heap(heap.begin(), heap.end());
      heap.pop_back();
    }
    if (heap.empty()) {
      if (p == n) break;
      x = sorted[p].start;
      // A range overlapping neither the next one nor (the heap being empty) any earlier one is
      // a piece by itself: the common case, without the heap.
      const uint64_t end = sorted[p].end();
      if (p + 1 == n || sorted[p + 1].start >= end) {
        pieces.push_back({x, end, p});
        x = end;
        ++p;
        continue;
      }
    }
    while (p < n && sorted[p].start <= x) {
      heap.push_back({order[p], p, sorted[p].end()});
      std::push_heap(heap.begin(), heap.end());
      ++p;
    }
    // Neither the top before the pushes nor a range starting at x has ended at x.
    const Active& top = heap.front();
    const uint64_t next_start = p < n ? sorted[p].start : top.end;  // a copy: Range is packed
    const uint64_t next = std::min(next_start, top.end);
    const uint32_t pos = top.pos;
    if (!pieces.empty() && pieces.back().pos == pos && pieces.back().end == x) {
      pieces.back().end = next;
    } else {
      pieces.push_back({x, next, pos});
    }
    x = next;
  }
  run->SetPieces(pieces);
  LargeVector<Interval>().swap(pieces);  // freed first: the tree can take its block
  run->BuildTree();
  return run;
}

std::shared_ptr<const Run> Run::Merge(const Run& older, const Run& newer) {
  auto run = std::make_shared<Run>();
  run->first_ = older.first_;
  run->last_ = newer.last_;
  run->min_time_ = std::min(older.min_time_, newer.min_time_);
  run->max_time_ = std::max(older.max_time_, newer.max_time_);

  // Merge the two start-sorted arrays (older first on equal starts: it was appended first).
  const size_t na = older.ranges_.size(), nb = newer.ranges_.size();
  run->ranges_.reserve(na + nb);
  LargeVector<uint32_t> new_pos_a(na), new_pos_b(nb);
  size_t a = 0, b = 0;
  for (size_t k = 0; k < na + nb; ++k) {
    const bool take_a = b == nb || (a < na && older.ranges_[a].start <= newer.ranges_[b].start);
    if (take_a) {
      run->ranges_.push_back(older.ranges_[a]);
      new_pos_a[a++] = static_cast<uint32_t>(k);
    } else {
      run->ranges_.push_back(newer.ranges_[b]);
      new_pos_b[b++] = static_cast<uint32_t>(k);
    }
  }

  // Overlay newer's pieces on older's.
  LargeVector<Interval> old_pieces = older.Pieces();
  LargeVector<Interval> new_pieces = newer.Pieces();
  for (Interval& iv : old_pieces) iv.pos = new_pos_a[iv.pos];
  for (Interval& iv : new_pieces) iv.pos = new_pos_b[iv.pos];
  LargeVector<Interval> out;
  out.reserve(old_pieces.size() + new_pieces.size());
  size_t j = 0;
  for (const Interval& n : new_pieces) {
    while (j < old_pieces.size() && old_pieces[j].end <= n.start) out.push_back(old_pieces[j++]);
    if (j < old_pieces.size() && old_pieces[j].start < n.start) {
      out.push_back({old_pieces[j].start, n.start, old_pieces[j].pos});
    }
    out.push_back(n);
    while (j < old_pieces.size() && old_pieces[j].end <= n.end) ++j;
    if (j < old_pieces.size() && old_pieces[j].start < n.end) old_pieces[j].start = n.end;
  }
  while (j < old_pieces.size()) out.push_back(old_pieces[j++]);
  run->SetPieces(out);
  run->BuildTree();
  return run;
}

LargeVector<Run::Interval> Run::Pieces() const {
  LargeVector<Interval> out;
  out.reserve(keys_.size());
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i].pos == kGap) continue;
    uint64_t end = ranges_[keys_[i].pos].end();
    if (i + 1 < keys_.size()) {
      const uint64_t next = keys_[i + 1].key;  // a copy: Piece is packed
      end = std::min(end, next);
    }
    out.push_back({keys_[i].key, end, keys_[i].pos});
  }
  return out;
}

void Run::SetPieces(const LargeVector<Interval>& intervals) {
  // A piece ends where its range ends or where the next piece starts; anything else needs an
  // explicit gap marker. Counted first so that keys_ is allocated once, at its exact size.
  auto needs_gap = [&](size_t j) {
    const Interval& iv = intervals[j];
    const bool next_adjacent = j + 1 < intervals.size() && intervals[j + 1].start == iv.end;
    return !next_adjacent && iv.end < ranges_[iv.pos].end();
  };
  size_t count = 0;
  for (size_t j = 0; j < intervals.size(); ++j) {
    if (intervals[j].start < intervals[j].end) count += needs_gap(j) ? 2 : 1;
  }
  keys_.clear();
  keys_.shrink_to_fit();
  keys_.reserve(count);
  for (size_t j = 0; j < intervals.size(); ++j) {
    const Interval& iv = intervals[j];
    if (iv.start >= iv.end) continue;
    keys_.push_back({iv.start, iv.pos});
    if (needs_gap(j)) keys_.push_back({iv.end, kGap});
  }
  fence_.clear();
  for (size_t i = 0; i < keys_.size(); i += kFenceStride) fence_.push_back(keys_[i].key);
  fence_.shrink_to_fit();
  top_.clear();
  for (size_t i = 0; i < fence_.size(); i += kFenceStride) top_.push_back(fence_[i]);
  top_.shrink_to_fit();
}

// Implicit interval tree over the start-sorted array (the layout cgranges uses): node x is at
// level k when its k lowest bits are ones and bit k is zero; its children are x -/+ 2^(k-1); a
// subtree at level k spans 2^(k+1) - 1 slots, some of them possibly beyond the array.
void Run::BuildTree() {
  const size_t n = ranges_.size();
  tree_max_.assign(n, 0);
  tree_levels_ = n == 0 ? 0 : std::bit_width(n) - 1;
  for (size_t x = 0; x < n; x += 2) tree_max_[x] = ranges_[x].end();
  for (int k = 1; k <= tree_levels_; ++k) {
    const size_t half = size_t{1} << (k - 1);
    for (size_t x = (size_t{1} << k) - 1; x < n; x += size_t{1} << (k + 1)) {
      uint64_t m = ranges_[x].end();
      m = std::max(m, SubtreeMax(x - half, k - 1));
      m = std::max(m, SubtreeMax(x + half, k - 1));
      tree_max_[x] = m;
    }
  }
  ranges_.shrink_to_fit();
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
  return sizeof(Run) + Bytes(ranges_) + Bytes(tree_max_) + Bytes(keys_) + Bytes(fence_) +
         Bytes(top_);
}

// ---- Run: lookups --------------------------------------------------------------------------

size_t Run::LocatePiece(uint64_t addr) const {
  // top_ (binary search, cache resident) -> 16 fence keys -> 16 pieces: the last two are one or
  // two cache lines each.
  const size_t t = CountNotAbove(top_.data(), top_.size(), addr);
  if (t == 0) return SIZE_MAX;
  size_t f = (t - 1) * kFenceStride;
  const size_t f_end = std::min(f + kFenceStride, fence_.size());
  while (f + 1 < f_end && fence_[f + 1] <= addr) ++f;
  size_t i = f * kFenceStride;
  const size_t i_end = std::min(i + kFenceStride, keys_.size());
  while (i + 1 < i_end && keys_[i + 1].key <= addr) ++i;
  return i;
}

Found Run::FindLatest(uint64_t addr) const {
  const size_t i = LocatePiece(addr);
  if (i == SIZE_MAX) return {};
  const uint32_t pos = keys_[i].pos;
  if (pos == kGap || addr >= ranges_[pos].end()) return {};
  return At(pos);
}

void Run::FindLatestBatch(const uint64_t* addrs, size_t n, Found* out) const {
  // Four passes over a group, each ending with a prefetch for the next: top level -> fence
  // block -> piece block -> range. The cache misses of a group overlap instead of queueing.
  size_t at[kBatchGroup];
  for (size_t g = 0; g < n; g += kBatchGroup) {
    const size_t m = std::min(kBatchGroup, n - g);
    for (size_t j = 0; j < m; ++j) {
      at[j] = SIZE_MAX;
      if (out[g + j]) continue;
      const size_t t = CountNotAbove(top_.data(), top_.size(), addrs[g + j]);
      if (t == 0) continue;
      at[j] = (t - 1) * kFenceStride;
      __builtin_prefetch(&fence_[at[j]]);
      __builtin_prefetch(reinterpret_cast<const char*>(&fence_[at[j]]) + 64);
    }
    for (size_t j = 0; j < m; ++j) {
      if (at[j] == SIZE_MAX) continue;
      const uint64_t addr = addrs[g + j];
      size_t f = at[j];
      const size_t f_end = std::min(f + kFenceStride, fence_.size());
      while (f + 1 < f_end && fence_[f + 1] <= addr) ++f;
      at[j] = f * kFenceStride;
      const char* block = reinterpret_cast<const char*>(&keys_[at[j]]);
      __builtin_prefetch(block);
      __builtin_prefetch(block + 64);
      __builtin_prefetch(block + 128);
    }
    for (size_t j = 0; j < m; ++j) {
      if (at[j] == SIZE_MAX) continue;
      const uint64_t addr = addrs[g + j];
      size_t i = at[j];
      const size_t i_end = std::min(i + kFenceStride, keys_.size());
      while (i + 1 < i_end && keys_[i + 1].key <= addr) ++i;
      at[j] = keys_[i].pos == kGap ? SIZE_MAX : keys_[i].pos;
      if (at[j] != SIZE_MAX) __builtin_prefetch(&ranges_[at[j]]);
    }
    for (size_t j = 0; j < m; ++j) {
      if (at[j] == SIZE_MAX) continue;
      if (addrs[g + j] < ranges_[at[j]].end()) out[g + j] = At(static_cast<uint32_t>(at[j]));
    }
  }
}

// Calls consider(i) for every range of the run that starts at or before addr and may cover it
// (the caller checks addr < end): a walk of the implicit interval tree.
template <typename F>
void Run::VisitCovering(uint64_t addr, F&& consider) const {
  const size_t n = ranges_.size();
  if (n == 0) return;
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
      for (size_t i = lo; i < hi && ranges_[i].start <= addr; ++i) consider(i);
      continue;
    }
    if (SubtreeMax(f.x, f.k) <= addr) continue;
    const size_t half = size_t{1} << (f.k - 1);
    if (f.x < n && ranges_[f.x].start <= addr) {
      consider(f.x);
      stack[top++] = {f.x + half, f.k - 1};
    }
    stack[top++] = {f.x - half, f.k - 1};
  }
}

Found Run::FindAt(uint64_t addr, uint64_t time) const {
  // Times do not decrease in append order, so the latest appended among the candidates stamped
  // at or before `time` is the answer.
  uint32_t best = kNoRange;
  VisitCovering(addr, [&](size_t i) {
    const Range& r = ranges_[i];
    if (r.time <= time && addr < r.end() && (best == kNoRange || r.seq > ranges_[best].seq)) {
      best = static_cast<uint32_t>(i);
    }
  });
  if (best == kNoRange) return {};
  return At(best);
}

void Run::Covering(uint64_t addr, std::vector<const Range*>* out) const {
  // The walk of FindAt, keeping every candidate instead of the best one.
  VisitCovering(addr, [&](size_t i) {
    if (addr < ranges_[i].end()) out->push_back(&ranges_[i]);
  });
}

std::vector<Validity> ValidityIntervals(const std::vector<const Range*>& covering) {
  std::vector<Validity> out(covering.size());
  // Walking back from the newest, `later` is the earliest time of the ranges appended after.
  std::optional<uint64_t> later;
  for (size_t i = covering.size(); i-- > 0;) {
    const Range* r = covering[i];
    const uint64_t time = r->time;  // a copy: Range is packed, std::min/max take references
    Validity& v = out[i];
    v.range = r;
    v.from = time;
    if (later) v.to = std::max(*later, time);  // never before it starts: empty, not negative
    later = later ? std::min(*later, time) : time;
  }
  return out;
}

const Range* Run::FirstDefinedAfter(uint64_t addr, uint64_t time) const {
  const Range* best = nullptr;
  VisitCovering(addr, [&](size_t i) {
    const Range& r = ranges_[i];
    if (r.time > time && addr < r.end() && r.payload != kTombstone &&
        (best == nullptr || r.time < best->time || (r.time == best->time && r.seq < best->seq))) {
      best = &r;
    }
  });
  return best;
}

bool Run::CheckInvariants() const {
  for (size_t i = 1; i < keys_.size(); ++i) {
    if (keys_[i - 1].key >= keys_[i].key) return false;
  }
  for (const Piece& p : keys_) {
    if (p.pos == kGap) continue;
    if (p.pos >= ranges_.size()) return false;
    const Range& r = ranges_[p.pos];
    if (p.key < r.start || p.key >= r.end()) return false;
  }
  if (ranges_.size() != size()) return false;
  for (size_t i = 1; i < ranges_.size(); ++i) {
    if (ranges_[i - 1].start > ranges_[i].start) return false;
  }
  for (const Range& r : ranges_) {
    if (r.seq < first_ || r.seq >= last_) return false;
  }
  return true;
}

// ---- snapshots -----------------------------------------------------------------------------

RangeSetSnapshot::RangeSetSnapshot(std::vector<std::shared_ptr<const Run>> runs, uint32_t size,
                                   uint64_t first_time, uint64_t last_time)
    : runs_(std::move(runs)), size_(size), first_time_(first_time), last_time_(last_time) {}

Found RangeSetSnapshot::Find(uint64_t addr, std::optional<uint64_t> time) const {
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    const Run& run = **it;
    Found f;
    if (!time || *time >= run.max_time()) {
      f = run.FindLatest(addr);
    } else if (*time < run.min_time()) {
      continue;
    } else {
      f = run.FindAt(addr, *time);
    }
    if (f) return f;
  }
  return {};
}

const Range* RangeSetSnapshot::FirstDefinedAfter(uint64_t addr, uint64_t time) const {
  const Range* best = nullptr;
  for (const auto& run : runs_) {
    if (run->max_time() <= time) continue;
    const Range* r = run->FirstDefinedAfter(addr, time);
    if (r != nullptr && (best == nullptr || r->time < best->time)) best = r;
  }
  return best;
}

void RangeSetSnapshot::FindBatch(const uint64_t* addrs, size_t n, std::optional<uint64_t> time,
                                 Found* out) const {
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    const Run& run = **it;
    if (!time || *time >= run.max_time()) {
      run.FindLatestBatch(addrs, n, out);
    } else if (*time >= run.min_time()) {
      for (size_t i = 0; i < n; ++i) {
        if (!out[i]) out[i] = run.FindAt(addrs[i], *time);
      }
    }
  }
}

std::vector<LatestPiece> Run::LatestPieces() const {
  std::vector<LatestPiece> out;
  for (const Interval& iv : Pieces()) out.push_back({iv.start, iv.end, &ranges_[iv.pos]});
  return out;
}

bool Run::Slot(size_t i, LatestPiece* piece) const {
  const uint32_t pos = keys_[i].pos;
  if (pos == kGap) return false;
  uint64_t end = ranges_[pos].end();
  if (i + 1 < keys_.size()) {
    const uint64_t next = keys_[i + 1].key;  // a copy: Piece is packed
    end = std::min(end, next);
  }
  *piece = {keys_[i].key, end, &ranges_[pos]};
  return true;
}

size_t Run::FirstSlotEndingAfter(uint64_t addr) const {
  const size_t i = LocatePiece(addr);
  if (i == SIZE_MAX) return 0;
  LatestPiece piece;
  return Slot(i, &piece) && addr < piece.end ? i : i + 1;
}

std::vector<LatestPiece> RangeSetSnapshot::Latest() const {
  std::vector<LatestPiece> out;
  for (LatestCursor cursor(*this); !cursor.done(); cursor.Next()) out.push_back(cursor.piece());
  return out;
}

std::vector<Validity> RangeSetSnapshot::History(uint64_t addr) const {
  std::vector<const Range*> covering;
  for (const auto& run : runs_) run->Covering(addr, &covering);
  std::sort(covering.begin(), covering.end(),
            [](const Range* a, const Range* b) { return a->seq < b->seq; });
  return ValidityIntervals(covering);
}

std::optional<uint64_t> RangeSetSnapshot::first_time() const {
  if (size_ == 0) return std::nullopt;
  return first_time_;
}
std::optional<uint64_t> RangeSetSnapshot::last_time() const {
  if (size_ == 0) return std::nullopt;
  return last_time_;
}

// ---- writer --------------------------------------------------------------------------------

uint32_t RangeSet::Add(uint64_t start, uint64_t size, uint64_t time, uint32_t payload,
                       bool marked) {
  if (time < last_time_) {
    ++out_of_order_;
    time = last_time_;
  }
  return Append(start, size, time, payload, marked);
}

uint32_t RangeSet::AddBackdated(uint64_t start, uint64_t size, uint64_t time, uint32_t payload,
                                bool marked) {
  return Append(start, size, time, payload, marked);
}

uint32_t RangeSet::Append(uint64_t start, uint64_t size, uint64_t time, uint32_t payload,
                          bool marked) {
  if (size == 0) return kNoRange;
  size = std::min<uint64_t>(size, (uint64_t{1} << 31) - 1);
  if (start > kMaxAddr - size) return kNoRange;
  if (next_ >= std::numeric_limits<uint32_t>::max() - 1) return kNoRange;
  first_time_ = next_ == 0 ? time : std::min(first_time_, time);
  last_time_ = std::max(last_time_, time);
  Range r;
  r.start = start;
  r.time = time;
  r.size = static_cast<uint32_t>(size);
  r.marked = marked ? 1 : 0;
  r.payload = payload;
  r.seq = next_;
  // Sized like the last batch (a file is read in like-sized rounds) rather than grown by
  // doubling: no copies, and each page is faulted in once.
  if (pending_.capacity() == 0) pending_.reserve(last_batch_);
  pending_.push_back(r);
  return next_++;
}

std::shared_ptr<const RangeSetSnapshot> RangeSet::Publish() {
  if (!pending_.empty()) {
    runs_.push_back(Run::Build(pending_, next_ - static_cast<uint32_t>(pending_.size())));
    last_batch_ = pending_.size();
    pending_.clear();
    if (pending_.capacity() > 4096) pending_.shrink_to_fit();
    // Merge while the newest run is at least as large as the one before it (a binary counter
    // over like-sized batches: O(log n) runs, each range merged O(log n) times), or when there
    // are too many runs for lookups. Merging only when sizes are equal rather than within a
    // factor of two halves the merge work of a big file ingested in rounds; what is left is
    // done once the source goes idle (CompactAll).
    while (runs_.size() >= 2 &&
           (runs_[runs_.size() - 2]->size() <= runs_.back()->size() || runs_.size() > kMaxRuns)) {
      auto merged = Run::Merge(*runs_[runs_.size() - 2], *runs_.back());
      runs_.pop_back();
      runs_.back() = std::move(merged);
    }
  }
  return MakeSnapshot();
}

std::shared_ptr<const RangeSetSnapshot> RangeSet::CompactAll() {
  Publish();
  while (runs_.size() >= 2) {
    auto merged = Run::Merge(*runs_[runs_.size() - 2], *runs_.back());
    runs_.pop_back();
    runs_.back() = std::move(merged);
  }
  return MakeSnapshot();
}

std::shared_ptr<const RangeSetSnapshot> RangeSet::MakeSnapshot() {
  const uint32_t published = next_ - static_cast<uint32_t>(pending_.size());
  return std::make_shared<const RangeSetSnapshot>(runs_, published, first_time_, last_time_);
}

size_t RangeSet::memory_bytes() const {
  size_t total = Bytes(pending_);
  for (const auto& run : runs_) total += run->memory_bytes();
  return total;
}

}  // namespace jitsym::index
