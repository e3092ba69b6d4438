// Thread ids of the indexed processes, remembered while they live so that a lookup by a thread
// id (what `perf script` prints by default for a multi-threaded process) can be answered after
// the process has exited, when /proc no longer says which process a thread belonged to.
//
// The ingester's maintenance tick lists /proc/PID/task of the live incarnations that have side
// files (about once a second) and once more when an exit is noticed (by then the threads have
// usually gone: a pidfd signals once all have exited). Listing costs about 1 us per thread
// (the kernel builds a dentry per entry), so a process whose threads did not change is looked
// at less often, up to every `max_interval` ticks, and every tick again once it starts one. A
// thread that starts and ends between two looks is never seen: a lookup by its id is answered
// while the process lives (the query side asks /proc which process the thread belongs to), not
// after.
//
// Bounded: at most `per_process` ids per incarnation and `total` over all of them (a process
// spawning threads without end must not grow the daemon without end); ids beyond a bound are
// not remembered. /proc is reached through the functions given, so tests use made-up ones.
#ifndef JITSYM_DAEMON_INGEST_THREAD_TRACKER_H_
#define JITSYM_DAEMON_INGEST_THREAD_TRACKER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "daemon/ingest/process_table.h"

namespace jitsym::ingest {

struct ThreadTrackerOptions {
  size_t per_process = 65536;
  size_t total = 1 << 20;  // 4 MiB of ids
  // A process whose threads did not change is looked at after 2, 4, ... up to this many ticks.
  uint32_t max_interval = 8;
};

class ThreadTracker {
 public:
  using Options = ThreadTrackerOptions;
  // The thread ids of process `pid` now (at most `limit`, any order; empty if it is gone).
  using ListThreads = std::function<std::vector<uint32_t>(uint32_t pid, size_t limit)>;
  // Whether `inc`'s process still holds its pid, asked after the list was read: a list read
  // after the pid was reused would be another process's threads.
  using StillHolds = std::function<bool(Incarnation& inc)>;

  ThreadTracker(Options options, ListThreads list, StillHolds still_holds)
      : options_(options), list_(std::move(list)), still_holds_(std::move(still_holds)) {}
  // The daemon's: /proc/PID/task; the process still holds its pid if its pidfd has not signalled
  // the exit (a poll), or, without a pidfd, if /proc shows the same start time.
  explicit ThreadTracker(ProcessTable::Probe& probe, Options options = {});

  // Looks at every live incarnation with files. An incarnation that learned new ids is marked
  // changed (to be published); returns whether any was.
  bool Tick(ProcessTable::Map& processes);
  // One incarnation, e.g. when its exit is noticed (its last threads, if it is still there).
  // Returns whether it learned new ids.
  bool Look(Incarnation& inc, ProcessTable::Map& processes);

  const Options& options() const { return options_; }

 private:
  bool Add(Incarnation& inc, std::vector<uint32_t> tids, size_t room);
  static size_t Remembered(const ProcessTable::Map& processes);

  Options options_;
  ListThreads list_;
  StillHolds still_holds_;
  uint64_t tick_ = 0;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_THREAD_TRACKER_H_
