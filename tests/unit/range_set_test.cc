#include "daemon/index/range_set.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <vector>

namespace jitsym::index {
namespace {

// The semantics, stated as directly as possible: the last-appended range with time <= t that
// covers addr; times are clamped to be non-decreasing in append order.
struct Oracle {
  struct R {
    uint64_t start, end, time;
    uint32_t payload;
  };
  std::vector<R> ranges;
  uint64_t last_time = 0;

  void Add(uint64_t start, uint64_t size, uint64_t time, uint32_t payload, bool backdated = false) {
    if (size == 0) return;
    if (!backdated) time = std::max(time, last_time);
    last_time = std::max(time, last_time);
    ranges.push_back({start, start + size, time, payload});
  }
  // Returns the index of the answering range among the first `count`, or -1.
  int Find(uint64_t addr, std::optional<uint64_t> time, size_t count) const {
    for (size_t i = count; i-- > 0;) {
      const R& r = ranges[i];
      if (time && r.time > *time) continue;
      if (r.start <= addr && addr < r.end) return static_cast<int>(i);
    }
    return -1;
  }
};

uint32_t Answer(const RangeSetSnapshot& snap, uint64_t addr, std::optional<uint64_t> time) {
  return snap.Find(addr, time).seq;
}

TEST(RangeSetTest, EmptyFindsNothing) {
  RangeSet set;
  auto snap = set.Publish();
  EXPECT_EQ(snap->Find(0, std::nullopt).seq, kNoRange);
  EXPECT_EQ(snap->Find(~0ull, 5).seq, kNoRange);
}

TEST(RangeSetTest, BoundariesAreHalfOpen) {
  RangeSet set;
  set.Add(0x1000, 0x100, 10, 7);
  auto snap = set.Publish();
  EXPECT_EQ(snap->Find(0xfff, std::nullopt).seq, kNoRange);   // AddrTooLow
  EXPECT_EQ(snap->Find(0x1000, std::nullopt).seq, 0u);        // first byte
  EXPECT_EQ(snap->Find(0x10ff, std::nullopt).seq, 0u);        // last byte
  EXPECT_EQ(snap->Find(0x1100, std::nullopt).seq, kNoRange);  // AddrTooHigh
  EXPECT_EQ(snap->Find(0x1000, 9).seq, kNoRange);             // before it was loaded
  EXPECT_EQ(snap->Find(0x1000, 10).seq, 0u);                  // valid from its own time
}

TEST(RangeSetTest, ReuseIsTimeCorrect) {
  RangeSet set;
  set.Add(0x1000, 0x100, 10, 1);  // old function
  set.Add(0x1080, 0x100, 20, 2);  // new function reusing the upper half
  auto snap = set.Publish();
  EXPECT_EQ(snap->Find(0x10a0, 15).seq, 0u);
  EXPECT_EQ(snap->Find(0x10a0, 25).seq, 1u);
  EXPECT_EQ(snap->Find(0x10a0, std::nullopt).seq, 1u);
  // The part of the old range nobody redefined still answers with the old range.
  EXPECT_EQ(snap->Find(0x1010, 25).seq, 0u);
  EXPECT_EQ(snap->Find(0x1170, 15).seq, kNoRange);
}

TEST(RangeSetTest, TombstoneHidesOlderRange) {
  RangeSet set;
  set.Add(0x1000, 0x100, 10, 1);
  set.Add(0x1000, 0x100, 20, kTombstone);
  auto snap = set.Publish();
  EXPECT_EQ(snap->Find(0x1010, 15).range->payload, 1u);
  EXPECT_EQ(snap->Find(0x1010, std::nullopt).range->payload, kTombstone);
}

TEST(RangeSetTest, OutOfOrderTimesAreClamped) {
  RangeSet set;
  set.Add(0x1000, 0x10, 100, 1);
  set.Add(0x2000, 0x10, 50, 2);  // stamped earlier than its predecessor
  EXPECT_EQ(set.out_of_order(), 1u);
  auto snap = set.Publish();
  EXPECT_EQ(snap->Find(0x2000, 60).seq, kNoRange);
  EXPECT_EQ(snap->Find(0x2000, 100).seq, 1u);
}

TEST(RangeSetTest, RejectsEmptyAndWrappingRanges) {
  RangeSet set;
  EXPECT_EQ(set.Add(0x1000, 0, 1, 1), kNoRange);
  EXPECT_EQ(set.Add(~0ull - 4, 0x10, 1, 1), kNoRange);
  EXPECT_NE(set.Add(~0ull - 0x10, 0x10, 1, 1), kNoRange);
}

TEST(RangeSetTest, OldSnapshotsStayValidWhileWriterGoesOn) {
  RangeSet set;
  set.Add(0x1000, 0x100, 10, 1);
  auto before = set.Publish();
  for (int i = 0; i < 5000; ++i) set.Add(0x1000 + (i % 7) * 8, 0x40, 11 + i, 2 + i);
  auto after = set.Publish();
  EXPECT_EQ(before->Find(0x10f0, std::nullopt).seq, 0u);
  EXPECT_EQ(before->size(), 1u);
  EXPECT_NE(after->Find(0x1000, std::nullopt).seq, 0u);
}

// Random workloads with heavy address reuse, checked against the oracle at many points, with
// publications at random moments (so lookups cross several runs) and a final compaction.
class RangeSetRandomTest : public ::testing::TestWithParam<int> {};

TEST_P(RangeSetRandomTest, MatchesBruteForce) {
  std::mt19937_64 rng(GetParam());
  const uint64_t space = std::uniform_int_distribution<uint64_t>(256, 8192)(rng);
  const int n = std::uniform_int_distribution<int>(1, 3000)(rng);
  RangeSet set;
  Oracle oracle;
  uint64_t t = 1000;
  std::vector<std::pair<std::shared_ptr<const RangeSetSnapshot>, size_t>> snapshots;
  auto check = [&](const RangeSetSnapshot& snap, size_t count, int probes) {
    for (int p = 0; p < probes; ++p) {
      const uint64_t addr = std::uniform_int_distribution<uint64_t>(0, space + 300)(rng);
      std::optional<uint64_t> time;
      if (rng() % 4 != 0) time = std::uniform_int_distribution<uint64_t>(900, t + 50)(rng);
      const int want = oracle.Find(addr, time, count);
      const uint32_t got = Answer(snap, addr, time);
      ASSERT_EQ(got == kNoRange ? -1 : static_cast<int>(got), want)
          << "addr=" << addr << " time=" << (time ? std::to_string(*time) : "now")
          << " count=" << count << " runs=" << snap.runs();
    }
  };
  for (int i = 0; i < n; ++i) {
    const uint64_t size = std::uniform_int_distribution<uint64_t>(0, 300)(rng);
    const uint64_t start = std::uniform_int_distribution<uint64_t>(0, space)(rng);
    // Mostly increasing times, some equal, a few out of order.
    const int r = static_cast<int>(rng() % 10);
    if (r < 6) t += rng() % 20;
    const uint64_t stamp = r == 9 ? t - std::min<uint64_t>(t, rng() % 100) : t;
    const uint32_t payload = rng() % 16 == 0 ? kTombstone : static_cast<uint32_t>(i);
    // Some ranges are backdated (valid from before their predecessors, as fresh perf map
    // lines are); the rule is the same: the last appended among those valid at T.
    const bool backdated = GetParam() % 2 == 0 && rng() % 8 == 0;
    const uint64_t when = backdated ? stamp - std::min<uint64_t>(stamp, rng() % 500) : stamp;
    if (backdated) {
      set.AddBackdated(start, size, when, payload);
    } else {
      set.Add(start, size, when, payload);
    }
    oracle.Add(start, size, when, payload, backdated);
    if (rng() % 37 == 0) {
      auto snap = set.Publish();
      snapshots.emplace_back(snap, oracle.ranges.size());
      check(*snap, oracle.ranges.size(), 20);
    }
  }
  auto snap = set.Publish();
  check(*snap, oracle.ranges.size(), 2000);
  for (const auto& run : set.runs_for_testing()) {
    ASSERT_TRUE(run->CheckInvariants());
  }
  // Earlier snapshots still answer for their own moment.
  for (auto& [old, count] : snapshots) check(*old, count, 50);
  auto compact = set.CompactAll();
  EXPECT_EQ(compact->runs(), oracle.ranges.empty() ? 0u : 1u);
  check(*compact, oracle.ranges.size(), 2000);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RangeSetRandomTest, ::testing::Range(1, 41));

// Runs large enough for their arrays to come from AllocateLarge (and from its cache of freed
// blocks, after the first publication): a perf map's shape, mostly ascending with some reuse,
// and a reservation hint as a perf map found complete gives.
TEST(RangeSetTest, LargeRunsThroughTheBlockCacheMatchBruteForce) {
  ReleaseLargeCache();
  std::mt19937_64 rng(7);
  RangeSet set;
  Oracle oracle;
  set.Reserve(200000);
  uint64_t addr = 0x100000;
  const int n = 700000;  // 28 bytes each: runs of 19 MB
  for (int i = 0; i < n; ++i) {
    const uint64_t size = 0x40 + rng() % 0x800;
    const uint64_t start = rng() % 8 == 0 ? addr - (rng() % 64 + 1) * 0x400 : addr;
    set.AddBackdated(start, size, 0, static_cast<uint32_t>(i));
    oracle.Add(start, size, 0, static_cast<uint32_t>(i), /*backdated=*/true);
    if (start == addr) addr += size;
    if (i == 300000 || i == 600000) set.Publish();
  }
  std::vector<std::shared_ptr<const RangeSetSnapshot>> snaps = {set.Publish(), set.CompactAll()};
  for (const auto& run : set.runs_for_testing()) ASSERT_TRUE(run->CheckInvariants());
  for (const auto& snap : snaps) {
    for (int p = 0; p < 100; ++p) {
      const uint64_t a = 0x100000 - 0x10000 + rng() % (addr - 0x100000 + 0x20000);
      const int want = oracle.Find(a, std::nullopt, oracle.ranges.size());
      const uint32_t got = Answer(*snap, a, std::nullopt);
      ASSERT_EQ(got == kNoRange ? -1 : static_cast<int>(got), want) << "addr=" << a;
    }
  }
  snaps.clear();
  EXPECT_LE(LargeCacheBytes(), kLargeCacheBytes);
}

}  // namespace
}  // namespace jitsym::index
