// Finding the incarnation a pid or thread id names: see process_finder.h.
#include "daemon/query/process_finder.h"

#include <unistd.h>

#include <algorithm>

#include "daemon/os/namespaces.h"
#include "daemon/os/proc.h"

namespace jitsym::query {
namespace {

// Whether the incarnation lived at `time`. Its exit time is when the daemon noticed the exit,
// a little after it.
bool Covers(const index::ProcessView& p, uint64_t time) {
  if (!p.start_time || *p.start_time > time) return false;
  return !p.exit_time || time <= *p.exit_time;
}

// Later incarnations first: by start time, then by discovery.
bool Later(const index::ProcessView* a, const index::ProcessView* b) {
  const uint64_t sa = a->start_time.value_or(0), sb = b->start_time.value_or(0);
  if (sa != sb) return sa > sb;
  return a->incarnation > b->incarnation;
}

// The daemon's: most ids asked about are processes, which pidfd_open(2) tells without reading
// /proc/ID/status (it accepts only a thread-group leader); the rest read their Tgid.
std::optional<uint32_t> LiveThreadGroupOf(uint32_t tid) {
  const int fd = os::OpenPidfd(tid);
  if (fd >= 0) {
    ::close(fd);
    return tid;
  }
  return os::ThreadGroupOf(tid);
}

}  // namespace

ProcessFinder::ProcessFinder(const index::IndexView& view, uint32_t id)
    : ProcessFinder(view, id, &LiveThreadGroupOf) {}

ProcessFinder::ProcessFinder(const index::IndexView& view, uint32_t id,
                             ThreadGroupOf thread_group_of)
    : view_(view), id_(id), thread_group_of_(std::move(thread_group_of)) {
  const auto* incarnations = view.processes.Find(id);
  indexed_pid_ = incarnations != nullptr && !incarnations->empty();
}

const std::vector<const index::ProcessView*>& ProcessFinder::ThreadOwners() {
  if (!owners_) {
    owners_.emplace();
    view_.processes.ForEach([&](uint32_t pid, const auto& incs) {
      if (pid == id_) return;  // its main thread: the pid's own incarnations
      for (const auto& p : incs) {
        if (p->threads.contains(id_)) {
          owners_->push_back(p.get());
        }
      }
    });
    std::sort(owners_->begin(), owners_->end(), Later);
  }
  return *owners_;
}

std::optional<uint32_t> ProcessFinder::LiveGroup() {
  if (!live_group_) live_group_ = thread_group_of_ ? thread_group_of_(id_) : std::nullopt;
  return *live_group_;
}

uint32_t ProcessFinder::LivePid() { return LiveGroup().value_or(id_); }

const index::ProcessView* ProcessFinder::Find(std::optional<uint64_t> time) {
  if (!time) {
    // What holds the number now.
    const index::ProcessView* latest =
        indexed_pid_ ? view_.FindProcess(id_, std::nullopt) : nullptr;
    if (latest != nullptr && latest->alive) return latest;
    if (const std::optional<uint32_t> group = LiveGroup()) {
      if (*group == id_) return latest;  // a process with that pid (maybe not indexed)
      const index::ProcessView* p = view_.FindProcess(*group, std::nullopt);
      // A thread of a live process the index knows nothing of (yet) is not an exited one's.
      return p != nullptr && p->alive ? p : nullptr;
    }
    if (latest != nullptr) return latest;
    const auto& owners = ThreadOwners();
    return owners.empty() ? nullptr : owners.front();
  }
  // The pid's own incarnation alive then.
  const index::ProcessView* as_pid = indexed_pid_ ? view_.FindProcess(id_, time) : nullptr;
  if (as_pid != nullptr && Covers(*as_pid, *time)) return as_pid;
  // An incarnation that had the thread and lived then (the latest, if several did).
  const auto& owners = ThreadOwners();
  for (const index::ProcessView* p : owners) {
    if (Covers(*p, *time)) return p;
  }
  // A thread the ingester has not seen yet: the process it belongs to now, if that lived then.
  const index::ProcessView* live = nullptr;
  if (const std::optional<uint32_t> group = LiveGroup(); group && *group != id_) {
    live = view_.FindProcess(*group, time);
  }
  if (live != nullptr && Covers(*live, *time)) return live;
  // Nothing lived then by the recorded times, which are approximate (a start time may be the
  // first record's): the pid's, as a lookup of a pid always was, else the live thread's.
  if (as_pid != nullptr) return as_pid;
  if (live != nullptr) return live;
  // A thread's incarnation that had started by then, else the earliest.
  for (const index::ProcessView* p : owners) {
    if (p->start_time && *p->start_time <= *time) return p;
  }
  return owners.empty() ? nullptr : owners.back();
}

}  // namespace jitsym::query
