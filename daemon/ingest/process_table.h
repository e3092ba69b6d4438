// The process table: which incarnations of each pid the daemon knows, whether each is alive, and
// which exited ones retention and the memory budget evict. A pid names a process only until it is
// reused, so files are attached to an incarnation (pid + start time), not to a pid.
//
// What the table learns about processes comes through a Probe: /proc and pidfds in the daemon
// (PidfdProbe below), made-up identities in tests. The table itself opens nothing.
#ifndef JITSYM_DAEMON_INGEST_PROCESS_TABLE_H_
#define JITSYM_DAEMON_INGEST_PROCESS_TABLE_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/os/namespaces.h"
#include "daemon/os/proc.h"
#include "daemon/security/limits.h"
#include "daemon/util/clock.h"

namespace jitsym::ingest {

struct FollowedFile;

struct Incarnation {
  uint32_t pid = 0;
  uint64_t id = 0;
  std::optional<uint64_t> start_ticks;
  std::optional<uint64_t> start_time;  // CLOCK_MONOTONIC ns
  std::optional<uint64_t> exit_time;
  std::optional<uint32_t> uid;           // owner, from /proc while the process was seen alive
  std::optional<os::NamespaceFacts> ns;  // read while it was seen alive
  bool alive = false;
  bool changed = true;  // its view must be built again
  std::vector<FollowedFile*> files;
  std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd;
  std::shared_ptr<const index::ProcessView> view;
  // Thread ids seen in the process while it lived, sorted (ThreadTracker, thread_tracker.h).
  index::ThreadIds threads;
  struct ThreadLooks {
    uint32_t interval = 1;   // ticks between looks
    uint64_t next_tick = 0;  // the tracker's tick of the next look
  } thread_looks;
  // When the daemon created it: the retention of a process that had already exited when its
  // files were found (e.g. after a restart) runs from here.
  uint64_t created_ns = MonotonicNowNs();
  bool restored = false;  // made by ProcessTable::Exited
};

class ProcessTable {
 public:
  // Where facts about processes come from.
  class Probe {
   public:
    virtual ~Probe() = default;
    // The process holding `pid` now: its identity, none, or that it could not be told.
    virtual os::ProcessLookup Identity(uint32_t pid) = 0;
    // A start time in ticks since boot, as CLOCK_MONOTONIC ns.
    virtual uint64_t StartNs(uint64_t start_ticks) = 0;
    // A new live incarnation: notice its exit from now on (may mark it exited at once when the
    // pid turns out to have been reused meanwhile).
    virtual void Watch(Incarnation& inc) = 0;
    // Whether the exit of a watched incarnation has been signalled (not yet handled).
    virtual bool ExitSignalled(Incarnation& inc) = 0;
    // Stops watching (the exit was handled, or the incarnation is dropped).
    virtual void Unwatch(Incarnation& inc) = 0;
    // Whether the incarnation is watched (its exit is notified rather than polled).
    virtual bool Watched(const Incarnation& inc) const = 0;
  };

  explicit ProcessTable(Probe& probe) : probe_(probe) {}

  // The incarnation of the process holding `pid` now: the live one with its start time, or a
  // new one (the pid was reused, or first seen). Without a live process, a new incarnation
  // without identity (files of root's for a pid that does not exist).
  Incarnation* Live(uint32_t pid);
  // For files believed as the side files of an earlier, exited process of `pid` owned by
  // `uid`: one such incarnation per owner, oldest of the pid; never the live process, which
  // (`live`, if any) gets its own incarnation too.
  Incarnation* Exited(uint32_t pid, const std::optional<os::ProcessIdentity>& live, uint32_t uid);
  // The exit of `inc` was noticed: marks it exited (now, unless it already was) and stops
  // watching it.
  void MarkExited(Incarnation& inc);
  // Live incarnations that are not watched (their owner's descriptor quota was full) and whose
  // process is gone: polled by the maintenance tick.
  std::vector<Incarnation*> ExitedUnwatched();

  struct Eviction {
    uint32_t pid;
    Incarnation* inc;
    const char* why;
  };
  // Exited incarnations (whose exit was handled) to evict at `now`: those past `retention_ns`
  // (0: none), then, oldest exit first, while `total_memory` is above `budget` (0: none);
  // `memory_of` says what evicting one frees. *memory_after: the total left.
  std::vector<Eviction> PlanEvictions(uint64_t now, uint64_t retention_ns, uint64_t budget,
                                      uint64_t total_memory,
                                      const std::function<uint64_t(const Incarnation&)>& memory_of,
                                      uint64_t* memory_after) const;
  // Drops `inc` (its files must be detached by the caller).
  void Remove(uint32_t pid, const Incarnation* inc);
  // The pids that Remove dropped an incarnation of since the last call (the next view sets
  // them again). The map's other writers only add incarnations, marked changed.
  std::vector<uint32_t> TakeRemoved() { return std::exchange(removed_, {}); }
  void UnwatchAll();

  // Incarnations of each pid, oldest first.
  using Map = std::map<uint32_t, std::vector<std::unique_ptr<Incarnation>>>;
  Map& processes() { return processes_; }
  const Map& processes() const { return processes_; }
  size_t exited_count() const;

 private:
  // Polls the exit of a live incarnation; marks it exited if it has.
  bool HasExited(Incarnation& inc);
  static void SetExited(Incarnation& inc);

  Probe& probe_;
  Map processes_;
  std::vector<uint32_t> removed_;
  uint64_t next_id_ = 1;
};

// The daemon's probe: /proc for identities, a pidfd per live incarnation for its exit. A pidfd
// is a descriptor like a followed file's: charged to the process's owner in `ledger`, so that
// one user's many processes cannot take the descriptors either. A process without one is polled
// through /proc instead (ProcessTable::ExitedUnwatched).
class PidfdProbe : public ProcessTable::Probe {
 public:
  PidfdProbe(boost::asio::io_context& io, security::LimitLedger& ledger,
             std::function<void(Incarnation*)> on_exit)
      : io_(io), ledger_(ledger), on_exit_(std::move(on_exit)) {}

  os::ProcessLookup Identity(uint32_t pid) override;
  uint64_t StartNs(uint64_t start_ticks) override;
  void Watch(Incarnation& inc) override;
  bool ExitSignalled(Incarnation& inc) override;
  void Unwatch(Incarnation& inc) override;
  bool Watched(const Incarnation& inc) const override;
  // After this, exit notifications are dropped.
  void Stop() { stopped_ = true; }

 private:
  boost::asio::io_context& io_;
  security::LimitLedger& ledger_;
  std::function<void(Incarnation*)> on_exit_;
  bool stopped_ = false;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_PROCESS_TABLE_H_
