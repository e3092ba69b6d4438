// The process table of process_table.h, and the daemon's probe: /proc and pidfds.
#include "daemon/ingest/process_table.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>

namespace jitsym::ingest {

Incarnation* ProcessTable::Live(uint32_t pid) {
  auto& incs = processes_[pid];
  const auto identity = probe_.Identity(pid).identity;
  if (identity) {
    // A live process: the live incarnation with the same start time, or a new one (pid
    // reused). Start times tick at 100 Hz, so a pid reused within 10 ms has the same start
    // time: the old incarnation's pidfd tells whether it is still the same process (its exit
    // notification may not have been handled yet).
    for (auto& inc : incs) {
      if (inc->alive && inc->start_ticks == identity->start_ticks && !HasExited(*inc)) {
        return inc.get();
      }
    }
  }
  auto inc = std::make_unique<Incarnation>();
  inc->pid = pid;
  inc->id = next_id_++;
  if (identity) {
    inc->start_ticks = identity->start_ticks;
    inc->start_time = probe_.StartNs(identity->start_ticks);
    inc->uid = identity->uid;
    inc->alive = true;
    probe_.Watch(*inc);
  }
  // An older incarnation of a reused pid is over by now.
  for (auto& old : incs) {
    if (old->alive && old->start_ticks != inc->start_ticks) {
      old->alive = false;
      old->exit_time = MonotonicNowNs();
      old->changed = true;
    }
  }
  incs.push_back(std::move(inc));
  return incs.back().get();
}

Incarnation* ProcessTable::Exited(uint32_t pid, const std::optional<os::ProcessIdentity>& live,
                                  uint32_t uid) {
  if (live) {
    // The process holding the pid now is known too, even with no file of its own yet: without
    // it the exited one would be the newest incarnation, the one a lookup without a time (and
    // a symbols listing, whose access check is the live process's owner) is answered from.
    Live(pid);
  }
  auto& incs = processes_[pid];
  for (auto& inc : incs) {
    if (inc->restored && inc->uid == uid) return inc.get();  // its jitdump and perf map
  }
  auto inc = std::make_unique<Incarnation>();
  inc->pid = pid;
  inc->id = next_id_++;
  inc->uid = uid;
  inc->restored = true;
  // Oldest first: it ended before anything the daemon has seen of this pid.
  return incs.insert(incs.begin(), std::move(inc))->get();
}

void ProcessTable::SetExited(Incarnation& inc) {
  inc.alive = false;
  inc.exit_time = MonotonicNowNs();
  inc.changed = true;
}

bool ProcessTable::HasExited(Incarnation& inc) {
  if (!probe_.Watched(inc)) return !inc.alive;
  if (!probe_.ExitSignalled(inc)) return false;
  SetExited(inc);
  return true;
}

void ProcessTable::MarkExited(Incarnation& inc) {
  if (inc.alive) {
    SetExited(inc);
  } else {
    inc.changed = true;
  }
  probe_.Unwatch(inc);
}

std::vector<Incarnation*> ProcessTable::ExitedUnwatched() {
  std::vector<Incarnation*> gone;
  for (auto& [pid, incs] : processes_) {
    for (auto& inc : incs) {
      if (!inc->alive || probe_.Watched(*inc)) continue;
      const os::ProcessLookup now = probe_.Identity(inc->pid);
      if (now.error != 0) continue;  // /proc unreadable for the daemon: asked again next time
      if (!now.identity || now.identity->start_ticks != inc->start_ticks) gone.push_back(inc.get());
    }
  }
  return gone;
}

std::vector<ProcessTable::Eviction> ProcessTable::PlanEvictions(
    uint64_t now, uint64_t retention_ns, uint64_t budget, uint64_t total_memory,
    const std::function<uint64_t(const Incarnation&)>& memory_of, uint64_t* memory_after) const {
  struct Candidate {
    uint64_t since;
    uint32_t pid;
    Incarnation* inc;
  };
  std::vector<Candidate> exited;
  for (const auto& [pid, incs] : processes_) {
    for (const auto& inc : incs) {
      // Not before its exit notification has been handled (it drains the last writes and
      // closes the pidfd).
      if (inc->alive || probe_.Watched(*inc)) continue;
      exited.push_back({inc->exit_time.value_or(inc->created_ns), pid, inc.get()});
    }
  }
  std::sort(exited.begin(), exited.end(),
            [](const Candidate& a, const Candidate& b) { return a.since < b.since; });
  std::vector<Eviction> out;
  size_t next = 0;
  if (retention_ns > 0) {
    for (; next < exited.size() && now - std::min(now, exited[next].since) >= retention_ns;
         ++next) {
      out.push_back({exited[next].pid, exited[next].inc, "retention over"});
      total_memory -= std::min(total_memory, memory_of(*exited[next].inc));
    }
  }
  if (budget > 0) {
    for (; total_memory > budget && next < exited.size(); ++next) {
      out.push_back({exited[next].pid, exited[next].inc, "memory budget"});
      total_memory -= std::min(total_memory, memory_of(*exited[next].inc));
    }
  }
  if (memory_after) *memory_after = total_memory;
  return out;
}

void ProcessTable::Remove(uint32_t pid, const Incarnation* inc) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return;
  std::erase_if(it->second,
                [inc](const std::unique_ptr<Incarnation>& i) { return i.get() == inc; });
  removed_.push_back(pid);
  if (it->second.empty()) processes_.erase(it);
}

