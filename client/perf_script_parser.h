// Parses the text `perf script` prints, one line at a time: pure functions, no I/O (a fuzz
// target and the unit tests call them directly). Spec: perf-script(1), "FIELDS" and the callchain
// layout of tools/perf/builtin-script.c / util/evsel_fprintf.c.
//
//   sample line := [COMM] PID[/TID] ["[" CPU "]"] [SECS.FRAC ":"] [PERIOD] [EVENT ":"] [FRAME]
//   frame line  := TAB SPACES* FRAME            (callchain entries, leaf first; -g recordings)
//   FRAME       := HEXIP [" " SYM] [" (" DSO ")"]
//   blank line  := ""                           (ends a sample with a callchain)
//
// COMM may hold spaces and digits; the pid is the numeric token just before the time (or the
// cpu), or without a time the first PID/TID or numeric token. SYM may hold spaces and
// parentheses (C++ and JavaScript names); DSO is the last parenthesized group of the line.
// Without a pid or tid field (-F comm,time,...) a line with a time is still a sample line, with
// pid -1 (then a comm ending in a number, "V8 Worker 2", is read as a pid: the text cannot tell).
// Without pid and time ("-F comm,ip", "-F ip" prints an empty line) it is kOther or kBlank.
// Anything else (srcline lines, --header output, warnings) is kind kOther and passes unchanged.
#ifndef JITSYM_CLIENT_PERF_SCRIPT_PARSER_H_
#define JITSYM_CLIENT_PERF_SCRIPT_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace jitsym::client {

// One code location as printed; offsets are into the line it came from.
struct PerfScriptFrame {
  uint64_t ip = 0;
  size_t ip_end = 0;  // just after the ip's hex digits
  // The symbol as printed (may end in "+0xOFF"); empty when the sym field is not printed.
  std::string_view sym;
  size_t sym_begin = 0;
  // The dso without its parentheses; has_dso is false when the dso field is not printed.
  std::string_view dso;
  bool has_dso = false;
  size_t tail_begin = 0;  // where the symbol and dso end (the rest of the line follows)
};

struct PerfScriptSample {
  std::string_view comm;  // empty when not printed
  int64_t pid = -1;       // -1: not printed. A lone number (-F pid or -F tid) lands here.
  int64_t tid = -1;       // set when perf printed PID/TID
  // CLOCK_MONOTONIC ns with `perf record -k mono`. perf prints microseconds by default; the time
  // is rounded up to the end of the printed unit (a sample is taken after the code it hits was
  // loaded, so the end of the microsecond is the safer side).
  std::optional<uint64_t> time_ns;
  std::optional<PerfScriptFrame> frame;  // the ip on the sample line itself (no callchain)
};

enum class PerfScriptLine { kBlank, kSample, kFrame, kOther };

// Classifies `line` (without its newline) and fills *sample for kSample, *frame for kFrame.
PerfScriptLine ParsePerfScriptLine(std::string_view line, PerfScriptSample* sample,
                                   PerfScriptFrame* frame);

// A frame perf parsed from "HEXIP [SYM] [(DSO)]" starting at `pos`; nullopt if there is no hex
// ip there.
std::optional<PerfScriptFrame> ParsePerfScriptFrame(std::string_view line, size_t pos);

// Dsos perf gives to JIT code it cannot name itself: "[unknown]", "//anon", "[anon:...]",
// "/memfd:...", "/tmp/perf-<pid>.map", "jit-<pid>.dump", "[JIT] tid <n>".
bool IsJitDso(std::string_view dso);
// The process a frame's dso names, when perf made the name from the process: perf calls an
// anonymous executable mapping "/tmp/perf-<pid>.map" (whether or not that file exists) with the
// pid of the process as perf knows it (tools/perf/util/map.c map__new: nsinfo__pid of the
// thread's nsinfo, which thread__new makes from the sample's pid, not its tid), so it is the
// process even when the sample line shows only a thread id. "jit-<n>.dump" and the
// "jitted-<n>-<k>.so" of `perf inject --jit` carry the pid the runtime wrote (getpid() in its
// own pid namespace), which is not the host's in a container: not used. nullopt otherwise.
std::optional<int64_t> PidOfJitDso(std::string_view dso);

// True for frames in a JIT dso (above; named or not: the daemon knows better, because it knows
// when each function was at the address), and for "[unknown]" or bare-ip frames without a dso.
// Frames in a file-backed dso are native code: see --native.
bool NeedsJitName(const PerfScriptFrame& frame);

// "foo+0x1c" -> "foo"; anything else unchanged.
std::string_view StripSymbolOffset(std::string_view sym);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_PERF_SCRIPT_PARSER_H_
