// jitsym flamegraph: a profile in, one self-contained interactive SVG out.
//
// Inputs: `perf script` text on stdin or a recording (-i), named on the way by the annotate
// pipeline (flame_sink.h); folded stacks on stdin; a gperftools CPU profile (--pprof-profile,
// named as `jitsym pprof` names it). Which stdin input it is, is told by its first lines
// (LooksFolded). Stacks go into a FlameTree (no per-sample strings), which RenderFlameSvg draws.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/annotate_pipeline.h"
#include "client/args.h"
#include "client/command.h"
#include "client/cpu_profile_resolve.h"
#include "client/daemon_call.h"
#include "client/flame_graph.h"
#include "client/flame_sink.h"
#include "client/flame_svg.h"
#include "client/line_reader.h"
#include "client/named_stacks.h"
#include "client/pc_resolver.h"

namespace jitsym::client {
namespace {

std::string Usage() {
  return std::string(
      "usage: perf script [OPTIONS] | jitsym flamegraph [-o OUT.svg] [SVG OPTIONS]\n"
      "       jitsym flamegraph -i perf.data [-o OUT.svg] [SVG OPTIONS]\n"
      "                         [-- PERF-SCRIPT-OPTIONS]\n"
      "       jitsym flamegraph --pprof-profile PROFILE --pid PID [-o OUT.svg]\n"
      "       jitsym flamegraph [-o OUT.svg] < FOLDED-STACKS\n"
      "\n"
      "Writes one self-contained SVG flame graph: frames sized by samples, coloured by\n"
      "origin (JIT code by the format that named it, native, kernel, unknown; legend at\n"
      "the top), hover for name, samples and percentage, click to zoom, Search (or\n"
      "Ctrl-F) for a regular expression that highlights matches and shows their share;\n"
      "FILE.svg#search=REGEX opens with a search applied. It needs no network.\n"
      "\n"
      "Input, told apart by itself on stdin:\n"
      "  - `perf script` output: frames are named as `jitsym annotate` names them, the\n"
      "    same names and counts as `annotate --folded`;\n"
      "  - folded stacks (comm;outer;...;leaf COUNT: `jitsym annotate --folded`,\n"
      "    `jitsym pprof --folded`, stackcollapse scripts, inferno): offsets (+0x1c) are\n"
      "    taken off names; flamegraph.pl's _[k] (kernel), _[j] (JIT), _[i] (inlined)\n"
      "    and V8's JS:/LazyCompile: prefixes choose colours.\n"
      "With -i, the recording through `perf script` (as `jitsym annotate -i`); with\n"
      "--pprof-profile, a gperftools CPU profile named through jitsymd as by\n"
      "`jitsym pprof` (the same names and counts as its --folded).\n"
      "\n"
      "  -o FILE         write the SVG to FILE (default: stdout)\n"
      "  --title TEXT    the title (default: Flame Graph, or Icicle Graph with --reverse)\n"
      "  --width PX      image width in pixels (default 1200; 100 to 100000)\n"
      "  --min-width PX  children of a frame narrower than this are drawn as one\n"
      "                  \"[N frames merged]\" box (default 0.1)\n"
      "  --reverse       icicle graph: the root at the top, callees below\n"
      "  -i FILE         read this perf.data through `perf script`\n"
      "  --pprof-profile FILE --pid PID\n"
      "                  a gperftools CPU profile of process PID\n"
      "  --native        ask jitsymd about native frames too (as annotate --native)\n"
      "  --quiet         no warnings and no summary\n"
      "  --batch N       frames per request (default 8192; fewer when the input pauses,\n"
      "                  10 ms after a request's first line at the latest)\n"
      "\n"
      "Lines of folded input that are not folded stacks are skipped and counted on stderr.\n"
      "perf script input ends with annotate's summary on stderr. Exit status: 0, 1 on an\n"
      "error (no samples, unwritable output, jitsymd unreachable), 2 usage.\n");
}

// How many non-blank lines decide what the input is.
constexpr size_t kSniffLines = 4;

// Lines of a file descriptor, of any length up to kMaxLine: a folded stack 2,000 frames deep
// with C++ names is longer than LineReader's 64 KiB. Longer lines are skipped and counted.
class LongLineReader {
 public:
  static constexpr size_t kMaxLine = size_t{64} << 20;

