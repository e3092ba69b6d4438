// The daemon's side of the worker processes that make calls on guarded filesystems
// (fs_worker_process.h has why they are processes; mounts.h which filesystems). A caller hands
// a request and the mount it concerns and waits at most `timeout` for the answer; then it goes
// on with an error naming what was asked and the filesystem, and the worker is killed and
// forgotten (it dies when its request ends, which may be never).
//
// Bounds, so that one user cannot tie up the daemon one file at a time:
//  - at most one call on the mounts of one owner (a FUSE mount's user_id) is waited for at a
//    time: another, from another thread, fails at once. The ingest thread and the query
//    threads are shared; so a user's servers hold at most one of them, for at most `timeout`;
//  - a mount that did not answer is not asked again for a while (30 s, doubling at each
//    further silence up to 15 min; an answer resets it): calls on it fail at once;
//  - at most `max_stuck` workers may be waiting for answers that did not come, and at most
//    `max_stuck_per_owner` for the mounts of one owner (a FUSE mount's user_id): beyond, calls
//    on that owner's mounts fail at once until one of them ends;
//  - at most `idle` workers wait for work; the rest exit.
// Thread-safe: the ingest thread and the query threads call it at once, each on its own worker.
#ifndef JITSYM_DAEMON_OS_FS_WORKERS_H_
#define JITSYM_DAEMON_OS_FS_WORKERS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "daemon/os/fs_worker_process.h"
#include "daemon/os/mounts.h"
#include "daemon/os/unique_fd.h"
#include "daemon/util/result.h"

namespace jitsym::os {

class FsWorkers {
 public:
  struct Options {
    std::chrono::milliseconds timeout{1000};
    size_t max_stuck = 8;
    size_t max_stuck_per_owner = 1;
    size_t max_waiting_per_owner = 1;
    std::chrono::milliseconds backoff{30000};
    std::chrono::milliseconds max_backoff{15 * 60 * 1000};
    size_t idle = 2;
    // A worker that did not answer is killed (it dies once its request ends). Tests turn this
    // off to stand in for workers that do not die (a FUSE request the server has read).
    bool kill_stuck = true;
  };

  struct Answer {
    std::unique_ptr<fsworker::Reply> reply;  // reply->error: the filesystem's errno, or 0
    UniqueFd fd;                             // the O_PATH descriptor of kLookUp
  };

  struct Stats {
    uint64_t calls = 0;
    uint64_t unanswered = 0;  // timed out
    uint64_t refused = 0;     // not asked: backing off, too many stuck, or the owner's turn taken
    size_t stuck = 0;         // workers waiting for answers that did not come, now
  };

  // The process's pool (default options).
  static FsWorkers& Shared();

  explicit FsWorkers(Options options);
  ~FsWorkers();
  FsWorkers(const FsWorkers&) = delete;
  FsWorkers& operator=(const FsWorkers&) = delete;

  // Forks the zygote now, while the process is small (it stays as large as the process was).
  // Otherwise the first Call does.
  void Prepare();

  // Runs `request` in a worker with `fds` passed (at most two). `what` says what is asked, for
  // the error and the log ("stat /home/bob/mnt/jit-1.dump"). An error means the filesystem
  // was not asked (backing off, too many stuck, no worker) or did not answer in time.
  Result<Answer> Call(const Mount& fs, const std::string& what, const fsworker::Request& request,
                      std::span<const int> fds);

  Stats stats();
  const Options& options() const { return options_; }

 private:
  struct Worker {
    UniqueFd sock;
    UniqueFd pidfd;
  };
  struct Stuck {
    UniqueFd pidfd;
    uint32_t owner = 0;
    uint64_t fs = 0;
  };
  struct Silence {
    int level = 0;          // silences in a row
    uint64_t until_ns = 0;  // not asked before (CLOCK_MONOTONIC)
  };

  // Forgets stuck workers that have exited. Under mu_.
  void ReapLocked();
  bool SpawnLocked(Worker* out, std::string* why);
  static uint32_t OwnerOf(const Mount& fs);

  Options options_;
  std::mutex mu_;
  pid_t zygote_pid_ = -1;
  UniqueFd zygote_;
  bool zygote_failed_ = false;
  std::vector<Worker> idle_;
  std::vector<Stuck> stuck_;
  std::map<uint64_t, Silence> silent_;  // by the mount's device
  std::map<uint32_t, size_t> waiting_;  // calls being waited for, by owner
  Stats stats_;
};

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_FS_WORKERS_H_
