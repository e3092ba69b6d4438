// The published state of the whole index: an immutable tree of views that query threads read
// without locks while the ingester prepares the next one. Only changed parts are rebuilt; the
// rest is shared between consecutive views.
#ifndef JITSYM_DAEMON_INDEX_INDEX_VIEW_H_
#define JITSYM_DAEMON_INDEX_INDEX_VIEW_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/index/code_map.h"
#include "daemon/index/process_map.h"
#include "daemon/util/source_kinds.h"

namespace jitsym::index {

struct SourceView {
  Origin origin = Origin::kUnknown;
  std::string path;
  std::string image;            // image sources: the image name
  std::string image_signature;  // image sources: e.g. an r2rmap's signature (hex)
  SourceState state = SourceState::kFollowing;
  std::string error;
  uint64_t ranges = 0;
  uint64_t memory_bytes = 0;  // of `code`, when the view was built
  uint64_t bytes_read = 0;
  std::optional<uint32_t> owner;    // the file's owner, for followed files
  std::optional<uint64_t> records;  // records parsed, for followed files
  std::shared_ptr<const CodeMapSnapshot> code;
};

// A sorted set of thread ids, immutable and shared: copying one (into each new ProcessView of a
// process whose sources changed) copies a pointer, whatever the number of threads.
class ThreadIds {
 public:
  ThreadIds() = default;
  explicit ThreadIds(std::vector<uint32_t> sorted)
      : ids_(std::make_shared<const std::vector<uint32_t>>(std::move(sorted))) {}
  const std::vector<uint32_t>& ids() const { return ids_ ? *ids_ : Empty(); }
  size_t size() const { return ids().size(); }
  bool empty() const { return ids().empty(); }
  bool contains(uint32_t tid) const { return std::binary_search(ids().begin(), ids().end(), tid); }
  bool operator==(const std::vector<uint32_t>& other) const { return ids() == other; }

 private:
  static const std::vector<uint32_t>& Empty() {
    static const std::vector<uint32_t> empty;
    return empty;
  }
  std::shared_ptr<const std::vector<uint32_t>> ids_;
};

struct ProcessView {
  uint32_t pid = 0;
  uint64_t incarnation = 0;  // unique over the daemon's life, increasing with discovery
  bool alive = false;
  // The process's owner (real uid, from /proc while it lived); nullopt if the daemon never saw
  // it alive (then only root-owned files describe it). Decides who may query it.
  std::optional<uint32_t> uid;
  // Where time-qualified lookups start routing to this incarnation: the process start time
  // (CLOCK_MONOTONIC ns) when known, else its first record's time.
  std::optional<uint64_t> start_time;
  std::optional<uint64_t> exit_time;
  // Namespaces and container identity, read while it was alive (zero/empty: unknown).
  uint32_t nspid = 0;   // its pid in its own pid namespace
  uint64_t pid_ns = 0;  // pid namespace inode
  uint64_t mnt_ns = 0;  // mount namespace inode
  std::string cgroup;   // cgroup v2 path: names the container
  // Thread ids seen in the process while it lived (the main thread's is `pid`), sorted: a
  // lookup by one of them after the exit answers as for this incarnation (ProcessFinder,
  // daemon/query/process_finder.h). Threads that lived between two looks are missing.
  ThreadIds threads;
  // In precedence order: the first source that knows an address answers.
  std::vector<std::shared_ptr<const SourceView>> sources;
};

struct IndexCounters {
  uint64_t files_followed = 0;
  uint64_t files_failed = 0;
  uint64_t bytes_ingested = 0;
  uint64_t records_ingested = 0;
  uint64_t ranges = 0;
  uint64_t memory_bytes = 0;
  uint64_t files_untrusted = 0;   // ignored: owner is neither the process's owner nor root
  uint64_t files_pending = 0;     // waiting for their process to appear (now)
  uint64_t files_over_limit = 0;  // refused or stopped by a limit (daemon/security/limits.h)
  uint64_t files_unattached = 0;  // naming a pid whose writer could not be told (containers)
  // Lifecycle of exited processes.
  uint64_t processes_exited = 0;  // exited incarnations still indexed (within their retention)
  uint64_t evictions = 0;         // incarnations evicted since start (retention or budget)
  uint64_t memory_budget_bytes = 0;
};

// A side file kept out of every process because its writer could not be told
// (daemon/security/writer_rule.h).
struct UnattachedFile {
  std::string path;
  uint32_t uid = 0;  // the file's owner: who (besides root) may see it listed
  std::string reason;
};

// A side file naming a pid that was refused (untrusted owner, waited too long for its process,
// too many waiting): kept so that `explain` can say why the process's file answers nothing.
struct RefusedFile {
  std::string path;
  uint32_t uid = 0;  // the file's owner: who (besides root) may see it listed
  uint32_t pid = 0;  // the pid its name (or header) named
  std::string reason;
};

struct IndexView {
  // Incarnations of each pid, oldest first; shared with the views before this one, except
  // for the pids that changed.
  ProcessMap processes;
  // Image sources by image name (several files may describe one image name: newest first).
  std::map<std::string, std::vector<std::shared_ptr<const SourceView>>> images;
  IndexCounters counters;
  // The newest files left unattached, oldest first (bounded).
  std::shared_ptr<const std::vector<UnattachedFile>> unattached;
  // The newest files refused for a pid, oldest first (bounded).
  std::shared_ptr<const std::vector<RefusedFile>> refused;

  // The incarnation of pid that was alive at `time` (nullopt: the latest one).
  const ProcessView* FindProcess(uint32_t pid, std::optional<uint64_t> time) const;
};

// Holds the current view; readers take a reference and keep it as long as they need.
class ViewCell {
 public:
  ViewCell() : view_(std::make_shared<const IndexView>()) {}
  std::shared_ptr<const IndexView> Get() const {
    std::lock_guard lock(mu_);
    return view_;
  }
  void Set(std::shared_ptr<const IndexView> view) {
    std::lock_guard lock(mu_);
    view_.swap(view);
    // The old view (in `view`) is released outside the lock.
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const IndexView> view_;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_INDEX_VIEW_H_
