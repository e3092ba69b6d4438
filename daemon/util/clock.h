// Clocks. Index times are CLOCK_MONOTONIC nanoseconds, the jitdump clock and what
// `perf record -k mono` stamps samples with.
#ifndef JITSYM_DAEMON_UTIL_CLOCK_H_
#define JITSYM_DAEMON_UTIL_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace jitsym {

inline uint64_t NowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
inline uint64_t MonotonicNowNs() { return NowNs(CLOCK_MONOTONIC); }

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_CLOCK_H_
