// What /proc says about a process.
#ifndef JITSYM_DAEMON_INGEST_PROC_H_
#define JITSYM_DAEMON_INGEST_PROC_H_

#include <cstdint>
#include <optional>

namespace jitsym::ingest {

struct ProcessIdentity {
  uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22: start time in clock ticks since boot
  uint32_t uid = 0;          // owner (real uid)
};

// nullopt when the process does not exist (or /proc is not readable for it).
std::optional<ProcessIdentity> ReadProcessIdentity(uint32_t pid);

// A process start time (ticks since boot) as CLOCK_MONOTONIC nanoseconds.
uint64_t StartTicksToMonotonicNs(uint64_t start_ticks);

// pidfd_open(2); -1 if unsupported or the process is gone.
int OpenPidfd(uint32_t pid);

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_PROC_H_
