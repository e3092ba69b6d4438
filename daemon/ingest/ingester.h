// The ingester: follows the files the formats recognise as they grow, groups them into process
// incarnations, and publishes immutable IndexViews for the query threads. It coordinates parts
// that each do one thing:
//   Watcher          (watcher.h)          inotify events, start-up scan, rescans, watch dirs;
//   AdmissionPolicy  (admission_policy.h) which files are believed, as which process;
//   FollowedFile     (followed_file.h)    the read loop, rewrite and truncation detection;
//   ProcessTable     (process_table.h)    incarnations, pidfds, exits, eviction;
//   ThreadTracker    (thread_tracker.h)   thread ids of live indexed processes;
//   BuildView        (publication.h)      the immutable IndexView.
// What stays here: which file is at which path, the order files are read in (per-owner turns),
// descriptors (idle files give theirs back; retries when there are none) and the timers.
//
// Runs on its own io_context and thread; nothing here is touched by query threads except the
// ViewCell it publishes to.
#ifndef JITSYM_DAEMON_INGEST_INGESTER_H_
#define JITSYM_DAEMON_INGEST_INGESTER_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/ingest/admission_policy.h"
#include "daemon/ingest/followed_file.h"
#include "daemon/ingest/process_scanner.h"
#include "daemon/ingest/process_table.h"
#include "daemon/ingest/publication.h"
#include "daemon/ingest/source.h"
#include "daemon/ingest/thread_tracker.h"
#include "daemon/ingest/watcher.h"
#include "daemon/ingest/writer_probe.h"
#include "daemon/os/guarded_fs.h"
#include "daemon/os/proc.h"
#include "daemon/os/process_catalog.h"
#include "daemon/security/file_trust.h"
#include "daemon/security/limits.h"
#include "daemon/util/clock.h"

namespace jitsym::ingest {

struct IngesterOptions {
  std::vector<std::string> watch_dirs = {"/tmp"};
  size_t read_chunk = 1 << 20;  // bytes per read(2)
  // Bytes one file may ingest (read, and inflate when compressed) before others get a turn.
  size_t drain_budget = 32u << 20;
  int idle_compact_ms = 1000;  // a source idle this long is compacted to one run
  // user_files and total_files come from the descriptor budget (config::ComputeDescriptorBudget,
  // applied by main), so that followed files never take the descriptors the rest needs.
  security::Limits limits;
  // The ledger the limits are charged to, when it is shared with others (main shares it with
  // the query engine); none: the ingester's own, built from `limits`.
  std::shared_ptr<security::LimitLedger> ledger;
  // A followed file that has not grown for this long gives its descriptor back; the next
  // inotify event for its path reopens it (the same inode only). 0: never.
  int idle_close_ms = 10000;
  // A file that could not be opened for lack of descriptors (EMFILE, ENFILE) or was over its
  // owner's quota of followed files is tried again this often, for up to retry_timeout_ms.
  int retry_ms = 200;
  // Discovery of jitdumps through the maps of every process and of containers' /tmp
  // (process_scanner.h): how often /proc is scanned; 0 turns discovery off.
  int discovery_ms = 1000;
  int retry_timeout_ms = 60000;
  // DrainBacklog reads for at most this long; the rest is read in turns while serving.
  int backlog_ms = 10000;
  // A file naming a pid that does not exist (and not root's) waits this long for the process.
  int pending_timeout_ms = 5000;
  // Lifecycle of exited processes (SetLifecycle changes them at run time).
  uint64_t retention_ms = 15 * 60 * 1000;  // kept this long after the exit; 0: no time limit
  uint64_t memory_budget_bytes = 0;        // above this, oldest exits are evicted; 0: none
};

class Ingester {
 public:
  Ingester(boost::asio::io_context& io, IngesterOptions options, index::ViewCell& cell);
  ~Ingester();
  Ingester(const Ingester&) = delete;
  Ingester& operator=(const Ingester&) = delete;

  // Adds the watches, scans what is already there, publishes the first view. Throws
  // std::system_error if inotify is unavailable; a missing watch directory is logged and skipped.
  void Start();
  void Stop();

  // Run-time reconfiguration (SIGHUP), on the ingester's thread. Watches directories that are
  // new (and scans them), stops watching those that are gone; files already followed stay.
  void SetWatchDirs(const std::vector<std::string>& dirs);
  // Reads everything already known to be unread (after Start: every file in the watch
  // directories) before returning, instead of in turns between other events. Call before the
  // ingester's io_context runs, to serve complete answers from the first query.
  void DrainBacklog();
  // New retention and memory budget; applied at once.
  void SetLifecycle(uint64_t retention_ms, uint64_t memory_budget_bytes);

