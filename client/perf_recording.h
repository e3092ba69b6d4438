// What `jitsym annotate -i perf.data` learns about a recording before it reads its samples: the
// event attributes `perf evlist -v` prints (pure parsing here), and whether `perf inject --jit`
// would accept the recording's clock. perf's rule (tools/perf/util/jitdump.c,
// jit_validate_events): every event must have use_clockid set and clockid CLOCK_MONOTONIC,
// which `perf record -k mono` does; otherwise inject refuses ("jitted code must be sampled with
// perf record -k 1"), unless the jitdump itself uses arch timestamps (not a case jitsym reads).
#ifndef JITSYM_CLIENT_PERF_RECORDING_H_
#define JITSYM_CLIENT_PERF_RECORDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::client {

struct PerfEventAttrs {
  std::string name;
  bool use_clockid = false;
  int64_t clockid = 0;     // perf omits "clockid: 0" (CLOCK_REALTIME) from its listing
  bool callchain = false;  // sample_type has CALLCHAIN (recorded with -g / --call-graph)
  bool time = false;       // sample_type has TIME
};

// The events of `perf evlist -v -i FILE` output, one per "NAME: type: N, key: value, ..." line;
// other lines are skipped.
std::vector<PerfEventAttrs> ParsePerfEvlist(std::string_view text);

// One "# event : name = cpu-clock, , id = { ... }, type = 1, ..., use_clockid = 1, ...,
// clockid = 1" line of perf's header, which `perf script --header` and `perf report
// --header-only` print; nullopt for any other line.
std::optional<PerfEventAttrs> ParsePerfHeaderEvent(std::string_view line);

// "CLOCK_MONOTONIC", "CLOCK_REALTIME", ... or "clock N".
std::string ClockIdName(int64_t clockid);

// Why `perf inject --jit` would refuse these events (the first offending event), e.g.
// "event cpu-clock was recorded with perf's default clock (no clockid), not CLOCK_MONOTONIC";
// nullopt when it would accept them. No events at all is nullopt too (nothing to judge).
std::optional<std::string> InjectClockProblem(const std::vector<PerfEventAttrs>& events);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_PERF_RECORDING_H_
