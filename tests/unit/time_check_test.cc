// The heuristics that tell CLOCK_MONOTONIC nanoseconds from microseconds, milliseconds, seconds
// and wall-clock epochs, against fixed clocks (a host up 3.6 hours on 2026-11-24, and one up 40
// days, where an epoch in microseconds is below the uptime in nanoseconds).
#include "client/time_check.h"

#include <gtest/gtest.h>

namespace jitsym::client {
namespace {

constexpr uint64_t kSec = 1000000000ull;
// Up 12960.348596388 s; the wall clock reads 1795496894.146932 s.
constexpr ClockNow kNow{12960348596388ull, 1795496894146932000ull};
constexpr ClockNow kLongUp{40ull * 86400 * kSec, 1795496894146932000ull};

std::string Suspect(uint64_t t, const ClockNow& now = kNow) {
  return SuspectTime(t, now).value_or("ok");
}

TEST(TimeCheck, MonotonicNanosecondsPass) {
  EXPECT_EQ(Suspect(12960000000000ull), "ok");  // a sample a few minutes ago
  EXPECT_EQ(Suspect(kNow.monotonic_ns), "ok");
  EXPECT_EQ(Suspect(kNow.monotonic_ns + 5 * kSec), "ok");  // within the slack
  EXPECT_EQ(Suspect(100 * kSec), "ok");                    // early in the boot
  EXPECT_EQ(Suspect(0), "ok");
  EXPECT_EQ(Suspect(39ull * 86400 * kSec, kLongUp), "ok");
}

TEST(TimeCheck, EpochsInEveryUnit) {
  const uint64_t real = kNow.realtime_ns - 60 * kSec;  // a sample a minute ago
  EXPECT_EQ(Suspect(real), "CLOCK_REALTIME nanoseconds (a wall-clock epoch)");
  EXPECT_EQ(Suspect(real / 1000), "CLOCK_REALTIME microseconds (a wall-clock epoch)");
  EXPECT_EQ(Suspect(real / 1000000), "CLOCK_REALTIME milliseconds (a wall-clock epoch)");
  EXPECT_EQ(Suspect(real / kSec), "CLOCK_REALTIME seconds (a wall-clock epoch)");
  // On a host up 40 days an epoch in microseconds is below the monotonic clock in ns.
  EXPECT_EQ(Suspect(real / 1000, kLongUp), "CLOCK_REALTIME microseconds (a wall-clock epoch)");
}

TEST(TimeCheck, SmallerUnitsOfTheMonotonicClock) {
  const uint64_t mono = kNow.monotonic_ns - 60 * kSec;
  EXPECT_EQ(Suspect(mono / 1000), "microseconds");
  EXPECT_EQ(Suspect(mono / 1000000), "milliseconds");
  EXPECT_EQ(Suspect(mono / kSec), "seconds");
}

TEST(TimeCheck, LaterThanNowIsAnotherClock) {
  EXPECT_EQ(Suspect(kNow.monotonic_ns + 3600 * kSec),
            "a time later than now on CLOCK_MONOTONIC (another clock, or another boot)");
  EXPECT_EQ(Suspect(UINT64_MAX),
            "a time later than now on CLOCK_MONOTONIC (another clock, or another boot)");
}

TEST(TimeCheck, WarnsOnceNamingTheClockExpected) {
  TimeChecker checker("lookup", kNow);
  checker.set_quiet(true);
  EXPECT_EQ(checker.Check(12960000000000ull, "12960000000000"), "");
  const std::string w = checker.Check(kNow.realtime_ns / 1000, "1795496894146932");
  EXPECT_NE(w.find("jitsym lookup: warning: time 1795496894146932 looks like CLOCK_REALTIME "
                   "microseconds (a wall-clock epoch)"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("expected CLOCK_MONOTONIC nanoseconds"), std::string::npos) << w;
  EXPECT_NE(w.find("perf record -k mono"), std::string::npos) << w;
  EXPECT_TRUE(checker.warned());
  EXPECT_EQ(checker.Check(kNow.realtime_ns, "again"), "");  // once
}

}  // namespace
}  // namespace jitsym::client
