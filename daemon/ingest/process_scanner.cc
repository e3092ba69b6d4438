// Finds jitdump markers and foreign /tmp directories of the host's processes (see
// process_scanner.h).
#include "daemon/ingest/process_scanner.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string_view>

#include "daemon/os/guarded_fs.h"
#include "daemon/os/namespaces.h"
#include "daemon/os/proc.h"
#include "daemon/os/small_file.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {
namespace {

// Processes tried as the new way to a foreign /tmp when the one it was reported through exits.
constexpr size_t kMaxReporterCandidates = 64;
// Foreign /tmp directories remembered per process (a process that mounts over its /tmp again
// and again gets no more).
constexpr size_t kMaxDirsPerProcess = 4;

uint64_t Mix(uint64_t x) {  // splitmix64: jitter that needs no state
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string ProcPath(uint32_t pid, std::string_view rest) {
  std::string path = "/proc/" + std::to_string(pid);
  path.append(rest);
  return path;
}

// Whether `path`, as process `pid` sees it from its root, names the file (dev, ino) through
// directories and a file that are no symlinks: the walk starts at /proc/PID/root and follows no
// symlink, so nothing the process's user controls can lead the daemon elsewhere. A FUSE mount
// on the way is asked through a worker process only (os/guarded_fs.h): a server that never
// answers costs the scan its timeout once, then nothing while that mount is not asked again
// (*unanswered says so).
bool ReachableWithoutSymlinks(uint32_t pid, const std::string& path, uint64_t dev, uint64_t ino,
                              std::string* unanswered) {
  if (path.empty() || path.front() != '/') return false;
  auto root = os::OpenProcessRoot(pid);
  if (!root) return false;
  os::WalkOptions options;
  options.no_symlinks = true;
  auto e = os::WalkAt(*root, path.substr(1), options);
  if (!e) *unanswered = e.error().message;
  if (!e || e->error != 0 || !S_ISREG(e->st.st_mode)) return false;
  if (static_cast<uint64_t>(e->st.st_ino) != ino) return false;
  if (static_cast<uint64_t>(e->st.st_dev) == dev) return true;
  // overlayfs maps the backing file, whose device /proc/PID/maps shows; the path shows the
  // overlay's.
  return e->fd.mount() && e->fd.mount()->fstype == "overlay";
}

// A path the daemon can open for the marker file `m` that process `pid` maps, or "" (with
// *unanswered set when its filesystem did not answer).
std::string MarkerOpenPath(uint32_t pid, const os::MarkerMapping& m, std::string* unanswered) {
  if (ReachableWithoutSymlinks(pid, m.path, m.dev, m.ino, unanswered)) {
    return ProcPath(pid, "/root") + m.path;
  }
  if (!unanswered->empty()) return {};  // the mapping leads to the same filesystem
  // The mapping itself (a file deleted or replaced since, or a path with escapes in maps);
  // opening it needs CAP_SYS_ADMIN.
  char files[96];
  std::snprintf(files, sizeof(files), "/proc/%u/map_files/%llx-%llx", pid,
                static_cast<unsigned long long>(m.start), static_cast<unsigned long long>(m.end));
  auto e = os::StatPath(files, /*no_follow_last=*/false);
  if (e && e->error == 0 && S_ISREG(e->st.st_mode) &&
      static_cast<uint64_t>(e->st.st_dev) == m.dev &&
      static_cast<uint64_t>(e->st.st_ino) == m.ino) {
    return files;
  }
  return {};
}

// The lines of `maps` that may name a jitdump ("/jit-" in them), at most `limit`: the whole
// file need not be parsed, and a process listing thousands of them only hides its own.
std::string CandidateLines(std::string_view maps, size_t limit) {
  std::string out;
  size_t pos = 0, lines = 0;
  while (lines < limit) {
    const size_t hit = maps.find("/jit-", pos);
    if (hit == std::string_view::npos) break;
    const size_t nl = maps.rfind('\n', hit);
    const size_t begin = nl == std::string_view::npos ? 0 : nl + 1;
    size_t end = maps.find('\n', hit);
    if (end == std::string_view::npos) end = maps.size();
    out.append(maps.substr(begin, end - begin));
    out.push_back('\n');
    ++lines;
    pos = end;
  }
  return out;
}

bool ForeignTmp(uint32_t pid, std::pair<uint64_t, uint64_t>* key, std::string* path) {
  *path = ProcPath(pid, "/root/tmp");
  // /proc/PID/root is the kernel's link to the process's root; "tmp" is not followed (lstat).
  // A /tmp on FUSE is looked at through a worker (os/guarded_fs.h).
  auto root = os::OpenProcessRoot(pid);
  if (!root) return false;
  auto e = os::LookUp(*root, "tmp");
  if (!e || e->error != 0 || !S_ISDIR(e->st.st_mode)) return false;
  *key = {static_cast<uint64_t>(e->st.st_dev), static_cast<uint64_t>(e->st.st_ino)};
  return true;
}

}  // namespace

ProcessScanner::ProcessScanner(boost::asio::io_context& io, os::ProcessCatalog& catalog,
                               Options options, Handlers handlers)
    : io_(io),
      timer_(io),
      catalog_(catalog),
      options_(std::move(options)),
      handlers_(std::move(handlers)) {
  if (auto tmp = os::StatPath("/tmp", /*no_follow_last=*/false); tmp && tmp->error == 0) {
    own_tmp_ = {static_cast<uint64_t>(tmp->st.st_dev), static_cast<uint64_t>(tmp->st.st_ino)};
  }
  // What the catalog knows already, then what changes.
  catalog_.ForEach([this](const os::ProcessCatalog::Entry& e) {
    changes_.push_back({true, e.host_pid, e.start_ticks, e.pid_ns, e.mnt_ns});
  });
  os::ProcessCatalog::Listener listener;
  listener.added = [this](const os::ProcessCatalog::Entry& e) {
    changes_.push_back({true, e.host_pid, e.start_ticks, e.pid_ns, e.mnt_ns});
  };
  listener.removed = [this](const os::ProcessCatalog::Entry& e) {
    changes_.push_back({false, e.host_pid, e.start_ticks, e.pid_ns, e.mnt_ns});
  };
  listener_ = catalog_.AddListener(std::move(listener));
}

ProcessScanner::~ProcessScanner() {
  Stop();
  catalog_.RemoveListener(listener_);
}

void ProcessScanner::Start() {
  if (running_) return;
  running_ = true;
  timer_.expires_after(std::chrono::nanoseconds(0));
  Arm();
}

void ProcessScanner::Stop() {
  running_ = false;
  timer_.cancel();
}

void ProcessScanner::Arm() {
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: `this` may be gone
    if (!running_) return;
    Tick(MonotonicNowNs());
    timer_.expires_after(std::chrono::nanoseconds(options_.period_ns));
    Arm();
  });
}