  // `prefix`: bytes already read from fd, read first.
  LongLineReader(int fd, std::string prefix) : fd_(fd), buf_(std::move(prefix)) {}

  // The next line without its newline, valid until the next call; false at the end of the
  // input or on a read error (error() is then non-empty).
  bool Next(std::string_view* line) {
    for (;;) {
      const size_t nl = buf_.find('\n', scan_);
      if (nl != std::string::npos) {
        *line = std::string_view(buf_).substr(begin_, nl - begin_);
        begin_ = scan_ = nl + 1;
        if (skipping_) {
          skipping_ = false;
          continue;
        }
        return true;
      }
      scan_ = buf_.size();
      if (eof_) {
        if (begin_ == buf_.size() || skipping_) return false;
        *line = std::string_view(buf_).substr(begin_);
        begin_ = scan_ = buf_.size();
        return true;
      }
      if (buf_.size() - begin_ > kMaxLine) {  // drop what there is, up to the next newline
        if (!skipping_) ++too_long_;
        skipping_ = true;
        begin_ = scan_ = buf_.size();
      }
      if (begin_ > 0) {
        buf_.erase(0, begin_);
        scan_ -= begin_;
        begin_ = 0;
      }
      if (!Fill()) return false;
    }
  }

  const std::string& error() const { return error_; }
  uint64_t too_long() const { return too_long_; }

 private:
  bool Fill() {
    constexpr size_t kChunk = 1 << 20;
    const size_t old = buf_.size();
    buf_.resize(old + kChunk);
    ssize_t n;
    do {
      n = read(fd_, buf_.data() + old, kChunk);
    } while (n < 0 && errno == EINTR);
    buf_.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n < 0) {
      error_ = std::strerror(errno);
      return false;
    }
    if (n == 0) eof_ = true;
    return true;
  }

  int fd_;
  std::string buf_;
  size_t begin_ = 0;  // the current line's start
  size_t scan_ = 0;   // searched for a newline up to here
  bool eof_ = false;
  bool skipping_ = false;
  uint64_t too_long_ = 0;
  std::string error_;
};

struct FlamegraphArgs {
  FlameSvgOptions svg;
  std::optional<std::string> out_path;
  AnnotateOptions annotate;  // perf script input
  std::optional<std::string> pprof_profile;
  std::optional<int64_t> pid;
};

// Parses the command's options; nullopt to go on, or the exit status to return.
std::optional<int> ParseFlamegraphArgs(const std::vector<std::string>& args,
                                       FlamegraphArgs* parsed) {
  std::optional<std::string> out, title, width, min_width, pid;
  bool reverse = false;
  ArgParser parser("flamegraph", Usage());
  parser.AddValue("-o", &out);
  parser.AddValue("--output", &out);
  parser.AddValue("--title", &title);
  parser.AddValue("--width", &width);
  parser.AddValue("--min-width", &min_width);
  parser.AddFlag("--reverse", &reverse);
  parser.AddValue("--pprof-profile", &parsed->pprof_profile);
  parser.AddValue("--pid", &pid);
  AnnotateOptions& a = parsed->annotate;
  a.command = "flamegraph";
  if (auto status = ParseAnnotateArgs(parser, args, &a)) return status;
  if (parsed->pprof_profile) {
    if (a.input) return parser.UsageError("-i and --pprof-profile exclude each other");
    if (!pid) return parser.UsageError("--pprof-profile needs --pid PID");
  } else if (pid) {
    return parser.UsageError("--pid goes with --pprof-profile");
  }
  if (pid) {
    const std::optional<uint64_t> n = proto::ParseDecimal(*pid);
    if (!n || *n == 0 || *n > 0x7fffffff) return parser.UsageError("invalid PID '" + *pid + "'");
    parsed->pid = static_cast<int64_t>(*n);
  }
  auto number = [](const std::string& text, double lo, double hi) -> std::optional<double> {
    if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos) {
      return std::nullopt;
    }
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !(v >= lo && v <= hi)) return std::nullopt;
    return v;
  };
  FlameSvgOptions& svg = parsed->svg;
  svg.reverse = reverse;
  if (width) {
    const auto v = number(*width, kMinSvgWidth, kMaxSvgWidth);
    if (!v) return parser.UsageError("--width takes pixels from 100 to 100000");
    svg.width = *v;
  }
  if (min_width) {
    const auto v = number(*min_width, 0, svg.width);
    if (!v) return parser.UsageError("--min-width takes pixels from 0 to the width");
    svg.min_width = *v;
  }
  svg.title = title ? *title : reverse ? "Icicle Graph" : "Flame Graph";
  if (out && out->empty()) return parser.UsageError("-o needs a file name");
  parsed->out_path = out;
  return std::nullopt;
}