void ProcessTable::UnwatchAll() {
  for (auto& [pid, incs] : processes_) {
    for (auto& inc : incs) probe_.Unwatch(*inc);
  }
}

size_t ProcessTable::exited_count() const {
  size_t n = 0;
  for (const auto& [pid, incs] : processes_) {
    for (const auto& inc : incs) n += !inc->alive;
  }
  return n;
}

os::ProcessLookup PidfdProbe::Identity(uint32_t pid) { return os::LookUpProcess(pid); }

uint64_t PidfdProbe::StartNs(uint64_t start_ticks) {
  return os::StartTicksToMonotonicNs(start_ticks);
}

void PidfdProbe::Watch(Incarnation& inc) {
  if (!inc.uid || !ledger_.AdmitFile(*inc.uid).ok()) return;
  int pidfd = os::OpenPidfd(inc.pid);
  if (pidfd < 0) {
    ledger_.ReleaseFile(*inc.uid);
    return;
  }
  // The pid may have been reused between reading /proc and opening the pidfd. When /proc cannot
  // be read (the pidfd took the last descriptor), the incarnation stays unwatched and polled.
  const os::ProcessLookup now = os::LookUpProcess(inc.pid);
  if (now.error != 0) {
    ::close(pidfd);
    ledger_.ReleaseFile(*inc.uid);
    return;
  }
  const auto& identity = now.identity;
  if (!identity || identity->start_ticks != inc.start_ticks) {
    ::close(pidfd);
    ledger_.ReleaseFile(*inc.uid);
    inc.alive = false;
    inc.exit_time = MonotonicNowNs();
    return;
  }
  inc.pidfd = std::make_unique<boost::asio::posix::stream_descriptor>(io_, pidfd);
  Incarnation* p = &inc;
  inc.pidfd->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                        [this, p](const boost::system::error_code& ec) {
                          if (ec || stopped_) return;
                          on_exit_(p);
                        });
}

bool PidfdProbe::ExitSignalled(Incarnation& inc) {
  pollfd p{inc.pidfd->native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

void PidfdProbe::Unwatch(Incarnation& inc) {
  if (!Watched(inc)) return;
  inc.pidfd->close();
  if (inc.uid) ledger_.ReleaseFile(*inc.uid);
}

bool PidfdProbe::Watched(const Incarnation& inc) const { return inc.pidfd && inc.pidfd->is_open(); }

}  // namespace jitsym::ingest
