// The ingester's run-time reconfiguration and the lifecycle of exited processes: retention, the
// memory budget and eviction (see ingester.h).
//
// An exited incarnation stays indexed for `retention_ms` after its exit (or after the daemon
// found it, if it had exited before), so that `perf script` run after the workload still
// resolves; then it is evicted: its files are closed and its code ranges and names freed once
// no query holds the view any more. When the index is larger than `memory_budget_bytes`, exited
// incarnations are evicted before their time, oldest exit first. Running processes and image
// files are never evicted.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/ingest/ingester.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {
namespace {

constexpr uint64_t kPruneEvictedEveryNs = 60ull * 1000000000ull;

bool SameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

}  // namespace

void Ingester::SetWatchDirs(const std::vector<std::string>& dirs) {
  if (stopped_ || !watcher_.open()) return;
  dir_fds_.clear();  // a directory at a watched path may be another one now
  for (const std::string& dir : dirs) DirFd(dir);
  watcher_.SetDirs(dirs);
  options_.watch_dirs = dirs;
  DrainDirty();
}

void Ingester::DrainBacklog() {
  const uint64_t t0 = MonotonicNowNs();
  const uint64_t bytes0 = counters_.bytes_ingested;
  // Bounded in time: files that take longer (huge, or inflating to far more than their size)
  // are read on in turns while the socket is served.
  const uint64_t bound_ns = static_cast<uint64_t>(options_.backlog_ms) * 1000000ull;
  while (!dirty_.empty() && !stopped_ && MonotonicNowNs() - t0 < bound_ns) DrainDirty();
  JITSYM_LOG(kInfo, "initial scan: ", files_.size(), " files, ",
             (counters_.bytes_ingested - bytes0) >> 20, " MiB read in ",
             (MonotonicNowNs() - t0) / 1000000, " ms",
             dirty_.empty() ? "" : "; the rest is read while serving");
}

void Ingester::SetLifecycle(uint64_t retention_ms, uint64_t memory_budget_bytes) {
  options_.retention_ms = retention_ms;
  options_.memory_budget_bytes = memory_budget_bytes;
  over_budget_warned_ = false;
  lifecycle_changed_ = true;
  EvictExpired();
  Publish();
}

bool Ingester::SkipEvicted(const std::string& path, const struct stat& st) {
  auto it = evicted_.find(path);
  if (it == evicted_.end()) return false;
  const EvictedFile& e = it->second;
  if (e.dev == st.st_dev && e.ino == st.st_ino && e.size == st.st_size &&
      SameTime(e.ctime, st.st_ctim)) {
    return true;  // the file of an evicted process, unchanged
  }
  evicted_.erase(it);  // written again since: read it as a new file
  return false;
}

void Ingester::Evict(uint32_t pid, Incarnation* inc, const char* why) {
  JITSYM_LOG(kInfo, "evicting pid ", pid, " incarnation ", inc->id, " (", why, ")");
  for (FollowedFile* f : inc->files) {
    struct stat st {};
    // Remember the file as it is, so that a rescan does not read it again.
    const bool exists = f->fd >= 0 ? StatOpen(*f, &st) : LstatPath(f->path, &st);
    auto at_path = by_path_.find(f->path);
    const bool current = at_path != by_path_.end() && at_path->second == f;
    if (exists && current && st.st_dev == f->dev && st.st_ino == f->ino) {
      evicted_[f->path] = EvictedFile{st.st_dev, st.st_ino, st.st_size, st.st_ctim};
    }
    CloseFd(*f);
    ledger_.ReleaseBytes(f->uid, f->charged);  // what it held is freed
    Forget(*f);
    dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), f), dirty_.end());
  }
  std::erase_if(files_,
                [inc](const std::unique_ptr<FollowedFile>& f) { return f->incarnation == inc; });
  table_.Remove(pid, inc);
  ++counters_.evictions;
  lifecycle_changed_ = true;
}

void Ingester::EvictExpired() {
  if (stopped_) return;
  const uint64_t now = MonotonicNowNs();
  uint64_t total = 0;
  for (const auto& f : files_) total += f->source->code().memory_bytes();
  const auto memory_of = [](const Incarnation& inc) {
    uint64_t n = 0;
    for (const FollowedFile* f : inc.files) n += f->source->code().memory_bytes();
    return n;
  };
  const uint64_t budget = options_.memory_budget_bytes;
  for (const auto& e : table_.PlanEvictions(now, options_.retention_ms * 1000000ull, budget, total,
                                            memory_of, &total)) {
    Evict(e.pid, e.inc, e.why);
  }
  if (budget > 0) {
    if (total > budget && !over_budget_warned_) {
      over_budget_warned_ = true;
      JITSYM_LOG(kWarning, "the index (", total >> 20, " MiB) is over the memory budget (",
                 budget >> 20,
                 " MiB) with no exited process left to evict; running processes are kept");
    } else if (total <= budget) {
      over_budget_warned_ = false;
    }
  }
  // Forget evicted files that are gone (their deletion may have happened while unwatched).
  if (now - last_evicted_prune_ns_ >= kPruneEvictedEveryNs) {
    last_evicted_prune_ns_ = now;
    std::erase_if(evicted_, [](const auto& entry) {
      struct stat st {};
      return !LstatPath(entry.first, &st);
    });
  }
  if (lifecycle_changed_) Publish();
}

}  // namespace jitsym::ingest