// Says what the tree could not hold: `skipped` stacks whose samples would have passed 2^53 (a
// count past what the SVG's numbers and shares can carry exactly), and frames cut off.
void WarnTreeLimits(const FlameTree& tree, uint64_t skipped) {
  if (skipped > 0) {
    std::fprintf(stderr,
                 "jitsym flamegraph: warning: %llu stacks were skipped: the total would pass "
                 "2^53 samples\n",
                 static_cast<unsigned long long>(skipped));
  }
  if (tree.truncated()) {
    std::fprintf(stderr,
                 "jitsym flamegraph: warning: too many distinct frames; deeper frames of later "
                 "stacks were counted in their callers\n");
  }
}

// Reads folded stacks into *tree; warnings (not errors) are left out with `quiet`.
bool ReadFolded(LongLineReader& reader, bool quiet, FlameTree* tree) {
  std::vector<std::string_view> names;
  std::vector<FlameFrame> frames;
  uint64_t line_no = 0, bad = 0, first_bad = 0, too_many = 0;
  auto add = [&](std::string_view line) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
    uint64_t count = 0;
    if (!ParseFoldedLine(line, &names, &count)) {
      if (bad++ == 0) first_bad = line_no;
      return;
    }
    if (count == 0) return;
    frames.clear();
    for (std::string_view name : names) {
      FlameFrame f{StripKindAnnotation(name), GuessKind(name)};
      if (f.name.empty()) f.name = "[unknown]";
      frames.push_back(f);
    }
    if (!tree->Add(frames, count)) ++too_many;
  };
  std::string_view line;
  while (reader.Next(&line)) add(line);
  if (!reader.error().empty()) {
    std::fprintf(stderr, "jitsym flamegraph: cannot read stdin: %s\n", reader.error().c_str());
    return false;
  }
  if (!quiet && reader.too_long() > 0) {
    std::fprintf(
        stderr, "jitsym flamegraph: warning: %llu lines longer than %zu MiB were skipped\n",
        static_cast<unsigned long long>(reader.too_long()), LongLineReader::kMaxLine >> 20);
  }
  if (!quiet && bad > 0) {
    std::fprintf(stderr,
                 "jitsym flamegraph: warning: %llu lines were not folded stacks (NAME;...;NAME "
                 "COUNT) and were skipped; the first is line %llu\n",
                 static_cast<unsigned long long>(bad), static_cast<unsigned long long>(first_bad));
  }
  if (!quiet) WarnTreeLimits(*tree, too_many);
  if (tree->total_samples() == 0) {
    std::fprintf(stderr, "jitsym flamegraph: no samples in the input\n");
    return false;
  }
  return true;
}

