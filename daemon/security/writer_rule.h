// Which process wrote a side file named with a pid (jit-<n>.dump, perf-<n>.map), when pid
// numbers repeat across pid namespaces. A process in a container calls itself by the pid of its
// own namespace and names its files so; the same number is, on the host, some other process
// (pid 1 is init). The rule, on facts /proc gives and a user cannot set:
//  - the process that maps the file (every jitdump writer maps its file as perf's marker) or
//    holds it open is its writer (a jitdump in a host directory that the process its name
//    gives maps is settled so before any namesake is looked for: ingest/writer_probe.h);
//  - a file found in a container's filesystem (through /proc/PID/root) is named with the pid
//    one of the container's processes calls itself (its pid in its own pid namespace);
//  - a file in a host directory is named with a host pid, unless the number is also the pid of
//    a process inside another pid namespace that could have written it (its owner, or the file
//    is root's): then only a mapping or an open descriptor tells, and without one the file is
//    left unattached rather than guessed;
//  - a jitdump is never the side file of a live process that started before it was written
//    and does not map it (its writer keeps it mapped until it exits), when found at start-up.
// Which process holding the pid may be believed is the trust rule's (file_trust.h), applied to
// the writer this rule names.
#ifndef JITSYM_DAEMON_SECURITY_WRITER_RULE_H_
#define JITSYM_DAEMON_SECURITY_WRITER_RULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace jitsym::security {

// A process that may have written the file.
struct WriterCandidate {
  uint32_t host_pid = 0;
  uint32_t uid = 0;       // real uid, host view
  uint32_t nspid = 0;     // its pid in its own pid namespace
  bool holds = false;     // maps the file or holds it open now
  uint64_t start_ns = 0;  // CLOCK_REALTIME ns of its start (0: unknown)
};

struct WriterFacts {
  uint32_t name_pid = 0;  // the pid the file's name gives
  bool jitdump = false;
  uint32_t file_uid = 0;
  uint64_t file_ctime_ns = 0;  // CLOCK_REALTIME
  bool found_at_startup = false;
  // Found in a container's filesystem: `name_pid` is the pid a process of that container
  // calls itself, and `in_container` are the processes of its mount namespace that do.
  bool container_dir = false;
  std::vector<WriterCandidate> in_container;
  // Host directory: the process whose host pid is `name_pid` (if any), and the processes of
  // other pid namespaces whose own pid is `name_pid` (namesakes).
  std::optional<WriterCandidate> host;
  std::vector<WriterCandidate> namesakes;
};

enum class WriterKind {
  kProcess,     // `host_pid` wrote it: judge trust against that process
  kByName,      // no process holds the pid now: the trust rule decides (waiting, exited)
  kWait,        // ambiguous for now: ask again shortly (the writer maps it within moments)
  kUnattached,  // the writer cannot be told: keep the file out of every process
};

struct WriterJudgement {
  WriterKind kind = WriterKind::kUnattached;
  uint32_t host_pid = 0;  // kProcess, kByName: the pid to judge trust for
  std::string why;        // kUnattached, kWait: for the log and `processes`
};

// `waited`: the file has been waiting for evidence as long as it may (kWait becomes
// kUnattached).
WriterJudgement JudgeWriter(const WriterFacts& facts, bool waited);

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_WRITER_RULE_H_
