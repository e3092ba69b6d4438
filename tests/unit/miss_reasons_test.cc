// Why an address was not found, decided on made-up facts: the process unknown or only alive,
// times before the start, after the exit, in another clock or unit, code known only from later,
// ignored files, and an image without symbols.
#include "daemon/query/miss_reasons.h"

#include <gtest/gtest.h>

#include <memory>

#include "daemon/index/code_map.h"

namespace jitsym::query {
namespace {

using proto::Reason;

constexpr uint64_t kSecond = 1000000000;

// Now: 3000 s after boot, in November 2026 by the wall clock.
ClockNow Now() { return {3000 * kSecond, 1795000000 * kSecond, 3000 * kSecond}; }

struct Made {
  std::vector<std::shared_ptr<index::ProcessView>> processes;
  std::vector<index::RefusedFile> ignored;

  // Pid 100, alive from 1000 s to 2000 s; its jitdump defines `f` at 0x1000 from 1200 s and
  // `g` at 0x1000 from 1500 s (reused code).
  index::ProcessView* Add(std::optional<uint64_t> exit = 2000 * kSecond) {
    auto p = std::make_shared<index::ProcessView>();
    p->pid = 100;
    p->incarnation = processes.size() + 1;
    p->start_time = 1000 * kSecond;
    p->exit_time = exit;
    p->alive = !exit;
    index::CodeMap map;
    map.Add(0x1000, 0x100, 1200 * kSecond, map.Intern("f"));
    map.Add(0x1000, 0x100, 1500 * kSecond, map.Intern("g"));
    auto source = std::make_shared<index::SourceView>();
    source->origin = Origin::kJitdump;
    source->path = "/tmp/jit-100.dump";
    source->state = SourceState::kClosed;
    source->code = map.Publish();
    p->sources.push_back(source);
    processes.push_back(p);
    return p.get();
  }
  MissFacts Facts(uint64_t addr, std::optional<uint64_t> time) {
    MissFacts f;
    f.id = 100;
    f.addr = addr;
    f.time = time;
    f.now = Now();
    f.ignored = &ignored;
    for (const auto& p : processes) f.incarnations.push_back(p.get());
    if (!processes.empty()) f.process = processes.back().get();
    return f;
  }
};

TEST(MissReasons, NoIncarnationAndNothingAliveIsAnUnknownProcess) {
  Made m;
  MissFacts f = m.Facts(0x1000, std::nullopt);
  EXPECT_EQ(ExplainMiss(f).reason, Reason::kUnknownProcess);
  f.alive = true;  // running, but nothing indexed and no mapping answered
  EXPECT_EQ(ExplainMiss(f).reason, Reason::kNoCode);
  f.alive = false;
  f.answered = true;  // exited, but its mappings answered other addresses
  EXPECT_EQ(ExplainMiss(f).reason, Reason::kNoCode);
}

TEST(MissReasons, AnAddressNothingEverCoveredHasNoCode) {
  Made m;
  m.Add();
  const Explained e = ExplainMiss(m.Facts(0x9000, 1600 * kSecond));
  EXPECT_EQ(e.reason, Reason::kNoCode);
  EXPECT_NE(e.detail.find("pid 100"), std::string::npos) << e.detail;
  EXPECT_EQ(ExplainMiss(m.Facts(0x9000, std::nullopt)).reason, Reason::kNoCode);
}

TEST(MissReasons, ATimeBeforeTheFirstDefinitionIsBeforeCode) {
  Made m;
  m.Add();
  const Explained e = ExplainMiss(m.Facts(0x1010, 1100 * kSecond));
  EXPECT_EQ(e.reason, Reason::kBeforeCode);
  // The earliest definition, not the latest: f from 1200 s.
  EXPECT_NE(e.detail.find("known from 1200000000000 (100.000 s after"), std::string::npos)
      << e.detail;
  EXPECT_NE(e.detail.find(": f in /tmp/jit-100.dump"), std::string::npos) << e.detail;
}

TEST(MissReasons, TimesOutsideTheLifetimeAreBeforeStartOrAfterExit) {
  Made m;
  m.Add();
  Explained e = ExplainMiss(m.Facts(0x1010, 900 * kSecond));
  EXPECT_EQ(e.reason, Reason::kBeforeStart);
  EXPECT_NE(e.detail.find("started at 1000000000000, 100.000 s after"), std::string::npos)
      << e.detail;
  e = ExplainMiss(m.Facts(0x1010, 2500 * kSecond));
  EXPECT_EQ(e.reason, Reason::kAfterExit);
  EXPECT_NE(e.detail.find("exited at 2000000000000, 500.000 s before"), std::string::npos)
      << e.detail;
}

TEST(MissReasons, AWallClockTimeIsAWrongClockNamingIt) {
  Made m;
  m.Add(std::nullopt);
  Explained e = ExplainMiss(m.Facts(0x1010, 1794999000 * kSecond));
  EXPECT_EQ(e.reason, Reason::kWrongClock);
  EXPECT_NE(e.detail.find("CLOCK_REALTIME nanoseconds"), std::string::npos) << e.detail;
  EXPECT_NE(e.detail.find("expected CLOCK_MONOTONIC nanoseconds"), std::string::npos) << e.detail;
  e = ExplainMiss(m.Facts(0x1010, 1794999000ull * 1000000));
  EXPECT_NE(e.detail.find("CLOCK_REALTIME microseconds"), std::string::npos) << e.detail;
  // Epoch milliseconds are 1795 s: a CLOCK_MONOTONIC time now, but before this process.
  m.processes.back()->start_time = 2500 * kSecond;
  e = ExplainMiss(m.Facts(0x1010, 1794999000ull * 1000));
  EXPECT_NE(e.detail.find("CLOCK_REALTIME milliseconds"), std::string::npos) << e.detail;
}

TEST(MissReasons, ATimeInACoarserUnitIsAWrongClockNamingTheUnit) {
  Made m;
  m.Add();
  // 1600 s in microseconds and milliseconds: before the start, in the lifetime once scaled.
  Explained e = ExplainMiss(m.Facts(0x1010, 1600ull * 1000000));
  EXPECT_EQ(e.reason, Reason::kWrongClock);
  EXPECT_NE(e.detail.find("CLOCK_MONOTONIC microseconds"), std::string::npos) << e.detail;
  e = ExplainMiss(m.Facts(0x1010, 1600ull * 1000));
  EXPECT_NE(e.detail.find("CLOCK_MONOTONIC milliseconds"), std::string::npos) << e.detail;
  e = ExplainMiss(m.Facts(0x1010, 1600));
  EXPECT_NE(e.detail.find("CLOCK_MONOTONIC seconds"), std::string::npos) << e.detail;
}

TEST(MissReasons, LaterThanNowOnlyBeyondTheSlack) {
  EXPECT_FALSE(LaterThanNow(Now().monotonic + kSecond, Now()));
  EXPECT_FALSE(LaterThanNow(5, Now()));
  const auto e = LaterThanNow(Now().monotonic + 3600 * kSecond, Now());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->reason, Reason::kWrongClock);
  EXPECT_NE(e->detail.find("3600.000 s later than CLOCK_MONOTONIC now"), std::string::npos)
      << e->detail;
  ClockNow suspended = Now();
  suspended.boottime += 7200 * kSecond;  // the host slept two hours
  const auto boot = LaterThanNow(Now().monotonic + 3600 * kSecond, suspended);
  ASSERT_TRUE(boot);
  EXPECT_NE(boot->detail.find("CLOCK_BOOTTIME"), std::string::npos) << boot->detail;
}

TEST(MissReasons, IgnoredFilesOfTheProcessAreNamedWithWhy) {
  Made m;
  index::ProcessView* p = m.Add();
  auto broken = std::make_shared<index::SourceView>();
  broken->origin = Origin::kPerfmap;
  broken->path = "/tmp/perf-100.map";
  broken->state = SourceState::kError;
  broken->error = "corrupt record at offset 4096";
  p->sources.push_back(broken);
  m.ignored.push_back(
      {"/tmp/jit-100.dump.2", 1001, 100, "owned by uid 1001, not by the process's owner"});
  m.ignored.push_back({"/tmp/perf-200.map", 1001, 200, "another pid's"});
  const Explained e = ExplainMiss(m.Facts(0x9000, 1600 * kSecond));
  EXPECT_EQ(e.reason, Reason::kFileIgnored);
  EXPECT_NE(e.detail.find("/tmp/perf-100.map: corrupt record at offset 4096"), std::string::npos)
      << e.detail;
  EXPECT_NE(e.detail.find("/tmp/jit-100.dump.2: owned by uid 1001"), std::string::npos) << e.detail;
  EXPECT_EQ(e.detail.find("perf-200"), std::string::npos) << e.detail;
}

TEST(MissReasons, AnImageMissIsNoSymbolOrNoDebugInfo) {
  Made m;
  m.Add(std::nullopt);
  LookupBatch::MissHint hint{Reason::kNoDebugInfo, "/usr/bin/stripped"};
  MissFacts f = m.Facts(0x555000, std::nullopt);
  f.hint = &hint;
  Explained e = ExplainMiss(f);
  EXPECT_EQ(e.reason, Reason::kNoDebugInfo);
  EXPECT_EQ(e.detail,
            "/usr/bin/stripped is stripped: no .symtab and no debug info, and no exported symbol "
            "covers this address");
  hint.reason = Reason::kNoSymbol;
  EXPECT_EQ(ExplainMiss(f).reason, Reason::kNoSymbol);
}

TEST(RangeSetFirstDefinedAfter, TheEarliestDefinitionLaterThanTheTimeTombstonesLeftOut) {
  index::RangeSet set;
  set.Add(0x1000, 0x100, 10, 1);
  set.Add(0x1000, 0x100, 20, index::kTombstone);
  set.Add(0x1080, 0x100, 30, 2);
  set.Add(0x1000, 0x100, 40, 3);
  const auto snap = set.Publish();
  EXPECT_EQ(snap->FirstDefinedAfter(0x1010, 5)->payload, 1u);
  EXPECT_EQ(snap->FirstDefinedAfter(0x1010, 10)->payload, 3u);  // the tombstone is no code
  EXPECT_EQ(snap->FirstDefinedAfter(0x10f0, 10)->payload, 2u);
  EXPECT_EQ(snap->FirstDefinedAfter(0x1010, 40), nullptr);
  EXPECT_EQ(snap->FirstDefinedAfter(0x5000, 0), nullptr);
}

}  // namespace
}  // namespace jitsym::query
