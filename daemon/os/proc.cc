// Reads process identities from /proc and converts their start times.
#include "daemon/os/proc.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/os/small_file.h"
#include "daemon/util/clock.h"

namespace jitsym::os {

namespace {

// Failures that are the daemon's, not the process's.
bool SaysNothingOfTheProcess(int errno_value) {
  return errno_value == EMFILE || errno_value == ENFILE || errno_value == ENOMEM;
}

std::optional<ProcessIdentity> ParseStat(const std::string& line, uid_t owner) {
  // The command name may contain spaces and parentheses: fields start after the last ')'.
  const char* p = std::strrchr(line.c_str(), ')');
  if (p == nullptr) return std::nullopt;
  ++p;
  // After ")" come fields 3 (state) ... ; starttime is field 22, i.e. the 20th after ')'.
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') ++p;
    while (*p != ' ' && *p != '\0') ++p;
    if (*p == '\0') return std::nullopt;
  }
  ProcessIdentity id;
  id.start_ticks = std::strtoull(p, nullptr, 10);
  id.uid = owner;
  return id;
}

}  // namespace

ProcessLookup LookUpProcess(uint32_t pid) {
  // The stat line is a few hundred bytes (the command name is at most 16).
  SmallFileOptions options;
  options.max_bytes = 4096;
  SmallFileError error;
  ProcessLookup out;
  auto file = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat", options, &error);
  if (!file) {
    if (SaysNothingOfTheProcess(error.errno_value)) out.error = error.errno_value;
    return out;
  }
  out.identity = ParseStat(file->bytes, file->st.st_uid);
  return out;
}

std::optional<ProcessIdentity> ReadProcessIdentity(uint32_t pid) {
  return LookUpProcess(pid).identity;
}

bool DescriptorsFree(int count) {
  std::vector<int> taken;
  bool free = true;
  for (int i = 0; i < count && free; ++i) {
    const int fd = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      taken.push_back(fd);
    } else if (errno == EMFILE || errno == ENFILE) {
      free = false;
    } else {
      break;  // nothing to tell by it
    }
  }
  const int saved = errno;
  for (int fd : taken) ::close(fd);
  errno = saved;
  return free;
}

uint64_t StartTicksToMonotonicNs(uint64_t start_ticks) {
  static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  const uint64_t boot_ns = start_ticks * (1000000000ull / static_cast<uint64_t>(ticks_per_second));
  // Start times count from boot including suspended time (CLOCK_BOOTTIME); CLOCK_MONOTONIC
  // excludes it.
  const uint64_t boottime = NowNs(CLOCK_BOOTTIME);
  const uint64_t monotonic = NowNs(CLOCK_MONOTONIC);
  const uint64_t suspended = boottime > monotonic ? boottime - monotonic : 0;
  return boot_ns > suspended ? boot_ns - suspended : 0;
}

uint64_t BootTicksToRealtimeNs(uint64_t start_ticks, uint64_t ticks_per_second,
                               uint64_t boottime_now_ns, uint64_t realtime_now_ns) {
  if (ticks_per_second == 0) return 0;
  // Whole seconds and the remainder apart: ticks * 1e9 overflows after ~584 years of ticks at
  // 1 Hz only, but this keeps the result exact for any tick rate that does not divide 1e9.
  const uint64_t since_boot = start_ticks / ticks_per_second * 1000000000ull +
                              start_ticks % ticks_per_second * 1000000000ull / ticks_per_second;
  const uint64_t ago = boottime_now_ns > since_boot ? boottime_now_ns - since_boot : 0;
  return realtime_now_ns > ago ? realtime_now_ns - ago : 0;
}

uint64_t StartTicksToRealtimeNs(uint64_t start_ticks) {
  static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  const uint64_t boottime = NowNs(CLOCK_BOOTTIME);
  const uint64_t realtime = NowNs(CLOCK_REALTIME);
  return BootTicksToRealtimeNs(start_ticks, static_cast<uint64_t>(ticks_per_second), boottime,
                               realtime);
}

int OpenPidfd(uint32_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
#else
  return -1;
#endif
}

}  // namespace jitsym::os
