// The ingester: watches directories with inotify (through Asio, no polling), follows the files
// the formats recognise as they grow, groups them into process incarnations, notices exits
// through pidfds, and publishes immutable IndexViews for the query threads.
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
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/ingest/source.h"
#include "daemon/os/proc.h"
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
  // A followed file that has not grown for this long gives its descriptor back; the next
  // inotify event for its path reopens it (the same inode only). 0: never.
  int idle_close_ms = 10000;
  // A file that could not be opened for lack of descriptors (EMFILE, ENFILE) or was over its
  // owner's quota of followed files is tried again this often, for up to retry_timeout_ms.
  int retry_ms = 200;
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
  struct Incarnation;
  struct FollowedFile {
    std::string dir;
    std::string name;
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
    uint32_t uid = 0;  // the file's owner
    // Facts of the file when it was admitted (the trust rule may be applied again when an
    // .mlpd's header names its pid).
    uint64_t ctime_ns = 0;
    uint64_t nlink = 1;
    bool found_at_startup = false;
    int fd = -1;
    // Descriptor given back while the file is idle (state still "following"); reopened by
    // path, when the same inode is there, on the next event.
    bool parked = false;
    // Finish as "closed" once everything is read (its process exited).
    bool close_when_drained = false;
    // ctime when it was finished: a later change at the same inode makes it a new file.
    timespec finished_ctime{};
    uint64_t offset = 0;  // next file offset to read
    uint64_t bytes_read = 0;
    uint64_t charged = 0;  // bytes charged to the limits: read plus decoded
    // The last bytes read and where they were: still there, or the file was rewritten.
    uint8_t tail[32] = {};
    size_t tail_len = 0;
    uint64_t tail_offset = 0;
    uint64_t checked_size = 0;  // file size when the tail was last checked
    // The first bytes read: a rewrite whose tail happens to match (code bytes, padding) still
    // differs at the start (header timestamp, first names).
    uint8_t head[64] = {};
    size_t head_len = 0;
    std::string state = "following";
    std::unique_ptr<Source> source;
    Incarnation* incarnation = nullptr;
    std::optional<std::string> image;  // image sources
    bool dirty = false;
    bool changed = true;
    uint64_t last_data_ns = 0;
    std::shared_ptr<const index::SourceView> view;
  };
  struct Incarnation {
    uint32_t pid = 0;
    uint64_t id = 0;
    std::optional<uint64_t> start_ticks;
    std::optional<uint64_t> start_time;
    std::optional<uint64_t> exit_time;
    std::optional<uint32_t> uid;  // owner, from /proc while the process was seen alive
    bool alive = false;
    bool changed = true;
    std::vector<FollowedFile*> files;
    std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd;
    std::shared_ptr<const index::ProcessView> view;
    // When the daemon created it: the retention of a process that had already exited when its
    // files were found (e.g. after a restart) runs from here.
    uint64_t created_ns = MonotonicNowNs();
    bool restored = false;  // made by ExitedIncarnationFor
  };
  // A file whose process was evicted, as it was then: the same file is not read again by a
  // rescan, but one rewritten since (a new process with the same pid) is.
  struct EvictedFile {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    timespec ctime{};  // not mtime: its owner sets that at will
  };

  void AddWatch(const std::string& dir);
  void ReadEvents();
  void Scan(const std::string& dir);
  void Discover(const std::string& dir, const std::string& name);
  Incarnation* IncarnationFor(uint32_t pid);
  void WatchExit(Incarnation& inc);
  // The process exited: read what it wrote last, close its files.
  void OnExited(Incarnation* inc);
  // Exits of live processes that have no pidfd (their owner's descriptor quota was full).
  void PollExits();
  // Polls the incarnation's pidfd: true (and marks it exited) if the process has exited.
  bool HasExited(Incarnation& inc);
  void MarkDirty(FollowedFile& file);
  void DrainDirty();
  // Posts one DrainDirty to the loop unless one is already posted.
  void PostDrain();
  // Reads what is new in the file; returns true if it stopped on its budget with more to read.
  bool Drain(FollowedFile& file);
  // Whether the file open as `fd` (now `size` bytes) no longer holds what `file` read from it:
  // truncated below it, or its first or last bytes read differ.
  static bool Rewritten(const FollowedFile& file, int fd, uint64_t size);
  void Finish(FollowedFile& file, const std::string& state);
  void Forget(FollowedFile& file);
  void Publish();
  void ScheduleMaintenance();
  // File trust and limits (daemon/security): whether a newly opened file may be followed.
  // Sets *exited when the file is believed as the side file of a process that exited while
  // the daemon was not running (see FromExitedProcess).
  struct Admitted {
    bool exited = false;                          // an earlier, exited process of the pid
    std::optional<os::ProcessIdentity> identity;  // the live process judged against
  };
  bool Admit(const std::string& dir, const std::string& name, const std::string& path,
             std::optional<uint32_t> pid, const struct stat& st, Admitted* out);
  // The facts security::JudgeAdmission decides on.
  security::FileFacts FileFactsOf(const struct stat& st) const;
  static std::optional<security::ProcessFacts> ProcessFactsOf(
      const std::optional<os::ProcessIdentity>& identity);
  // The incarnation for such files: exited, owned by the files' owner, never the live process.
  // `live`: the process holding the pid now, if any (it gets its own incarnation too).
  Incarnation* ExitedIncarnationFor(uint32_t pid, const std::optional<os::ProcessIdentity>& live,
                                    uint32_t uid);
  void RecheckPending();
  void ArmPendingTimer();
  // Remembers a refused file so that its further modifications are not logged again.
  void Ignore(const std::string& path, const struct stat& st);
  bool Ignored(const std::string& path, const struct stat& st) const;
  void CloseFd(FollowedFile& file);
  // Idle descriptors (see IngesterOptions::idle_close_ms).
  void Park(FollowedFile& file);
  // Gives the parked file the descriptor `fd` (opened on its path; `st` its fstat) if it is the
  // same inode and its owner has room; takes `fd` either way (closes it on failure).
  bool Unpark(FollowedFile& file, int fd, const struct stat& st);
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
  void FillLifecycleCounters(index::IndexCounters& counters) const;

  boost::asio::io_context& io_;
  IngesterOptions options_;
  index::ViewCell& cell_;
  int inotify_fd_ = -1;
  std::unique_ptr<boost::asio::posix::stream_descriptor> inotify_;
  std::vector<char> event_buf_;
  std::unordered_map<int, std::string> watch_dirs_;  // wd -> dir
  std::vector<std::unique_ptr<FollowedFile>> files_;
  std::unordered_map<std::string, FollowedFile*> by_path_;  // files currently at that path
  std::map<uint32_t, std::vector<std::unique_ptr<Incarnation>>> processes_;
  uint64_t next_incarnation_ = 1;
  std::vector<FollowedFile*> dirty_;
  bool drain_posted_ = false;
  bool publish_pending_ = false;
  bool stopped_ = false;
  const uint64_t started_realtime_ns_ = NowNs(CLOCK_REALTIME);
  std::vector<uint8_t> read_buf_;
  boost::asio::steady_timer maintenance_;
  uint64_t bytes_ingested_ = 0;
  uint64_t files_failed_ = 0;
  // Files waiting for their pid to appear: path -> (inode, give-up time).
  struct Pending {
    std::string dir, name;
    dev_t dev = 0;
    ino_t ino = 0;
    uint64_t deadline_ns = 0;
    uint32_t uid = 0;  // the file's owner
  };
  std::unordered_map<std::string, Pending> pending_;
  std::unordered_map<std::string, std::pair<dev_t, ino_t>> ignored_;
  struct Retrying {
    std::string dir, name;
    uint32_t uid = 0;
    uint64_t deadline_ns = 0;
    bool again = false;  // refused again by the last attempt
  };
  std::unordered_map<std::string, Retrying> retry_;  // by path
  std::unordered_map<uint32_t, size_t> retry_per_user_;
  boost::asio::steady_timer retry_timer_;
  bool retry_timer_armed_ = false;
  bool startup_scan_ = false;  // Start's scan is running
  boost::asio::steady_timer pending_timer_;
  bool pending_timer_armed_ = false;
  security::LimitLedger ledger_;
  uint64_t files_untrusted_ = 0;
  uint64_t files_over_limit_ = 0;
  std::unordered_map<std::string, EvictedFile> evicted_;  // by path
  uint64_t evictions_ = 0;
  uint64_t last_evicted_prune_ns_ = 0;
  bool lifecycle_changed_ = true;  // publish even if no source changed
  bool over_budget_warned_ = false;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_INGESTER_H_
