// Thread ids of the indexed processes, remembered while they live so that a lookup by a thread
// id (what `perf script` prints by default for a multi-threaded process) can be answered after
// the process has exited, when /proc no longer says which process a thread belonged to.
//
// The ingester's maintenance tick lists /proc/PID/task of every live incarnation that has side
// files (about once a second) and once more when an exit is noticed. A thread that starts and
// ends between two looks is never seen: a lookup by its id is answered while the process lives
// (the query side asks /proc which process the thread belongs to), not after.
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
};

class ThreadTracker {
 public:
  using Options = ThreadTrackerOptions;
  // The thread ids of process `pid` now (at most `limit`, any order; empty if it is gone).
  using ListThreads = std::function<std::vector<uint32_t>(uint32_t pid, size_t limit)>;
  // Whether `inc`'s process still holds its pid (the same start time): a list read after the
  // pid was reused would be another process's threads.
  using StillHolds = std::function<bool(const Incarnation& inc)>;

  ThreadTracker(Options options, ListThreads list, StillHolds still_holds)
      : options_(options), list_(std::move(list)), still_holds_(std::move(still_holds)) {}
  // The daemon's: /proc/PID/task, and the probe's identities.
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
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_THREAD_TRACKER_H_
