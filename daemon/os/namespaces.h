// What /proc says about a process's namespaces, threads and the files it maps or holds open:
// the facts that tell which process wrote a side file when pid numbers repeat across pid
// namespaces (containers), and which process a thread id belongs to.
//
// Everything is read from the daemon's view of /proc (the host's pid namespace): pids here are
// host pids, uids are host uids (/proc/PID/status maps them into the reader's user namespace).
// The parsers are pure, for tests; the readers return nullopt when the process is gone.
#ifndef JITSYM_DAEMON_OS_NAMESPACES_H_
#define JITSYM_DAEMON_OS_NAMESPACES_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::os {

// /proc/PID/status lines this module needs.
struct ProcessStatus {
  uint32_t tgid = 0;             // Tgid: the process a thread belongs to
  uint32_t uid = 0;              // Uid: the real uid (host)
  std::vector<uint32_t> nspid;   // NSpid: the pid in each pid namespace, outermost first
  std::vector<uint32_t> nstgid;  // NStgid, likewise
};
std::optional<ProcessStatus> ParseStatus(std::string_view text);

// A process's namespaces and container identity.
struct NamespaceFacts {
  uint64_t pid_ns = 0;  // inode of /proc/PID/ns/pid
  uint64_t mnt_ns = 0;  // inode of /proc/PID/ns/mnt
  uint64_t user_ns = 0;
  // The pid in the innermost pid namespace (NStgid's last): what the process calls itself,
  // and the number it puts in file names (jit-<n>.dump, perf-<n>.map).
  uint32_t nspid = 0;
  // How many pid namespaces see it (NStgid's length): more than the daemon's own means it
  // runs in a pid namespace below the daemon's, even when /proc/PID/ns/pid is not readable.
  uint32_t ns_depth = 1;
  uint32_t tgid = 0;
  uint32_t uid = 0;
  // The cgroup v2 path ("0::" line of /proc/PID/cgroup), which names the container
  // ("/system.slice/docker-<id>.scope", "/kubepods/.../<id>"); empty if unknown.
  std::string cgroup;
};
std::string ParseCgroupV2(std::string_view text);
std::optional<NamespaceFacts> ReadNamespaceFacts(uint32_t pid);
// The daemon's own (pid and mount namespace inodes): a process whose pid namespace differs
// runs in a container, as far as pid numbers are concerned.
const NamespaceFacts& SelfNamespaces();

// The thread ids of a process (/proc/PID/task), at most `limit`. Empty if it is gone.
std::vector<uint32_t> ListThreads(uint32_t pid, size_t limit = 65536);
// The process (thread group) that thread `tid` belongs to now; nullopt if no such thread.
std::optional<uint32_t> ThreadGroupOf(uint32_t tid);

// A file mapped into a process, as /proc/PID/maps names it.
struct MarkerMapping {
  uint64_t start = 0;  // first address of the mapping
  uint64_t end = 0;
  uint64_t dev = 0;  // makedev(major, minor) of the maps line
  uint64_t ino = 0;
  std::string path;  // as the process sees it (in its mount namespace)
};
// Mappings of files named jit-<n>.dump (the marker every jitdump writer maps so that perf sees
// the file in its record). Pure: `maps` is the text of /proc/PID/maps.
std::vector<MarkerMapping> JitdumpMappings(std::string_view maps);
// Whether process `pid` maps the file (dev, ino) now (any mapping, /proc/PID/maps).
bool MapsFile(uint32_t pid, uint64_t dev, uint64_t ino);
// Whether process `pid` holds the file (dev, ino) open now (/proc/PID/fd).
bool HoldsOpen(uint32_t pid, uint64_t dev, uint64_t ino);

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_NAMESPACES_H_
