// The reasons of misses: see miss_reasons.h.
#include "daemon/query/miss_reasons.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "daemon/os/proc.h"
#include "daemon/util/clock.h"

namespace jitsym::query {
namespace {

// How far past now a time may be and still be taken for CLOCK_MONOTONIC: a sample is never from
// the future, but a time read on another host's clock or rounded may be a little ahead.
constexpr uint64_t kFutureSlackNs = 10ull * 1000000000;

std::string Seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string Ns(uint64_t ns) { return std::to_string(ns); }

// A hint's detail: a stripped file still has its exported (.dynsym) symbols, and the address
// is in none of them (a local function, a PLT stub); else no symbol covers it.
std::string HintDetail(const LookupBatch::MissHint& hint) {
  if (hint.reason == proto::Reason::kImageUnreadable ||
      hint.reason == proto::Reason::kNativeFailed) {
    return hint.where;  // the file and why
  }
  if (hint.reason == proto::Reason::kNoDebugInfo) {
    return hint.where +
           " is stripped: no .symtab and no debug info, and no exported symbol covers this "
           "address";
  }
  return "no symbol of " + hint.where + " covers this address";
}

// Whether `time` is within 10% of `reference` (both the same unit).
bool Near(uint64_t time, uint64_t reference) {
  const uint64_t slack = reference / 10;
  return time + slack >= reference && time <= reference + slack;
}

Explained WrongClock(std::string looks_like, uint64_t time) {
  return {proto::Reason::kWrongClock, "time " + Ns(time) + " looks like " + std::move(looks_like) +
                                          "; expected " + std::string(kExpectedClock)};
}

// Whether the incarnation lived at `time` (now, for a live one without an exit time).
bool Lived(const index::ProcessView& p, uint64_t time, uint64_t now) {
  if (!p.start_time || time < *p.start_time) return false;
  return time <= p.exit_time.value_or(now);
}

std::string Incarnation(const index::ProcessView& p) {
  return "pid " + std::to_string(p.pid) + " (incarnation " + std::to_string(p.incarnation) + ")";
}

// Which unit of the wall clock `time` is, if it is one: within 10% of now (years).
std::optional<Explained> WallClock(uint64_t time, const ClockNow& now) {
  static constexpr struct {
    uint64_t divisor;
    const char* unit;
  } kUnits[] = {{1, "nanoseconds"},
                {1000, "microseconds"},
                {1000000, "milliseconds"},
                {1000000000, "seconds"}};
  for (const auto& u : kUnits) {
    if (Near(time, now.realtime / u.divisor)) {
      return WrongClock(std::string("CLOCK_REALTIME ") + u.unit + " (a wall-clock epoch)", time);
    }
  }
  return std::nullopt;
}

}  // namespace

ClockNow ClockNow::Read() {
  return {MonotonicNowNs(), NowNs(CLOCK_REALTIME), NowNs(CLOCK_BOOTTIME)};
}

std::optional<Explained> LaterThanNow(uint64_t time, const ClockNow& now) {
  if (time <= now.monotonic + kFutureSlackNs) return std::nullopt;
  if (auto wall = WallClock(time, now)) return wall;
  if (now.boottime > now.monotonic + kFutureSlackNs && time <= now.boottime + kFutureSlackNs) {
    return WrongClock("CLOCK_BOOTTIME nanoseconds (perf record -k boot)", time);
  }
  return WrongClock("no clock of this host: it is " + Seconds(time - now.monotonic) +
                        " later than CLOCK_MONOTONIC now",
                    time);
}

Explained ExplainMiss(const MissFacts& f) {
  using proto::Reason;
  if (f.incarnations.empty() && !f.alive && !f.answered) {
    // Nothing of the id in it: the same words for every unknown id (a client compares them).
    return {Reason::kUnknownProcess,
            "no process with that pid or thread id is running, and jitsymd has indexed none"};
  }
  if (f.time) {
    if (auto later = LaterThanNow(*f.time, f.now)) return *later;
    const uint64_t t = *f.time;
    // The lifetimes the index knows (an incarnation without a start time has none to compare).
    bool known = false, lived = false;
    const index::ProcessView* first = nullptr;  // earliest start
    const index::ProcessView* ended = nullptr;  // latest exit before t
    for (const index::ProcessView* p : f.incarnations) {
      if (!p->start_time) continue;
      known = true;
      lived = lived || Lived(*p, t, f.now.monotonic);
      if (first == nullptr || *p->start_time < *first->start_time) first = p;
      if (p->exit_time && *p->exit_time < t &&
          (ended == nullptr || *p->exit_time > *ended->exit_time)) {
        ended = p;
      }
    }
    if (known && !lived) {
      if (t < *first->start_time) {
        // The wall clock in a coarser unit may be smaller than CLOCK_MONOTONIC now (epoch
        // milliseconds are 30 minutes of uptime): named here, where it missed anyway.
        if (auto wall = WallClock(t, f.now)) return *wall;
        // A time in a coarser unit is far too small; scaled, it falls in a lifetime.
        static constexpr struct {
          uint64_t factor;
          const char* unit;
        } kUnits[] = {{1000, "microseconds"}, {1000000, "milliseconds"}, {1000000000, "seconds"}};
        for (const auto& u : kUnits) {
          if (t > UINT64_MAX / u.factor) continue;
          for (const index::ProcessView* p : f.incarnations) {
            if (Lived(*p, t * u.factor, f.now.monotonic)) {
              return WrongClock(std::string("CLOCK_MONOTONIC ") + u.unit +
                                    " (it falls in the life of " + Incarnation(*p) +
                                    " once multiplied by " + std::to_string(u.factor) + ")",
                                t);
            }
          }
        }
        return {Reason::kBeforeStart, Incarnation(*first) + " started at " +
                                          Ns(*first->start_time) + ", " +
                                          Seconds(*first->start_time - t) + " after time " + Ns(t)};
      }
      if (ended != nullptr) {
        return {Reason::kAfterExit, Incarnation(*ended) + " exited at " + Ns(*ended->exit_time) +
                                        ", " + Seconds(t - *ended->exit_time) + " before time " +
                                        Ns(t)};
      }
    }
  }
  if (f.hint != nullptr) return {f.hint->reason, HintDetail(*f.hint)};
  if (f.process != nullptr && f.time) {
    // Code defined here later than asked: the earliest such definition, over every source.
    const index::SourceView* by = nullptr;
    const index::Range* first = nullptr;
    for (const auto& source : f.process->sources) {
      if (!source->code) continue;
      if (f.origins != nullptr && !f.origins->AllowsOrigin(source->origin)) {
        continue;
      }
      const index::Range* r = source->code->ranges().FirstDefinedAfter(f.addr, *f.time);
      if (r != nullptr && (first == nullptr || r->time < first->time)) {
        first = r;
        by = source.get();
      }
    }
    if (first != nullptr) {
      return {Reason::kBeforeCode, "code here is known from " + Ns(first->time) + " (" +
                                       Seconds(first->time - *f.time) + " after time " +
                                       Ns(*f.time) + "): " + std::string(by->code->name(*first)) +
                                       " in " + by->path};
    }
  }
  // Files of the process that stopped early or were refused.
  std::string ignored;
  auto add = [&](const std::string& path, const std::string& why) {
    if (!ignored.empty()) ignored += "; ";
    ignored += path + ": " + why;
  };
  if (f.process != nullptr) {
    for (const auto& source : f.process->sources) {
      if (source->state == SourceState::kError || source->state == SourceState::kLimit ||
          source->state == SourceState::kUntrusted) {
        add(source->path,
            source->error.empty() ? std::string(SourceStateName(source->state)) : source->error);
      }
    }
  }
  if (f.ignored != nullptr) {
    const uint32_t pid = f.process != nullptr ? f.process->pid : f.id;
    for (const index::RefusedFile& file : *f.ignored) {
      if (file.pid == pid || file.pid == f.id) add(file.path, file.reason);
    }
  }
  if (!ignored.empty()) return {Reason::kFileIgnored, "ignored: " + ignored};
  if (f.process == nullptr) {
    // The same words while it runs and after (its mappings may still answer).
    return {Reason::kNoCode, "no side file of process " + std::to_string(f.id) +
                                 " is indexed, and no executable mapping of it covers this "
                                 "address"};
  }
  return {Reason::kNoCode, "no code of " + Incarnation(*f.process) + " covers this address"};
}

void RefuseOtherClocks(LookupBatch& batch) {
  if (!batch.request().time) {
    bool any = false;
    for (const proto::AddressQuery& q : batch.request().addrs) any = any || q.time.has_value();
    if (!any) return;
  }
  const ClockNow now = ClockNow::Read();
  const uint64_t latest = now.monotonic + kFutureSlackNs;
  bool refused = false;
  for (size_t i : batch.pending()) {
    const std::optional<uint64_t> t = batch.time(i);
    if (!t || *t <= latest) continue;
    // Only a time that is the wall clock: other times later than now (a test's, another
    // host's) may still be right, and are named by ExplainMisses if they miss.
    if (auto e = WallClock(*t, now)) {
      batch.Miss(i, e->reason, std::move(e->detail));
      refused = true;
    }
  }
  if (refused) batch.Advance();
}

void ExplainMisses(LookupBatch& batch) {
  // Only what is left: the addresses no resolver answered or denied, and those refused before
  // (a pass over every result would cost hits a walk over the whole response).
  if (batch.pending().empty() && batch.missed().empty()) return;
  const index::IndexView& view = batch.view();
  const security::PeerAccess& access = batch.access();
  ProcessFinder& finder = batch.processes();
  MissFacts base;  // what every address shares
  base.id = batch.pid();
  base.now = ClockNow::Read();
  base.ignored = view.refused.get();
  if (const auto* incarnations = view.processes.Find(base.id)) {
    for (const auto& p : *incarnations) {
      if (access.MaySeeProcess(p->uid)) base.incarnations.push_back(p.get());
    }
  }
  base.answered = batch.answered_any();
  base.origins = &batch;
  // /proc only when the index and the answers say nothing of the id.
  if (base.incarnations.empty() && !base.answered) {
    const auto identity = os::ReadProcessIdentity(finder.LivePid());
    base.alive = identity && access.MaySeeProcess(identity->uid);
  }
  const size_t own = base.incarnations.size();
  auto explain = [&](size_t i) {
    proto::LookupResult& r = batch.result(i);
    MissFacts& f = base;  // per address: what follows, and maybe a thread's process
    f.incarnations.resize(own);
    f.addr = batch.addr(i);
    f.time = batch.time(i);
    f.process = nullptr;
    const index::ProcessView* p = finder.Find(f.time);
    if (p != nullptr && access.MaySeeProcess(p->uid)) {
      f.process = p;
      if (std::find(f.incarnations.begin(), f.incarnations.end(), p) == f.incarnations.end()) {
        f.incarnations.push_back(p);  // a thread's process
      }
    }
    f.hint = batch.hint(i);
    // Refused for its clock: said so unless the process itself is unknown.
    if (r.reason == proto::Reason::kWrongClock &&
        (!f.incarnations.empty() || f.alive || f.answered)) {
      return;
    }
    Explained e = ExplainMiss(f);
    r.reason = e.reason;
    r.detail = std::move(e.detail);
  };
  for (size_t i : batch.pending()) explain(i);
  for (size_t i : batch.missed()) explain(i);
}

void ExplainImageMisses(LookupBatch& batch, std::string_view image) {
  for (size_t i = 0; i < batch.size(); ++i) {
    proto::LookupResult& r = batch.result(i);
    if (r.found || batch.is_input_error(i) || r.reason != proto::Reason::kNone) continue;
    if (const LookupBatch::MissHint* h = batch.hint(i)) {
      r.reason = h->reason;
      r.detail = HintDetail(*h);
      continue;
    }
    r.reason = proto::Reason::kNoSymbol;
    r.detail = "nothing known for " + std::string(image) + " covers this address";
  }
}

}  // namespace jitsym::query