// Writes the SVG to out_path, or stdout. Returns the exit status; errors are reported.
int WriteFlameGraph(const FlameTree& tree, const FlameSvgOptions& options,
                    std::optional<std::string> out_path) {
  const std::string svg = RenderFlameSvg(tree, options);
  std::FILE* f = out_path ? std::fopen(out_path->c_str(), "wb") : stdout;
  if (f == nullptr) {
    std::fprintf(stderr, "jitsym flamegraph: cannot write %s: %s\n", out_path->c_str(),
                 std::strerror(errno));
    return kExitError;
  }
  bool ok = std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  ok = (out_path ? std::fclose(f) : std::fflush(f)) == 0 && ok;
  if (!ok) {
    std::fprintf(stderr, "jitsym flamegraph: cannot write %s\n",
                 out_path ? out_path->c_str() : "stdout");
    return kExitError;
  }
  return kExitOk;
}

// Reads from fd until the first kSniffLines non-blank lines are in *head (or the input ends, or
// LineReader::kMaxPrefixBytes were read): enough to tell folded stacks from perf script text.
// Those lines, without their newlines, go into *lines.
bool ReadHead(int fd, std::string* head, std::vector<std::string_view>* lines) {
  size_t nonblank = 0, scanned = 0;
  for (;;) {
    size_t nl;
    while ((nl = head->find('\n', scanned)) != std::string::npos) {
      const std::string_view line(head->data() + scanned, nl - scanned);
      if (line.find_first_not_of(" \t\r") != std::string_view::npos) ++nonblank;
      scanned = nl + 1;
      if (nonblank == kSniffLines) break;
    }
    if (nonblank == kSniffLines || head->size() >= LineReader::kMaxPrefixBytes) break;
    char buf[16384];
    const size_t room = std::min(sizeof(buf), LineReader::kMaxPrefixBytes - head->size());
    ssize_t n;
    do {
      n = read(fd, buf, room);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      std::fprintf(stderr, "jitsym flamegraph: cannot read stdin: %s\n", std::strerror(errno));
      return false;
    }
    if (n == 0) break;
    head->append(buf, static_cast<size_t>(n));
  }
  for (size_t at = 0; at < head->size();) {
    size_t nl = head->find('\n', at);
    if (nl == std::string::npos) nl = head->size();
    const std::string_view line(head->data() + at, nl - at);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) lines->push_back(line);
    at = nl + 1;
  }
  return true;
}

// A gperftools CPU profile named through jitsymd, as `jitsym pprof --folded` names it.
int DrawCpuProfile(const GlobalOptions& globals, FlamegraphArgs& parsed) {
  const std::string& path = *parsed.pprof_profile;
  const Result<std::string> bytes = ReadWholeFile(path);
  if (!bytes) {
    std::fprintf(stderr, "jitsym flamegraph: cannot read %s: %s\n", path.c_str(),
                 bytes.error().message.c_str());
    return kExitError;
  }
  const Result<CpuProfile> profile = ParseCpuProfile(*bytes);
  if (!profile) {
    const Error& e = profile.error();
    std::fprintf(stderr, "jitsym flamegraph: %s: %s%s (offset %llu)\n", path.c_str(),
                 e.kind == ErrorKind::kNotThisFormat ? "" : "corrupt gperftools profile: ",
                 e.message.c_str(), static_cast<unsigned long long>(e.offset));
    return kExitError;
  }
  auto connection = ConnectOrReport(globals);
  if (!connection) return kExitError;
  PcResolver resolver(*connection);
  ResolvedPcs resolved;
  if (!ResolveCpuProfile(*profile, *parsed.pid, &resolver, &resolved)) return kExitError;
  if (!parsed.annotate.quiet) ReportResolveSummary("flamegraph", *parsed.pid, resolved);
  const NamedStacks named = CpuProfileStacks(*profile, resolved);
  FlameTree tree;
  std::vector<FlameFrame> frames;
  uint64_t skipped = 0;
  for (size_t i = 0; i < named.stacks.size(); ++i) {
    if (named.counts[i] == 0) continue;
    frames.clear();
    const auto& stack = named.stacks[i];
    for (size_t k = stack.size(); k-- > 0;) {  // outermost first
      const proto::Origin origin = named.origins[i][k];
      frames.push_back({stack[k], origin == proto::Origin::kUnknown ? FrameKind::kUnknown
                                                                    : FrameKindOf(origin)});
    }
    if (!tree.Add(frames, named.counts[i])) ++skipped;
  }
  if (!parsed.annotate.quiet) WarnTreeLimits(tree, skipped);
  if (tree.total_samples() == 0) {
    std::fprintf(stderr, "jitsym flamegraph: no samples in %s\n", path.c_str());
    return kExitError;
  }
  parsed.svg.subtitle = "gperftools profile " + path + " of pid " + std::to_string(*parsed.pid) +
                        ", " + std::to_string(tree.total_samples()) + " samples";
  const int status = WriteFlameGraph(tree, parsed.svg, parsed.out_path);
  return status != kExitOk ? status : resolver.ExitStatus();
}

