// Remembering the thread ids of indexed processes: see thread_tracker.h.
#include "daemon/ingest/thread_tracker.h"

#include <algorithm>
#include <iterator>

#include "daemon/os/namespaces.h"

namespace jitsym::ingest {

ThreadTracker::ThreadTracker(ProcessTable::Probe& probe, Options options)
    : ThreadTracker(
          options, [](uint32_t pid, size_t limit) { return os::ListThreads(pid, limit); },
          [&probe](Incarnation& inc) {
            if (probe.Watched(inc)) return !probe.ExitSignalled(inc);
            const auto identity = probe.Identity(inc.pid).identity;
            return identity && inc.start_ticks && identity->start_ticks == *inc.start_ticks;
          }) {}

size_t ThreadTracker::Remembered(const ProcessTable::Map& processes) {
  size_t n = 0;
  for (const auto& [pid, incs] : processes) {
    for (const auto& inc : incs) n += inc->threads.size();
  }
  return n;
}

bool ThreadTracker::Add(Incarnation& inc, std::vector<uint32_t> tids, size_t room) {
  std::sort(tids.begin(), tids.end());
  tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
  std::vector<uint32_t> fresh;
  const std::vector<uint32_t>& known = inc.threads.ids();
  std::set_difference(tids.begin(), tids.end(), known.begin(), known.end(),
                      std::back_inserter(fresh));
  const size_t cap =
      std::min(options_.per_process - std::min(options_.per_process, inc.threads.size()), room);
  if (fresh.size() > cap) fresh.resize(cap);  // the lowest ids: any choice is as good
  if (fresh.empty()) return false;
  std::vector<uint32_t> merged;
  merged.reserve(known.size() + fresh.size());
  std::merge(known.begin(), known.end(), fresh.begin(), fresh.end(), std::back_inserter(merged));
  inc.threads = index::ThreadIds(std::move(merged));
  inc.changed = true;
  return true;
}

bool ThreadTracker::Tick(ProcessTable::Map& processes) {
  ++tick_;
  size_t used = Remembered(processes);
  bool learned = false;
  for (auto& [pid, incs] : processes) {
    for (auto& inc : incs) {
      if (!inc->alive || inc->files.empty() || !inc->start_ticks) continue;
      if (used >= options_.total) return learned;
      if (inc->threads.size() >= options_.per_process) continue;
      Incarnation::ThreadLooks& looks = inc->thread_looks;
      if (tick_ < looks.next_tick) continue;
      const size_t before = inc->threads.size();
      std::vector<uint32_t> tids = list_(inc->pid, options_.per_process);
      // Read after the list: if the pid still names this process, the list was of its threads.
      if (tids.empty() || !still_holds_(*inc)) continue;
      const bool added = Add(*inc, std::move(tids), options_.total - used);
      used += inc->threads.size() - before;
      learned |= added;
      // A process whose threads stay the same is looked at less and less often; one that
      // starts threads, every tick again.
      looks.interval = added ? 1 : std::min<uint32_t>(looks.interval * 2, options_.max_interval);
      looks.next_tick = tick_ + looks.interval;
    }
  }
  return learned;
}

bool ThreadTracker::Look(Incarnation& inc, ProcessTable::Map& processes) {
  if (!inc.start_ticks || inc.threads.size() >= options_.per_process) return false;
  const size_t used = Remembered(processes);
  if (used >= options_.total) return false;
  std::vector<uint32_t> tids = list_(inc.pid, options_.per_process);
  if (tids.empty() || !still_holds_(inc)) return false;
  return Add(inc, std::move(tids), options_.total - used);
}

}  // namespace jitsym::ingest
