// Which indexed incarnation a lookup's "pid" names: the one rule every query path (lookups,
// symbols) follows, so that they cannot disagree about which process they are answering for.
//
// The number may be a pid or the id of any thread of a process, since `perf script` prints
// thread ids by default:
// - a pid the index knows names its incarnation alive at the time asked about (the latest one
//   without a time), as IndexView::FindProcess says;
// - a thread id names the incarnation that had that thread: one whose remembered thread ids
//   (ProcessView::threads) hold it and whose lifetime covers the time (the latest without a
//   time), or, for a thread /proc shows now (one created since the ingester last looked), the
//   process /proc says it belongs to.
// Thread ids are reused like pids. With a time, the incarnation alive then decides: the pid's
// own first, then the thread's. Without one, whatever holds the number now wins (a live process
// with that pid, or the live process that has such a thread), then the latest.
//
// Who may see the incarnation found is decided by its owner, as for any process
// (PeerAccess::MaySeeProcess); this only finds it.
#ifndef JITSYM_DAEMON_QUERY_PROCESS_FINDER_H_
#define JITSYM_DAEMON_QUERY_PROCESS_FINDER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "daemon/index/index_view.h"

namespace jitsym::query {

class ProcessFinder {
 public:
  // The process (thread group) a thread id belongs to now; nullopt if no such thread.
  using ThreadGroupOf = std::function<std::optional<uint32_t>(uint32_t tid)>;

  // `id`: the request's "pid". /proc is read at most once, and only when the index does not
  // decide by itself.
  ProcessFinder(const index::IndexView& view, uint32_t id);
  ProcessFinder(const index::IndexView& view, uint32_t id, ThreadGroupOf thread_group_of);

  // The incarnation `id` names at `time` (nullopt: now, or the latest); null if none.
  const index::ProcessView* Find(std::optional<uint64_t> time);
  // The pid whose /proc entries describe `id` now: its thread group when it is a thread of a
  // live process (/proc/TID/maps would do, but a thread's start time and side files, e.g.
  // perfinfo-<pid>.map, are not the process's), else `id` itself.
  uint32_t LivePid();

 private:
  // Incarnations (of other pids) that remembered `id` as one of their threads.
  const std::vector<const index::ProcessView*>& ThreadOwners();
  std::optional<uint32_t> LiveGroup();

  const index::IndexView& view_;
  const uint32_t id_;
  ThreadGroupOf thread_group_of_;
  bool indexed_pid_ = false;
  std::optional<std::vector<const index::ProcessView*>> owners_;
  std::optional<std::optional<uint32_t>> live_group_;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_PROCESS_FINDER_H_