void ProcessScanner::Tick(uint64_t now_ns) {
  const uint64_t started = MonotonicNowNs();
  const uint64_t cpu_started = NowNs(CLOCK_THREAD_CPUTIME_ID);
  catalog_.Refresh(now_ns);
  ApplyChanges(now_ns);

  // The budget of maps reads starts after the Refresh, whose own work is bounded by the
  // catalog's options: a Refresh made long by a burst of new processes leaves their reading to
  // this budget, not to nothing.
  const uint64_t reading = MonotonicNowNs();
  size_t reads = 0;
  auto within_budget = [&] {
    return reads < options_.maps_reads_per_tick &&
           MonotonicNowNs() - reading < options_.tick_budget_ns;
  };
  // New processes first: their files are the ones not yet known at all. The newest of them
  // first: a backlog (the daemon's first scan of a big host, a burst of forks) must not delay
  // the process that just started, the likeliest to be starting its JIT now.
  while (!fresh_.empty() && within_budget()) {
    const auto [start_ticks, pid] = fresh_.back();
    fresh_.pop_back();
    auto it = tracked_.find(pid);
    if (it == tracked_.end() || it->second.start_ticks != start_ticks || it->second.checks > 0) {
      continue;
    }
    Check(pid, it->second, now_ns);
    ++reads;
  }
  while (!due_.empty() && due_.begin()->first <= now_ns && within_budget()) {
    const uint32_t pid = due_.begin()->second;
    due_.erase(due_.begin());
    auto it = tracked_.find(pid);
    if (it == tracked_.end()) continue;
    Check(pid, it->second, now_ns);
    ++reads;
  }

  size_t backlog = fresh_.size();
  for (auto it = due_.begin(); it != due_.end() && it->first <= now_ns; ++it) ++backlog;
  const uint64_t took = MonotonicNowNs() - started;
  ++stats_.ticks;
  stats_.busy_ns += took;
  stats_.cpu_ns += NowNs(CLOCK_THREAD_CPUTIME_ID) - cpu_started;
  stats_.last_tick_ns = took;
  stats_.max_tick_ns = std::max(stats_.max_tick_ns, took);
  stats_.last_tick_maps_reads = reads;
  stats_.backlog = backlog;
  stats_.unchecked = fresh_.size();
  stats_.steady_period_ns = SteadyPeriod();
  stats_.tracked = tracked_.size();
}

