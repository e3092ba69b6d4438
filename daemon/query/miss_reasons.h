// Why an address was not found: the one place a lookup's misses get their "reason" and "detail"
// (proto::Reason; docs/protocol.md has the table). Resolvers only answer, deny, or note what
// they saw about an address they could not answer (LookupBatch::NoteMiss); what a person is
// told is decided here, from the index view, the process's lifetimes and the time asked.
//
// Two steps: before the resolvers, a wall-clock time (later than CLOCK_MONOTONIC now) is
// refused, so that it never picks a definition (a wall-clock epoch is after every definition
// and would otherwise get the latest name: a wrong answer); after them, every address left gets
// its reason. Both run only for what they concern: a request without times costs nothing in the
// first step, and the second looks at misses only.
//
// What a client may not see is never told: incarnations it may not see are treated as unknown,
// so a miss reads the same whether or not the daemon indexed another user's exited process.
#ifndef JITSYM_DAEMON_QUERY_MISS_REASONS_H_
#define JITSYM_DAEMON_QUERY_MISS_REASONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/query/resolver.h"
#include "proto/wire_enums.h"

namespace jitsym::query {

struct Explained {
  proto::Reason reason = proto::Reason::kNone;
  std::string detail;
};

// The clocks now, as the rules compare times with them.
struct ClockNow {
  uint64_t monotonic = 0;
  uint64_t realtime = 0;
  uint64_t boottime = 0;
  static ClockNow Read();
};

// What is expected, said in every wrong_clock detail.
inline constexpr std::string_view kExpectedClock =
    "CLOCK_MONOTONIC nanoseconds, as perf record -k mono writes";

// A time that cannot be CLOCK_MONOTONIC nanoseconds because it is later than now: which clock or
// unit it looks like; nullopt for a time that may be right.
std::optional<Explained> LaterThanNow(uint64_t time, const ClockNow& now);

// The facts a miss is explained from (made up in unit tests).
struct MissFacts {
  uint32_t id = 0;  // the request's pid (maybe a thread id)
  uint64_t addr = 0;
  std::optional<uint64_t> time;
  // The incarnations of the id (its own, and those that had it as a thread) the client may see.
  std::vector<const index::ProcessView*> incarnations;
  // The one the lookup asked (ProcessFinder::Find at the time), if the client may see it.
  const index::ProcessView* process = nullptr;
  bool alive = false;  // a process the client may see holds the id now
  // Other addresses of the request were answered (e.g. from the mappings of an exited process
  // kept since it ran): the process is known even if the index has no incarnation of it.
  bool answered = false;
  const LookupBatch::MissHint* hint = nullptr;
  // The request's "origin" filter: sources it leaves out explain nothing (null: all).
  const LookupBatch* origins = nullptr;
  const std::vector<index::RefusedFile>* ignored = nullptr;  // IndexView::refused
  ClockNow now;
};

Explained ExplainMiss(const MissFacts& facts);

// Step one (pid lookups): addresses whose time is a wall-clock time later than CLOCK_MONOTONIC
// now miss with wrong_clock.
// The clocks are read only when some address has a time.
void RefuseOtherClocks(LookupBatch& batch);
// Step two (pid lookups): a reason for every address not answered.
// The clocks and /proc are read only when something missed.
void ExplainMisses(LookupBatch& batch);
// Image lookups: what the image did not answer has no symbol there.
void ExplainImageMisses(LookupBatch& batch, std::string_view image);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_MISS_REASONS_H_
