// Heuristics that tell a CLOCK_MONOTONIC nanosecond time from other clocks and units.
#include "client/time_check.h"

#include <time.h>

#include <cstdio>
#include <limits>

namespace jitsym::client {
namespace {

constexpr uint64_t kNsPerSecond = 1000000000ull;
constexpr uint64_t kDayNs = 86400ull * kNsPerSecond;
// A sample time is never later than now; a little slack for a clock read a moment ago.
constexpr uint64_t kFutureSlackNs = 10ull * kNsPerSecond;

uint64_t Read(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSecond + static_cast<uint64_t>(ts.tv_nsec);
}

// time * factor, or nullopt when it does not fit in 64 bits.
std::optional<uint64_t> Scaled(uint64_t time, uint64_t factor) {
  if (time > std::numeric_limits<uint64_t>::max() / factor) return std::nullopt;
  return time * factor;
}

struct Unit {
  uint64_t factor;  // to nanoseconds
  const char* name;
};
constexpr Unit kUnits[] = {
    {1, "nanoseconds"},
    {1000, "microseconds"},
    {1000000, "milliseconds"},
    {kNsPerSecond, "seconds"},
};

}  // namespace

ClockNow ReadClocks() { return ClockNow{Read(CLOCK_MONOTONIC), Read(CLOCK_REALTIME)}; }

std::optional<std::string> SuspectTime(uint64_t time_ns, const ClockNow& now) {
  if (time_ns == 0) return std::nullopt;
  // The wall-clock time this boot started, less a week (a recording of an earlier boot is
  // still recognised as an epoch), up to a day ahead (clock adjustments).
  const uint64_t boot = now.realtime_ns > now.monotonic_ns ? now.realtime_ns - now.monotonic_ns : 0;
  const uint64_t epoch_low = boot > 7 * kDayNs ? boot - 7 * kDayNs : 0;
  const uint64_t epoch_high = now.realtime_ns + kDayNs;
  // Epochs first: an epoch in milliseconds is below a long uptime in nanoseconds, and an epoch
  // is the likelier reading of such a number.
  if (epoch_low > now.monotonic_ns + kFutureSlackNs) {  // else the two clocks cannot be told apart
    for (const Unit& unit : kUnits) {
      const std::optional<uint64_t> t = Scaled(time_ns, unit.factor);
      if (t && *t >= epoch_low && *t <= epoch_high) {
        return std::string("CLOCK_REALTIME ") + unit.name + " (a wall-clock epoch)";
      }
    }
  }
  if (time_ns > now.monotonic_ns + kFutureSlackNs) {
    return std::string("a time later than now on CLOCK_MONOTONIC (another clock, or another boot)");
  }
  for (size_t i = std::size(kUnits); i-- > 1;) {  // seconds, then milliseconds, microseconds
    const std::optional<uint64_t> t = Scaled(time_ns, kUnits[i].factor);
    if (t && *t <= now.monotonic_ns + kFutureSlackNs) return std::string(kUnits[i].name);
  }
  return std::nullopt;
}

std::string TimeWarning(std::string_view command, std::string_view shown,
                        std::string_view looks_like, const ClockNow& now) {
  char now_text[48];
  std::snprintf(now_text, sizeof(now_text), "%llu.%09llu",
                static_cast<unsigned long long>(now.monotonic_ns / kNsPerSecond),
                static_cast<unsigned long long>(now.monotonic_ns % kNsPerSecond));
  std::string out = "jitsym ";
  out.append(command);
  out.append(": warning: time ");
  out.append(shown);
  out.append(" looks like ");
  out.append(looks_like);
  out.append("; expected CLOCK_MONOTONIC nanoseconds (or seconds with a decimal point), as ");
  out.append("`perf record -k mono` writes them (CLOCK_MONOTONIC now: ");
  out.append(now_text);
  out.append("); answers for such times are `??` or names valid at another time");
  return out;
}

std::string TimeChecker::Check(uint64_t time_ns, std::string_view shown) {
  if (warned_) return {};
  std::optional<std::string> looks_like = SuspectTime(time_ns, now_);
  if (!looks_like) return {};
  warned_ = true;
  std::string warning = TimeWarning(command_, shown, *looks_like, now_);
  if (!quiet_) std::fprintf(stderr, "%s\n", warning.c_str());
  return warning;
}

}  // namespace jitsym::client
