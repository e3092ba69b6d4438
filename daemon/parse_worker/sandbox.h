// What a parse worker gives up before it reads a byte of a file (parse_worker.h).
#ifndef JITSYM_DAEMON_PARSE_WORKER_SANDBOX_H_
#define JITSYM_DAEMON_PARSE_WORKER_SANDBOX_H_

#include <cstdint>
#include <string>
#include <vector>

namespace jitsym::parse_worker {

struct SandboxSettings {
  uint32_t uid = 65534;  // the user to run as, when the worker may change it (it starts as root)
  uint32_t gid = 65534;
  uint64_t address_space_bytes = 0;  // RLIMIT_AS; 0: none (sanitizer builds reserve terabytes)
};

// In order: the uid and gid (when started as root), no capabilities, not dumpable (no one of
// the same uid may ptrace it or read its memory), no_new_privs, the address space limit, and a
// seccomp filter: no open(2) of any kind, no execve, no new sockets, no signals but to itself,
// no ptrace, no changes to files or to credentials (the rest fails with EPERM). Returns what
// could not be done, one line each; an empty list when all is in force. The seccomp filter
// is required: without it the worker must not run (the caller exits).
std::vector<std::string> EnterSandbox(const SandboxSettings& s, bool* filtered);

// Sets RLIMIT_CPU so that the process is killed (SIGXCPU, then SIGKILL) after `seconds` more
// seconds of CPU time. False when the limit could not be set.
bool LimitCpuFromNow(uint64_t seconds);

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_SANDBOX_H_