void ProcessScanner::ApplyChanges(uint64_t now_ns) {
  std::vector<FileKey> orphans;  // foreign dirs whose reporter left
  // Taken out first: a handler called below may make the catalog refresh and queue more.
  std::vector<Change> changes;
  changes.swap(changes_);
  const size_t known = fresh_.size();
  for (const Change& c : changes) {
    auto it = tracked_.find(c.pid);
    if (!c.added) {
      if (it == tracked_.end() || it->second.start_ticks != c.start_ticks) continue;
      for (const FileKey& key : it->second.dirs) {
        auto d = dirs_.find(key);
        if (d != dirs_.end() && d->second.reporter == c.pid) orphans.push_back(key);
      }
      Forget(c.pid, it->second);
      tracked_.erase(it);
      if (handlers_.on_gone) handlers_.on_gone(c.pid);
      continue;
    }
    if (it != tracked_.end()) {  // a removal went unseen: drop the old incarnation
      Forget(c.pid, it->second);
      tracked_.erase(it);
    }
    Tracked t;
    t.start_ticks = c.start_ticks;
    t.pid_ns = c.pid_ns;
    t.mnt_ns = c.mnt_ns;
    const uint64_t born = os::StartTicksToMonotonicNs(c.start_ticks);
    t.born_ns = born <= now_ns ? born : now_ns;
    tracked_.emplace(c.pid, std::move(t));
    fresh_.emplace_back(c.start_ticks, c.pid);
  }
  // Newest last, where Tick takes them from. /proc lists by pid, and pids wrap (pid_max is
  // 32768 on many hosts): the highest pid is not the newest process.
  if (fresh_.size() > known) {
    std::sort(fresh_.begin() + static_cast<ptrdiff_t>(known), fresh_.end());
    std::inplace_merge(fresh_.begin(), fresh_.begin() + static_cast<ptrdiff_t>(known),
                       fresh_.end());
  }

  for (const FileKey& key : orphans) Reroute(key, 0);
}

void ProcessScanner::Reroute(const FileKey& key, uint32_t former) {
  // A directory reported through a process that exited (or no longer reaches it: a zombie, a
  // /tmp mounted over) is reported again through another live process of its mount namespace
  // that still reaches it, so that the watch can be re-pointed.
  auto d = dirs_.find(key);
  if (d == dirs_.end()) return;
  ForeignDir& dir = d->second;
  size_t tried = 0;
  for (const os::ProcessCatalog::Entry* e : catalog_.InMountNamespace(dir.mnt_ns)) {
    if (e->host_pid == former) continue;
    if (tried++ >= kMaxReporterCandidates) break;
    auto t = tracked_.find(e->host_pid);
    if (t == tracked_.end() || t->second.dirs.size() >= kMaxDirsPerProcess) continue;
    FileKey seen;
    std::string path;
    if (!ForeignTmp(e->host_pid, &seen, &path) || seen != key) continue;
    dir.reporter = e->host_pid;
    dir.pid_ns = e->pid_ns;
    dir.path = path;
    t->second.dirs.push_back(key);
    ++stats_.foreign_dirs_reported;
    if (handlers_.on_foreign_dir) {
      handlers_.on_foreign_dir(e->host_pid, e->pid_ns, e->mnt_ns, path);
    }
    return;
  }
  const std::string path = dir.path;
  dirs_.erase(d);
  if (handlers_.on_foreign_dir_gone) handlers_.on_foreign_dir_gone(path);
}

void ProcessScanner::Forget(uint32_t pid, Tracked& t) {
  if (t.checks > 0) due_.erase({t.due_ns, pid});
  check_cost_ns_ -= t.cost_ns;
  t.cost_ns = 0;
  for (const FileKey& key : t.markers) {
    auto m = markers_.find(key);
    if (m != markers_.end() && --m->second.mappers == 0) markers_.erase(m);
  }
  t.markers.clear();
}

void ProcessScanner::Check(uint32_t pid, Tracked& t, uint64_t now_ns) {
  const uint64_t started = MonotonicNowNs();
  // A process may have changed its mount namespace since it was catalogued (unshare, setns: a
  // container starting). At the first check the catalog has just read it.
  if (t.checks++ > 0) {
    if (const os::ProcessCatalog::Entry* e = catalog_.Update(pid);
        e != nullptr && e->start_ticks == t.start_ticks) {
      t.mnt_ns = e->mnt_ns;
    }
  }
  SmallFileOptions options;
  options.max_bytes = options_.max_maps_bytes;
  if (auto maps = os::ReadSmallFile(ProcPath(pid, "/maps"), options)) {
    ++stats_.maps_reads;
    stats_.maps_bytes += maps->bytes.size();
    CheckMarkers(pid, t, maps->bytes);
  } else {
    ++stats_.maps_skipped;
  }
  if (t.mnt_ns != catalog_.self_mnt_ns()) CheckForeignTmp(pid, t);
  const uint64_t cost = MonotonicNowNs() - started;
  check_cost_ns_ += cost - t.cost_ns;
  t.cost_ns = cost;
  Schedule(pid, t, now_ns);
}

