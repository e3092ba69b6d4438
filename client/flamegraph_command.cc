// jitsym flamegraph: folded stacks in, one self-contained interactive SVG out.
//
// The input is read line by line into a FlameTree (no per-sample strings), which
// RenderFlameSvg draws. Which input it is, is told by its first lines (LooksFolded); `perf
// script` text is refused with advice for now.
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

#include "client/args.h"
#include "client/command.h"
#include "client/flame_graph.h"
#include "client/flame_svg.h"

namespace jitsym::client {
namespace {

constexpr char kUsage[] =
    "usage: jitsym flamegraph [-o OUT.svg] [--title TEXT] [--width PX] [--min-width PX]\n"
    "                         [--reverse] < STACKS\n"
    "\n"
    "Reads folded stacks on stdin (comm;outer;...;leaf COUNT: `jitsym annotate --folded`,\n"
    "`jitsym pprof --folded`, flamegraph.pl's stackcollapse scripts, inferno) and writes one\n"
    "self-contained SVG flame graph: frames sized by samples, coloured by kind (legend at\n"
    "the top), hover for name, samples and percentage, click to zoom, Search (or Ctrl-F) for a\n"
    "regular expression that highlights matches and shows their share; FILE.svg#search=REGEX\n"
    "opens with a search applied. It needs no network and no fonts.\n"
    "Offsets (+0x1c) are taken off names; flamegraph.pl's annotations _[k] (kernel), _[j]\n"
    "(JIT), _[i] (inlined) and V8's JS:/LazyCompile: prefixes choose colours.\n"
    "\n"
    "  -o FILE         write the SVG to FILE (default: stdout)\n"
    "  --title TEXT    the title (default: Flame Graph, or Icicle Graph with --reverse)\n"
    "  --width PX      image width in pixels (default 1200; 100 to 100000)\n"
    "  --min-width PX  children of a frame narrower than this are drawn as one\n"
    "                  \"[N frames merged]\" box (default 0.1)\n"
    "  --reverse       icicle graph: the root at the top, callees below\n"
    "\n"
    "Lines that are not folded stacks are skipped and counted on stderr. Exit status: 0, 1 on\n"
    "an error (no stacks, unwritable output), 2 usage.\n";

// How many non-blank lines decide what the input is.
constexpr size_t kSniffLines = 4;

// Lines of a file descriptor, of any length up to kMaxLine: a folded stack 2,000 frames deep
// with C++ names is longer than LineReader's 64 KiB. Longer lines are skipped and counted.
class LongLineReader {
 public:
  static constexpr size_t kMaxLine = size_t{64} << 20;

  explicit LongLineReader(int fd) : fd_(fd) {}

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
};

// Parses the command's options; nullopt to go on, or the exit status to return.
std::optional<int> ParseFlamegraphArgs(const std::vector<std::string>& args,
                                       FlamegraphArgs* parsed) {
  std::optional<std::string> out, title, width, min_width;
  bool reverse = false;
  ArgParser parser("flamegraph", kUsage);
  parser.AddValue("-o", &out);
  parser.AddValue("--output", &out);
  parser.AddValue("--title", &title);
  parser.AddValue("--width", &width);
  parser.AddValue("--min-width", &min_width);
  parser.AddFlag("--reverse", &reverse);
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return status;
  if (!positional.empty()) {
    return parser.UsageError("unexpected argument '" + positional[0] + "' (input is stdin)");
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

// Reads folded stacks into *tree. `first` are the lines already read to tell the input kind.
bool ReadFolded(const std::vector<std::string>& first, LongLineReader& reader, FlameTree* tree) {
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
  for (const std::string& line : first) add(line);
  std::string_view line;
  while (reader.Next(&line)) add(line);
  if (!reader.error().empty()) {
    std::fprintf(stderr, "jitsym flamegraph: cannot read stdin: %s\n", reader.error().c_str());
    return false;
  }
  if (reader.too_long() > 0) {
    std::fprintf(
        stderr, "jitsym flamegraph: warning: %llu lines longer than %zu MiB were skipped\n",
        static_cast<unsigned long long>(reader.too_long()), LongLineReader::kMaxLine >> 20);
  }
  if (bad > 0) {
    std::fprintf(stderr,
                 "jitsym flamegraph: warning: %llu lines were not folded stacks (NAME;...;NAME "
                 "COUNT) and were skipped; the first is line %llu\n",
                 static_cast<unsigned long long>(bad), static_cast<unsigned long long>(first_bad));
  }
  if (too_many > 0) {
    std::fprintf(stderr,
                 "jitsym flamegraph: warning: %llu stacks were skipped: the total would pass "
                 "2^53 samples\n",
                 static_cast<unsigned long long>(too_many));
  }
  if (tree->truncated()) {
    std::fprintf(stderr,
                 "jitsym flamegraph: warning: too many distinct frames; deeper frames of later "
                 "stacks were counted in their callers\n");
  }
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

}  // namespace

int RunFlamegraph(const GlobalOptions& /*globals*/, const std::vector<std::string>& args) {
  FlamegraphArgs parsed;
  if (auto status = ParseFlamegraphArgs(args, &parsed)) return *status;

  LongLineReader reader(STDIN_FILENO);
  std::vector<std::string> first;  // every line up to kSniffLines non-blank ones
  std::vector<std::string_view> sniff;
  std::string_view line;
  while (sniff.size() < kSniffLines && reader.Next(&line)) {
    first.emplace_back(line);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) sniff.push_back(line);
  }
  sniff.clear();
  for (const std::string& l : first) sniff.push_back(l);
  if (!reader.error().empty()) {
    std::fprintf(stderr, "jitsym flamegraph: cannot read stdin: %s\n", reader.error().c_str());
    return kExitError;
  }
  if (first.empty()) {
    std::fprintf(stderr, "jitsym flamegraph: no input: expected folded stacks on stdin\n");
    return kExitError;
  }
  if (!LooksFolded(sniff)) {
    std::fprintf(stderr,
                 "jitsym flamegraph: stdin is not folded stacks (NAME;...;NAME COUNT); for "
                 "`perf script` output, fold it first:\n"
                 "  perf script | jitsym annotate --folded | jitsym flamegraph -o out.svg\n");
    return kExitError;
  }
  FlameTree tree;
  if (!ReadFolded(first, reader, &tree)) return kExitError;
  parsed.svg.subtitle = "folded stacks from stdin, " + std::to_string(tree.total_samples()) +
                        (tree.total_samples() == 1 ? " sample" : " samples");
  return WriteFlameGraph(tree, parsed.svg, parsed.out_path);
}

}  // namespace jitsym::client
