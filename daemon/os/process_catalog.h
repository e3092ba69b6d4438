// A catalog of every process on the host, as /proc lists them: host pid and incarnation (start
// ticks), real uid, the pid inside the process's own pid namespace, its pid, mount and user
// namespaces and its cgroup. It answers the questions a side file's name raises when pid numbers
// repeat across pid namespaces (containers): which processes call themselves N, which process
// is N in a given pid namespace, which processes share a mount namespace.
//
// Refresh is incremental and cheap when nothing changed: one readdir of /proc, whose entries
// carry the inode number of each /proc/PID directory. The kernel gives a /proc/PID directory a
// new inode when the process behind the number changes (the old directory is flushed at exit),
// so an unchanged inode means an unchanged process, and only new or changed numbers cost a read
// of /proc/PID/stat (start ticks) and of the namespace facts (os/namespaces.h). Inode numbers
// can be reused after 2^32 inode allocations, so every entry's start ticks are also verified in
// a slow rotation (1/kVerifyRotation of the entries per Refresh).
//
// Bounds: at most Options::max_entries processes (further ones are left out, and counted, until
// room is made); at most Options::max_new_per_refresh namespace reads per Refresh (the rest
// wait for the next one, so a fork bomb cannot make one Refresh long); cgroup paths are stored
// once per distinct path, each at most kMaxCgroupBytes, all together at most
// Options::max_cgroup_bytes (beyond: empty, unknown). An entry costs about 300 bytes with its
// index nodes; a process costs the kernel far more (its stacks and task structures), so the
// catalog stays a small fraction of what the processes themselves hold.
//
// Not thread-safe: one thread (the ingester's) owns it. Entry pointers and views stay valid
// until the next Refresh that changes or drops the entry.
#ifndef JITSYM_DAEMON_OS_PROCESS_CATALOG_H_
#define JITSYM_DAEMON_OS_PROCESS_CATALOG_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jitsym::os {

class ProcessCatalog {
 public:
  struct Entry {
    uint32_t host_pid = 0;
    uint64_t start_ticks = 0;  // with host_pid, the identity: a reused pid is a new entry
    uint32_t uid = 0;          // real uid, as the host sees it
    uint32_t nspid = 0;        // the pid in its innermost pid namespace (its file names' pid)
    uint64_t pid_ns = 0;       // namespace inodes (0: unknown)
    uint32_t ns_depth = 1;     // pid namespaces that see it (NStgid's length)
    uint64_t mnt_ns = 0;
    uint64_t user_ns = 0;
    std::string_view cgroup;     // cgroup v2 path; empty if unknown
    uint64_t first_seen_ns = 0;  // the Refresh time it entered the catalog
  };

  // Told of entries as a Refresh adds and drops them (a changed incarnation is a drop of the old
  // entry, then an add). Called during Refresh: do not call Refresh from them.
  struct Listener {
    std::function<void(const Entry&)> added;
    std::function<void(const Entry&)> removed;
  };

  struct Options {
    size_t max_entries = size_t{1} << 20;
    size_t max_new_per_refresh = 4096;  // ~25 us each
    size_t max_cgroup_bytes = size_t{64} << 20;
    // A Refresh sooner than this after the previous one does nothing: callers may ask for one
    // whenever a new file names an unknown pid, and a user creating files cannot make it spin.
    uint64_t min_interval_ns = 20'000'000;
    std::string proc = "/proc";  // the directory listed (facts always come from /proc)
  };

  struct Stats {
    uint64_t refreshes = 0;          // Refresh calls that ran
    uint64_t refreshes_skipped = 0;  // too soon after the previous one
    uint64_t stat_reads = 0;         // /proc/PID/stat reads (changed inodes, verification)
    uint64_t facts_reads = 0;        // namespace facts read (new, renewed, Update)
    uint64_t added = 0;
    uint64_t removed = 0;
    uint64_t over_cap = 0;         // pids left out because the catalog was full (last Refresh)
    uint64_t deferred = 0;         // new pids left for the next Refresh (last Refresh)
    size_t listed = 0;             // pids /proc listed (last Refresh)
    uint64_t last_refresh_ns = 0;  // how long the last Refresh took (monotonic ns)
  };