 private:
  // A file event from the watcher, or a file a scan found.
  void OnEvent(const std::string& dir, const std::string& name, uint32_t mask);
  void OnFound(const std::string& dir, const std::string& name);
  // Opens `name` in `dir` and follows it if admitted (a new file, a replacement of a known
  // one, or a parked one coming back).
  void Discover(const std::string& dir, const std::string& name);
  // The process exited: read what it wrote last, close its files.
  void OnExited(Incarnation* inc);
  void MarkDirty(FollowedFile& file);
  void DrainDirty();
  // Posts one DrainDirty to the loop unless one is already posted.
  void PostDrain();
  // Reads what is new in the file; returns true if it stopped on its budget with more to read.
  bool Drain(FollowedFile& file);
  // A file whose name named no process, once its content names one (an .mlpd's header).
  void AttachToContentPid(FollowedFile& file);
  // AttachToContentPid could not judge the file (errno `error`): logged once, tried again.
  void JudgeAgain(FollowedFile& file, int error);
  void Finish(FollowedFile& file, SourceState state);
  void Forget(FollowedFile& file);
  void Publish();
  void ScheduleMaintenance();
  // Whether a newly opened file may be followed (AdmissionPolicy on the file's and its
  // process's facts); sets *exited when it is believed as the side file of an exited process,
  // and *identity to the process holding the pid now (read once, for the admission and the
  // incarnation alike).
  bool Admit(const std::string& dir, const std::string& name, const std::string& path,
             std::optional<uint32_t> pid, const struct stat& st, bool* exited,
             std::optional<os::ProcessIdentity>* identity);
  // Which process wrote the newly opened file named with *pid (security::JudgeWriter): sets
  // *pid to its host pid. False when the file is not followed now: waiting for evidence (asked
  // again by RecheckPending), or left unattached, or refused before.
  bool IdentifyWriter(const std::string& dir, const std::string& name, const std::string& path,
                      const FileMatch& match, const struct stat& st, std::optional<uint32_t>* pid);
  // Discovery (discovery.cc): a jitdump some process maps, a container's /tmp, a directory
  // no live process reaches any more, a process gone.
  void OnMarker(uint32_t host_pid, const std::string& open_path, uint64_t dev, uint64_t ino);
  void OnForeignDir(uint32_t host_pid, uint64_t mnt_ns, const std::string& dir);
  void OnForeignDirGone(const std::string& dir);
  void OnProcessGone(uint32_t host_pid);
  // Files followed in directory `from` are now reached in `to`.
  void RepointDir(const std::string& from, const std::string& to);
  // Opens `name` in `dir` (O_NOFOLLOW; os::OpenedFile: a descriptor, or a mirror for a file on
  // a FUSE filesystem, or an errno). A found directory reached through /proc/PID/root is
  // opened first and must still be the directory that was found (its device and inode): a
  // container's root may turn a component into a symlink, and an absolute symlink there
  // resolves from the daemon's root, into the host's files. An error: the file's filesystem
  // did not answer, or is not asked now (os/fs_workers.h).
  Result<os::OpenedFile> OpenInDir(const std::string& dir, const std::string& name);
  // Whether `old`, opened again as `now`, no longer holds what was read from it (Rewritten).
  bool RewrittenSince(const FollowedFile& old, os::OpenedFile& now);
  // lstat of `path` that never waits on a FUSE filesystem (os/guarded_fs.h): false when it is
  // absent, or its filesystem did not answer or is not asked now.
  static bool LstatPath(const std::string& path, struct stat* st);
  // The stat of what an open `file` reads: its descriptor's, or its mirror's (the file's own).
  static bool StatOpen(const FollowedFile& file, struct stat* st);
  // Found directories inotify could not watch (no watches left, or the kernel refuses one
  // through /proc/PID/root) are read again every maintenance tick instead: their followed
  // files for growth, and their new files (bounded).
  void PollUnwatched();
  // Lists a file whose writer cannot be told (published in the view, logged).
  void Unattach(const std::string& path, uint32_t uid, const std::string& why);
  // Lists a file refused for `pid` (published in the view, bounded; the log says it already).
  void Refuse(const std::string& path, uint32_t uid, uint32_t pid, const std::string& why);
  // Reads the live incarnation's namespaces and container identity.
  void LearnNamespaces(Incarnation& inc);
  FileIdentity IdentityOf(const struct stat& st) const;
  void RecheckPending();
  void ArmPendingTimer();
  void CloseFd(FollowedFile& file);
  // Idle descriptors (see IngesterOptions::idle_close_ms).
  void Park(FollowedFile& file);
  // Gives the parked file the descriptor of `opened` (opened on its path) if it is the same
  // inode and its owner has room; takes it either way (closes it on failure).
  bool Unpark(FollowedFile& file, os::OpenedFile opened);
  void ParkIdle();
  // Finished files that indexed nothing are dropped (an attacker's endless empty or refused
  // files would otherwise accumulate, each with its reading buffers).
  void PruneEmpty();
  // Files to open again later (descriptors exhausted, or over the owner's quota).
  void Retry(const std::string& dir, const std::string& name, const char* why);
  void RecheckRetries();
  void ArmRetryTimer();
  // Retention and memory budget (ingester_lifecycle.cc).
  void EvictExpired();
  void Evict(uint32_t pid, Incarnation* inc, const char* why);
  bool SkipEvicted(const std::string& path, const struct stat& st);

