// Sample times checked where they enter the client: a time that looks like microseconds,
// milliseconds or a wall-clock epoch rather than CLOCK_MONOTONIC nanoseconds (the clock of
// jitdump files and of `perf record -k mono`) answers `??` or, worse, a name valid at another
// time. The daemon cannot tell the user why; the client can, once, on stderr.
#ifndef JITSYM_CLIENT_TIME_CHECK_H_
#define JITSYM_CLIENT_TIME_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jitsym::client {

// The clocks a time is judged against, read once.
struct ClockNow {
  uint64_t monotonic_ns = 0;  // CLOCK_MONOTONIC now
  uint64_t realtime_ns = 0;   // CLOCK_REALTIME now
};
ClockNow ReadClocks();

// What `time_ns` (a time given as CLOCK_MONOTONIC nanoseconds) looks like instead, e.g.
// "CLOCK_REALTIME microseconds (a wall-clock epoch)" or "microseconds"; nullopt when it is a
// plausible CLOCK_MONOTONIC time of this boot. Pure. The rules:
//  - times x ns, us, ms or s (x 1, 1e3, 1e6, 1e9) that fall between a week before this boot's
//    start and a day from now on CLOCK_REALTIME: a wall-clock epoch in that unit;
//  - after now on CLOCK_MONOTONIC (plus a little): another clock or another boot;
//  - times that are still before now when multiplied by 1e9, 1e6 or 1e3: seconds, milliseconds,
//    microseconds (a real sample in the first 1/1000 of the uptime is taken for microseconds:
//    rare, and then the warning is all that happens).
std::optional<std::string> SuspectTime(uint64_t time_ns, const ClockNow& now);

// Warns once on stderr, for one command, about the first suspect time it is given.
class TimeChecker {
 public:
  // `command` is "lookup", "annotate": it prefixes the message.
  explicit TimeChecker(std::string command, ClockNow now = ReadClocks())
      : command_(std::move(command)), now_(now) {}

  // `shown` is the time as the user wrote it (or as perf script printed it). Returns the
  // warning printed (empty when none: a plausible time, or one already printed, or quiet).
  std::string Check(uint64_t time_ns, std::string_view shown);
  // Whether Check would warn about this time (for callers that format `shown` only then).
  bool WouldWarn(uint64_t time_ns) const { return !warned_ && SuspectTime(time_ns, now_); }
  void set_quiet(bool quiet) { quiet_ = quiet; }
  bool warned() const { return warned_; }

 private:
  const std::string command_;
  const ClockNow now_;
  bool warned_ = false;
  bool quiet_ = false;
};

// The warning text, without a newline (for tests and for TimeChecker).
std::string TimeWarning(std::string_view command, std::string_view shown,
                        std::string_view looks_like, const ClockNow& now);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_TIME_CHECK_H_
