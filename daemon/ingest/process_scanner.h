// Discovery of JIT side files without a watch directory: on a timer, refreshes the process
// catalog (os/process_catalog.h), then
//  (a) reads /proc/PID/maps of new processes, and again of young ones as they age (at about
//      1, 2, 4, ... 64 s, then every ~60 s with jitter, forever), looking for jitdump marker
//      mappings (os::JitdumpMappings): every jitdump writer maps its file, wherever it lies (a
//      working directory, ~/.debug/jit, a container's private /tmp). Each file (dev, ino) is
//      reported once, with a path the daemon can open, while some process maps it;
//  (b) for processes in another mount namespace than the daemon's, reports each distinct
//      /proc/PID/root/tmp directory (by its dev and ino) once, so that it can be watched for
//      perf-<nspid>.map and jit-<nspid>.dump, and again through another process of the same
//      mount namespace when the process it was reported through exits.
//
// Bounds (every input is hostile): at most Options::maps_reads_per_tick maps reads and about
// Options::tick_budget_ns of work per tick, new processes first, the rest carried over to the
// next tick in due order; maps files larger than Options::max_maps_bytes are skipped; at most
// Options::max_markers_per_process marker files per process; the steady re-checks of old
// processes spread over a period long enough that they take at most
// Options::steady_core_share of a core however big their maps are; nothing a user controls is
// followed: a marker's path is walked component by component without following any symlink from
// the process's own root (/proc/PID/root), and /tmp is taken only if it is a directory itself.
//
// Runs on the io_context's thread, the one that owns the catalog.
#ifndef JITSYM_DAEMON_INGEST_PROCESS_SCANNER_H_
#define JITSYM_DAEMON_INGEST_PROCESS_SCANNER_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/os/process_catalog.h"

namespace jitsym::ingest {

class ProcessScanner {
 public:
  struct Options {
    uint64_t period_ns = 1'000'000'000;
    size_t maps_reads_per_tick = 256;
    // Maps reads stop for the tick once they took this long (the catalog's Refresh before them
    // is bounded by its own options).
    uint64_t tick_budget_ns = 50'000'000;
    // Re-checks at these ages (ns since the process started), then every steady_recheck_ns
    // (±25%, spread so that the processes of one start-up do not come due together).
    std::vector<uint64_t> young_ages_ns = {1'000'000'000, 2'000'000'000,  4'000'000'000,
                                           8'000'000'000, 16'000'000'000, 32'000'000'000,
                                           64'000'000'000};
    uint64_t steady_recheck_ns = 60'000'000'000;
    // The steady re-checks of all processes together take at most this share of one core: the
    // period grows past steady_recheck_ns when the processes' maps are big (each check's cost
    // is measured; 1,000 processes of 2,000 mappings each cost ~1.5 ms a read).
    double steady_core_share = 0.005;
    size_t max_maps_bytes = size_t{16} << 20;
    size_t max_markers_per_process = 8;
  };

  struct Handlers {
    // A jitdump marker file (dev, ino as /proc/PID/maps shows them) first seen mapped by
    // `host_pid`; `open_path` names it for the daemon: /proc/PID/root<path> when that path,
    // walked from the process's root, has no symlink in it and reaches the inode; else
    // /proc/PID/map_files/<range> (a file deleted or replaced since; opening it needs
    // CAP_SYS_ADMIN). The file may be replaced between the check and the open: fstat what is
    // opened and compare the inode (on overlayfs the device differs: maps show the backing
    // file's).
    std::function<void(uint32_t host_pid, const std::string& open_path, uint64_t dev, uint64_t ino)>
        on_marker;
    // /proc/PID/root/tmp of a process in another mount namespace (not the daemon's own /tmp),
    // first seen or seen again through another process after `host_pid`'s predecessor exited.
    // Watch it with IN_DONT_FOLLOW | IN_ONLYDIR, and open files under it with O_NOFOLLOW
    // relative to a descriptor of the directory: "tmp" was a directory when checked, but the
    // container's user may replace it with a symlink later.
    std::function<void(uint32_t host_pid, uint64_t pid_ns, uint64_t mnt_ns, const std::string& dir)>
        on_foreign_dir;
    // No live process of the catalog reaches a reported directory any more (its last one
    // exited); `dir` is the path it was last reported with.
    std::function<void(const std::string& dir)> on_foreign_dir_gone;
    // A process left the catalog (exited, or its pid now names another incarnation).
    std::function<void(uint32_t host_pid)> on_gone;
  };