  boost::asio::io_context& io_;
  IngesterOptions options_;
  index::ViewCell& cell_;
  // The limits' ledger, shared with the query threads (which charge what they read for a
  // request to the same owners): options_.ledger, or one of the ingester's own.
  std::shared_ptr<security::LimitLedger> ledger_owner_;
  security::LimitLedger& ledger_;
  Watcher watcher_;
  PidfdProbe probe_;
  ProcessTable table_;
  ThreadTracker threads_{probe_};
  AdmissionPolicy admission_;
  // Every process on the host and the discovery of side files outside the watch directories
  // (discovery.cc).
  os::ProcessCatalog catalog_;
  ProcessScanner scanner_;
  std::unique_ptr<WriterProbe> writer_probe_;
  // Directories watched because a process maps a jitdump in them: the processes that do.
  std::unordered_map<std::string, std::unordered_set<uint32_t>> marker_dirs_;
  std::unordered_set<std::string> foreign_dirs_;  // containers' /tmp, by path
  std::unordered_set<std::string> polled_dirs_;   // found but not watchable: re-checked
  // Directories found in containers' filesystems (/proc/PID/root/...), by path.
  std::unordered_map<std::string, DirContext> dir_context_;
  // Watch directories of ordinary mounts (not FUSE), opened once (O_PATH), their files then
  // opened in one call that never leaves the directory's mount (os/guarded_fs.h): what opening
  // a file cost before, and it needs no descriptor but the file's. Cleared on SetWatchDirs.
  std::unordered_map<std::string, os::PathFd> dir_fds_;
  // The directory `dir` opened for the cache above; null for one on a FUSE mount, or when it
  // cannot be opened now.
  const os::PathFd* DirFd(const std::string& dir);
  std::shared_ptr<const std::vector<index::UnattachedFile>> unattached_;
  std::shared_ptr<const std::vector<index::RefusedFile>> refused_;
  std::vector<std::unique_ptr<FollowedFile>> files_;        // oldest first
  std::unordered_map<std::string, FollowedFile*> by_path_;  // files currently at that path
  std::vector<FollowedFile*> dirty_;                        // to read, in order
  bool drain_posted_ = false;
  bool publish_pending_ = false;
  bool stopped_ = false;
  bool startup_scan_ = false;  // Start's scan is running
  std::vector<uint8_t> read_buf_;
  boost::asio::steady_timer maintenance_;
  boost::asio::steady_timer pending_timer_;
  bool pending_timer_armed_ = false;
  IngestCounters counters_;
  struct Retrying {
    std::string dir, name;
    uint32_t uid = 0;
    uint32_t person = 0;  // ledger_.PersonOf(uid) when it started waiting
    uint64_t deadline_ns = 0;
    bool again = false;  // refused again by the last attempt
  };
  std::unordered_map<std::string, Retrying> retry_;  // by path
  std::unordered_map<uint32_t, size_t> retry_per_person_;
  boost::asio::steady_timer retry_timer_;
  bool retry_timer_armed_ = false;
  // A file whose process was evicted, as it was then: the same file is not read again by a
  // rescan, but one rewritten since (a new process with the same pid) is.
  struct EvictedFile {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    timespec ctime{};  // not mtime: its owner sets that at will
  };
  std::unordered_map<std::string, EvictedFile> evicted_;  // by path
  uint64_t last_evicted_prune_ns_ = 0;
  bool lifecycle_changed_ = true;  // publish even if no source changed
  bool over_budget_warned_ = false;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_INGESTER_H_
