// What /proc says about a process.
#ifndef JITSYM_DAEMON_OS_PROC_H_
#define JITSYM_DAEMON_OS_PROC_H_

#include <cstdint>
#include <optional>

namespace jitsym::os {

struct ProcessIdentity {
  uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22: start time in clock ticks since boot
  uint32_t uid = 0;          // owner (real uid)
};

// nullopt when the process does not exist (or /proc is not readable for it).
std::optional<ProcessIdentity> ReadProcessIdentity(uint32_t pid);

// A process start time (ticks since boot) as CLOCK_MONOTONIC nanoseconds.
uint64_t StartTicksToMonotonicNs(uint64_t start_ticks);

// A process start time (ticks since boot) as CLOCK_REALTIME nanoseconds: the time elapsed since
// the start is measured on CLOCK_BOOTTIME (which counts from boot including suspend, as the
// ticks do) and taken from the realtime clock now. Rounded down to the tick, like the ticks.
uint64_t StartTicksToRealtimeNs(uint64_t start_ticks);
// The same from given clock readings (pure, for tests).
uint64_t BootTicksToRealtimeNs(uint64_t start_ticks, uint64_t ticks_per_second,
                               uint64_t boottime_now_ns, uint64_t realtime_now_ns);

// pidfd_open(2); -1 if unsupported or the process is gone.
int OpenPidfd(uint32_t pid);

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_PROC_H_