  static constexpr size_t kMaxCgroupBytes = 4096;
  static constexpr size_t kVerifyRotation = 64;

  ProcessCatalog();
  explicit ProcessCatalog(Options options);
  ProcessCatalog(const ProcessCatalog&) = delete;
  ProcessCatalog& operator=(const ProcessCatalog&) = delete;

  // Brings the catalog up to date with /proc (see above); false if skipped because the last
  // one ran less than min_interval_ns before `now_ns` (CLOCK_MONOTONIC).
  bool Refresh(uint64_t now_ns);

  // Reads the facts of a catalogued process again (its uid, mount and user namespaces and
  // cgroup change with setuid, unshare, setns or a move between cgroups, e.g. while a container
  // starts) and returns its entry; null if it is not in the catalog. An entry whose pid now
  // names another process is left to the next Refresh.
  const Entry* Update(uint32_t host_pid);

  const Entry* Find(uint32_t host_pid) const;
  // Processes in a pid namespace other than the daemon's whose innermost pid is `nspid`: the
  // processes a file named with `nspid` may belong to besides the host's process `nspid`.
  std::vector<const Entry*> Namesakes(uint32_t nspid) const;
  // The process whose innermost pid namespace is `pid_ns` and whose pid there is `nspid`.
  const Entry* InPidNamespace(uint64_t pid_ns, uint32_t nspid) const;
  std::vector<const Entry*> InMountNamespace(uint64_t mnt_ns) const;

  // The daemon's own pid and mount namespaces (SelfNamespaces, or as set for tests).
  uint64_t self_pid_ns() const { return self_pid_ns_; }
  uint64_t self_mnt_ns() const { return self_mnt_ns_; }
  void set_self_namespaces_for_testing(uint64_t pid_ns, uint64_t mnt_ns) {
    self_pid_ns_ = pid_ns;
    self_mnt_ns_ = mnt_ns;
  }

  size_t size() const { return entries_.size(); }
  const Stats& stats() const { return stats_; }
  // Every entry, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& [pid, slot] : entries_) f(slot.entry);
  }

  // Returns an id for RemoveListener.
  int AddListener(Listener listener);
  void RemoveListener(int id);

 private:
  struct Slot {
    Entry entry;
    uint64_t dir_ino = 0;  // inode of /proc/PID when last seen
    uint64_t seen = 0;     // the last Refresh round that listed it
  };
  // Reads a new pid's facts into `slot`; false if it is gone or changed while read.
  bool ReadEntry(uint32_t pid, uint64_t dir_ino, uint64_t now_ns, Slot* slot);
  void Insert(Slot slot);
  void Refill(Slot& slot, const Entry& now);
  void Erase(std::unordered_map<uint32_t, Slot>::iterator it);
  std::string_view InternCgroup(const std::string& path);
  void ReleaseCgroup(std::string_view path);

  Options options_;
  uint64_t self_pid_ns_ = 0;
  uint32_t self_ns_depth_ = 1;
  uint64_t self_mnt_ns_ = 0;
  bool ran_ = false;
  uint64_t last_refresh_ = 0;
  Stats stats_;
  std::unordered_map<uint32_t, Slot> entries_;
  std::set<std::pair<uint32_t, uint32_t>> by_nspid_;  // (nspid, host pid), foreign pid ns only
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> by_pid_ns_;  // (pid_ns, nspid) -> host pid
  std::set<std::pair<uint64_t, uint32_t>> by_mnt_ns_;            // (mnt_ns, host pid)
  std::unordered_map<std::string, size_t> cgroups_;              // path -> entries using it
  size_t cgroup_bytes_ = 0;
  std::map<int, Listener> listeners_;
  int next_listener_ = 0;
};

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_PROCESS_CATALOG_H_
