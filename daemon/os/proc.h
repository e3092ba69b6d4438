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

// What /proc says about a pid now.
struct ProcessLookup {
  // nullopt: no such process (or /proc hides it from the daemon), unless `error` is set.
  std::optional<ProcessIdentity> identity;
  // Not 0: /proc could not be read for a reason that says nothing about the process (EMFILE,
  // ENFILE, ENOMEM): it may well be alive. Callers that act on "gone" must not act on this.
  int error = 0;
};
ProcessLookup LookUpProcess(uint32_t pid);

// LookUpProcess's identity, for callers to whom "could not tell" and "gone" are the same.
std::optional<ProcessIdentity> ReadProcessIdentity(uint32_t pid);

// Whether `count` more descriptors can be had now (each opened and closed at once); false,
// with errno EMFILE or ENFILE, when not. Asked before a step that reads /proc and would take a
// failure to open it for a process that is gone.
bool DescriptorsFree(int count);

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