  // What the scanning costs, for the benchmark and `stats`.
  struct Stats {
    uint64_t ticks = 0;
    uint64_t busy_ns = 0;  // monotonic time spent in ticks, all together
    uint64_t cpu_ns = 0;   // thread CPU time spent in ticks, all together
    uint64_t last_tick_ns = 0;
    uint64_t max_tick_ns = 0;
    uint64_t maps_reads = 0;  // all together
    uint64_t maps_bytes = 0;
    uint64_t maps_skipped = 0;  // unreadable (gone) or larger than max_maps_bytes
    uint64_t markers_reported = 0;
    uint64_t foreign_dirs_reported = 0;
    size_t last_tick_maps_reads = 0;
    size_t backlog = 0;             // checks due but left for a later tick, after the last tick
    size_t unchecked = 0;           // processes not read even once yet, after the last tick
    uint64_t steady_period_ns = 0;  // the current period of re-checks of old processes
    size_t tracked = 0;             // processes with a check schedule
  };

  ProcessScanner(boost::asio::io_context& io, os::ProcessCatalog& catalog, Options options,
                 Handlers handlers);
  ~ProcessScanner();
  ProcessScanner(const ProcessScanner&) = delete;
  ProcessScanner& operator=(const ProcessScanner&) = delete;

  // Ticks now, then every period, until Stop.
  void Start();
  void Stop();
  // One tick at `now_ns` (CLOCK_MONOTONIC): what the timer runs; tests call it directly.
  void Tick(uint64_t now_ns);

  const Stats& stats() const { return stats_; }

 private:
  using FileKey = std::pair<uint64_t, uint64_t>;  // dev, ino
  struct Tracked {
    uint64_t start_ticks = 0;
    uint64_t pid_ns = 0;
    uint64_t mnt_ns = 0;
    uint64_t born_ns = 0;  // CLOCK_MONOTONIC
    uint64_t due_ns = 0;   // in due_ when checks > 0
    uint32_t checks = 0;
    uint64_t cost_ns = 0;          // of its last check (in check_cost_ns_)
    std::vector<FileKey> markers;  // marker files it maps (counted in markers_)
    std::vector<FileKey> dirs;     // foreign /tmp directories reported through it
    // Marker files whose filesystem did not answer (said once; as many as the lines of its
    // maps considered at most).
    std::vector<FileKey> unanswered;
  };
  struct Marker {
    size_t mappers = 0;  // tracked processes that map it
  };
  struct ForeignDir {
    uint32_t reporter = 0;
    uint64_t pid_ns = 0;
    uint64_t mnt_ns = 0;
    std::string path;
  };
  struct Change {
    bool added = false;
    uint32_t pid = 0;
    uint64_t start_ticks = 0;
    uint64_t pid_ns = 0;
    uint64_t mnt_ns = 0;
  };

  void Arm();
  void ApplyChanges(uint64_t now_ns);
  void Reroute(const FileKey& key, uint32_t former);
  void Forget(uint32_t pid, Tracked& t);
  void Check(uint32_t pid, Tracked& t, uint64_t now_ns);
  void CheckMarkers(uint32_t pid, Tracked& t, const std::string& maps);
  void CheckForeignTmp(uint32_t pid, Tracked& t);
  void Schedule(uint32_t pid, Tracked& t, uint64_t now_ns);
  uint64_t SteadyPeriod() const;

  boost::asio::io_context& io_;
  boost::asio::steady_timer timer_;
  bool running_ = false;
  os::ProcessCatalog& catalog_;
  int listener_ = -1;
  Options options_;
  Handlers handlers_;
  Stats stats_;
  FileKey own_tmp_{0, 0};        // the daemon's /tmp: not foreign, whatever the mount namespace
  std::vector<Change> changes_;  // from the catalog, applied at the next tick
  std::unordered_map<uint32_t, Tracked> tracked_;
  // (start ticks, pid) never checked, oldest first: by start time, not by pid, which wraps.
  std::vector<std::pair<uint64_t, uint32_t>> fresh_;
  std::set<std::pair<uint64_t, uint32_t>> due_;  // (due ns, pid) of checked processes
  std::map<FileKey, Marker> markers_;
  std::map<FileKey, ForeignDir> dirs_;
  uint64_t check_cost_ns_ = 0;  // the last check's cost of every tracked process, summed
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_PROCESS_SCANNER_H_
