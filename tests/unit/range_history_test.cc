// The history query (RangeSetSnapshot::History, CodeMapSnapshot::History): every definition
// that ever covered an address, with the interval of times it answered, checked against a
// brute-force model: a lookup at every interesting time.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <set>
#include <vector>

#include "daemon/index/code_map.h"
#include "daemon/index/range_set.h"

namespace jitsym::index {
namespace {

struct ModelRange {
  uint64_t start, end, time;
};

// The answer at (addr, time): the last-appended range stamped at or before time covering addr.
int ModelFind(const std::vector<ModelRange>& ranges, uint64_t addr, uint64_t time) {
  for (size_t i = ranges.size(); i-- > 0;) {
    const ModelRange& r = ranges[i];
    if (r.time <= time && r.start <= addr && addr < r.end) return static_cast<int>(i);
  }
  return -1;
}

TEST(ValidityIntervalsTest, LoadMoveReuse) {
  // Loaded at 10, removed (moved away) at 20, something else loaded there at 30.
  Range a{.start = 100, .time = 10, .size = 16, .payload = 1, .seq = 0};
  Range gone{.start = 100, .time = 20, .size = 16, .payload = kTombstone, .seq = 1};
  Range b{.start = 96, .time = 30, .size = 32, .payload = 2, .seq = 2};
  const auto v = ValidityIntervals({&a, &gone, &b});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].from, 10u);
  EXPECT_EQ(v[0].to, 20u);
  EXPECT_EQ(v[1].from, 20u);
  EXPECT_EQ(v[1].to, 30u);
  EXPECT_EQ(v[2].from, 30u);
  EXPECT_FALSE(v[2].to.has_value());
}

TEST(ValidityIntervalsTest, BackdatedLaterRangeEndsAnEarlierOneAtItsOwnTime) {
  // A range appended later but valid from before an earlier one: the earlier never answers.
  Range a{.start = 0, .time = 50, .size = 8, .payload = 1, .seq = 0};
  Range b{.start = 0, .time = 5, .size = 8, .payload = 2, .seq = 1};
  const auto v = ValidityIntervals({&a, &b});
  EXPECT_EQ(v[0].from, 50u);
  EXPECT_EQ(v[0].to, 50u);  // empty
  EXPECT_EQ(v[1].from, 5u);
  EXPECT_FALSE(v[1].to.has_value());
}

class RangeHistoryRandomTest : public ::testing::TestWithParam<int> {};

TEST_P(RangeHistoryRandomTest, MatchesBruteForce) {
  std::mt19937_64 rng(GetParam());
  const uint64_t space = std::uniform_int_distribution<uint64_t>(64, 2048)(rng);
  const int n = std::uniform_int_distribution<int>(1, 1500)(rng);
  RangeSet set;
  std::vector<ModelRange> model;
  uint64_t t = 1000, last = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t size = std::uniform_int_distribution<uint64_t>(1, 200)(rng);
    const uint64_t start = std::uniform_int_distribution<uint64_t>(0, space)(rng);
    if (rng() % 10 < 6) t += rng() % 20;
    const uint32_t payload = rng() % 8 == 0 ? kTombstone : static_cast<uint32_t>(i);
    const bool backdated = GetParam() % 2 == 0 && rng() % 8 == 0;
    uint64_t when = rng() % 10 == 9 ? t - std::min<uint64_t>(t, rng() % 100) : t;
    if (backdated) {
      when -= std::min<uint64_t>(when, rng() % 500);
      set.AddBackdated(start, size, when, payload);
    } else {
      when = std::max(when, last);  // RangeSet::Add clamps
      set.Add(start, size, when, payload);
    }
    last = std::max(last, when);
    model.push_back({start, start + size, when});
    if (rng() % 29 == 0) set.Publish();  // several runs
  }
  auto snap = set.Publish();
  // Every time at which an answer may change, and its neighbours.
  std::set<uint64_t> times{0, UINT64_MAX};
  for (const ModelRange& r : model) {
    times.insert(r.time);
    if (r.time > 0) times.insert(r.time - 1);
    times.insert(r.time + 1);
  }
  for (int p = 0; p < 300; ++p) {
    const uint64_t addr = std::uniform_int_distribution<uint64_t>(0, space + 250)(rng);
    const std::vector<Validity> history = snap->History(addr);
    // The same ranges as the model's covering ones, in append order.
    std::vector<uint32_t> want_seqs;
    for (size_t i = 0; i < model.size(); ++i) {
      if (model[i].start <= addr && addr < model[i].end) want_seqs.push_back(i);
    }
    std::vector<uint32_t> got_seqs;
    for (const Validity& v : history) got_seqs.push_back(v.range->seq);
    ASSERT_EQ(got_seqs, want_seqs) << "addr=" << addr;
    // At every time, the model's answer is the one definition whose interval holds the time.
    for (uint64_t time : times) {
      const int want = ModelFind(model, addr, time);
      int got = -1, holders = 0;
      for (const Validity& v : history) {
        if (v.from <= time && (!v.to || time < *v.to)) {
          got = static_cast<int>(v.range->seq);
          ++holders;
        }
      }
      ASSERT_LE(holders, 1) << "addr=" << addr << " time=" << time;
      ASSERT_EQ(got, want) << "addr=" << addr << " time=" << time;
      // And the lookup itself agrees.
      const Found f = snap->Find(addr, time);
      ASSERT_EQ(f ? static_cast<int>(f.seq) : -1, want);
    }
  }
  // Compaction changes nothing.
  auto compact = set.CompactAll();
  for (uint64_t addr = 0; addr < space; addr += 37) {
    const auto a = snap->History(addr), b = compact->History(addr);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].range->seq, b[i].range->seq);
      EXPECT_EQ(a[i].from, b[i].from);
      EXPECT_EQ(a[i].to, b[i].to);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, RangeHistoryRandomTest, ::testing::Range(1, 21));

TEST(CodeMapHistoryTest, NamesRemovalsAndIntervals) {
  CodeMap map;
  map.Add(0x1000, 0x40, 100, map.Intern("first"));
  map.Remove(0x1000, 0x40, 200);
  map.Add(0x1020, 0x40, 300, map.Intern("second"));
  map.Add(0x5000, 0x40, 400, map.Intern("elsewhere"));
  auto snap = map.Publish();
  const auto h = snap->History(0x1030);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].name, "first");
  EXPECT_EQ(h[0].from, 100u);
  EXPECT_EQ(h[0].to, 200u);
  EXPECT_TRUE(h[1].removed);
  EXPECT_EQ(h[1].to, 300u);
  EXPECT_EQ(h[2].name, "second");
  EXPECT_EQ(h[2].start, 0x1020u);
  EXPECT_FALSE(h[2].to.has_value());
  EXPECT_TRUE(snap->History(0x3000).empty());
}

}  // namespace
}  // namespace jitsym::index