void ProcessScanner::CheckMarkers(uint32_t pid, Tracked& t, const std::string& maps) {
  const std::string lines = CandidateLines(maps, 4 * options_.max_markers_per_process);
  if (lines.empty()) return;
  for (const os::MarkerMapping& m : os::JitdumpMappings(lines)) {
    const FileKey key{m.dev, m.ino};
    if (std::find(t.markers.begin(), t.markers.end(), key) != t.markers.end()) continue;
    if (t.markers.size() >= options_.max_markers_per_process) break;
    auto known = markers_.find(key);
    if (known != markers_.end()) {  // reported already (a fork of its writer maps it too)
      ++known->second.mappers;
      t.markers.push_back(key);
      continue;
    }
    std::string unanswered;
    const std::string path = MarkerOpenPath(pid, m, &unanswered);
    if (path.empty()) {
      // Tried again at the next check. Said once per process and file: the filesystem is not
      // asked again for a while, and its later refusals say nothing new.
      if (!unanswered.empty()) {
        const bool said =
            std::find(t.unanswered.begin(), t.unanswered.end(), key) != t.unanswered.end();
        if (!said) t.unanswered.push_back(key);
        const log::Level level = said ? log::Level::kDebug : log::Level::kWarning;
        if (log::Enabled(level)) {
          log::Write(level, log::Cat("pid ", pid, " maps the jitdump ", m.path,
                                     ": not followed now: ", unanswered));
        }
      }
      continue;
    }
    markers_[key].mappers = 1;
    t.markers.push_back(key);
    ++stats_.markers_reported;
    if (handlers_.on_marker) handlers_.on_marker(pid, path, m.dev, m.ino);
  }
}

void ProcessScanner::CheckForeignTmp(uint32_t pid, Tracked& t) {
  FileKey key{0, 0};
  std::string path;
  const bool reached = ForeignTmp(pid, &key, &path);
  // Directories reported through this process that it no longer reaches go to another one.
  for (size_t i = 0; i < t.dirs.size();) {
    const FileKey old = t.dirs[i];
    if (reached && old == key) {
      ++i;
      continue;
    }
    t.dirs.erase(t.dirs.begin() + static_cast<ptrdiff_t>(i));
    auto d = dirs_.find(old);
    if (d != dirs_.end() && d->second.reporter == pid) Reroute(old, pid);
  }
  if (!reached || key == own_tmp_ || dirs_.count(key) > 0) return;
  if (t.dirs.size() >= kMaxDirsPerProcess) return;
  dirs_[key] = {pid, t.pid_ns, t.mnt_ns, path};
  t.dirs.push_back(key);
  ++stats_.foreign_dirs_reported;
  if (handlers_.on_foreign_dir) handlers_.on_foreign_dir(pid, t.pid_ns, t.mnt_ns, path);
}

uint64_t ProcessScanner::SteadyPeriod() const {
  const double share = options_.steady_core_share > 0 ? options_.steady_core_share : 1;
  const double needed = static_cast<double>(check_cost_ns_) / share;
  // At most a day: a re-check per process per day whatever the host.
  const double longest = 86400e9;
  const double period = std::min(longest, std::max(needed, double(options_.steady_recheck_ns)));
  return static_cast<uint64_t>(period);
}

void ProcessScanner::Schedule(uint32_t pid, Tracked& t, uint64_t now_ns) {
  const uint64_t age = now_ns - t.born_ns;
  uint64_t due = 0;
  for (uint64_t young : options_.young_ages_ns) {
    if (young > age) {
      due = t.born_ns + young;
      break;
    }
  }
  if (due == 0) {
    // Old: every steady_recheck_ns, at a pseudo-random point so that the processes found by
    // one scan (the daemon's start) spread over the whole period, and later ±25%.
    const uint64_t r = Mix(uint64_t{pid} << 32 ^ t.checks ^ t.start_ticks) % 1000;
    const uint64_t period = SteadyPeriod();
    due =
        now_ns + (t.checks == 1 ? period * (r + 1) / 1000 : period / 4 * 3 + period / 2 * r / 1000);
  }
  t.due_ns = due;
  due_.emplace(due, pid);
}

}  // namespace jitsym::ingest