// perf script text (stdin or -i), named by the annotate pipeline.
int DrawPerfScript(const GlobalOptions& globals, FlamegraphArgs& parsed) {
  FlameTree tree;
  FlameSink sink(&tree);
  const int status = RunAnnotatePipeline(globals, parsed.annotate, &sink);
  if (status != kExitOk) return status;
  if (!parsed.annotate.quiet) WarnTreeLimits(tree, sink.dropped());
  if (tree.total_samples() == 0) {
    std::fprintf(stderr, "jitsym flamegraph: no samples in the %s\n",
                 parsed.annotate.input ? "recording" : "perf script input");
    return kExitError;
  }
  const std::string samples = std::to_string(tree.total_samples()) + " samples";
  parsed.svg.subtitle = parsed.annotate.input
                            ? "perf script -i " + *parsed.annotate.input + ", " + samples
                            : "perf script output on stdin, " + samples;
  return WriteFlameGraph(tree, parsed.svg, parsed.out_path);
}

}  // namespace

int RunFlamegraph(const GlobalOptions& globals, const std::vector<std::string>& args) {
  FlamegraphArgs parsed;
  if (auto status = ParseFlamegraphArgs(args, &parsed)) return *status;
  if (parsed.pprof_profile) return DrawCpuProfile(globals, parsed);
  if (parsed.annotate.input) return DrawPerfScript(globals, parsed);

  std::string head;
  std::vector<std::string_view> lines;
  if (!ReadHead(STDIN_FILENO, &head, &lines)) return kExitError;
  if (lines.empty()) {
    std::fprintf(stderr,
                 "jitsym flamegraph: no input: expected perf script output or folded stacks on "
                 "stdin\n");
    return kExitError;
  }
  const bool cut = head.size() >= LineReader::kMaxPrefixBytes && lines.size() == 1 &&
                   head.find('\n') == std::string::npos;
  if (cut ? !LooksFoldedStart(lines[0]) : !LooksFolded(lines)) {
    parsed.annotate.stdin_prefix = std::move(head);
    return DrawPerfScript(globals, parsed);
  }
  LongLineReader reader(STDIN_FILENO, std::move(head));
  FlameTree tree;
  if (!ReadFolded(reader, parsed.annotate.quiet, &tree)) return kExitError;
  parsed.svg.subtitle = "folded stacks from stdin, " + std::to_string(tree.total_samples()) +
                        (tree.total_samples() == 1 ? " sample" : " samples");
  return WriteFlameGraph(tree, parsed.svg, parsed.out_path);
}

}  // namespace jitsym::client
