// `jitsym explain`: why one address answers what it does. Prints the daemon's explain report
// (docs/protocol.md, op "explain") for people: the process and its incarnations, its source
// files, every definition that ever covered the address with the times it was valid, files
// that were ignored, and the answer with the rule that picked it. --json prints the report as
// on the wire.
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <string>

#include "client/args.h"
#include "client/command.h"
#include "client/daemon_call.h"
#include "client/image_files.h"
#include "client/output.h"
#include "proto/protocol.h"

namespace jitsym::client {
namespace {

constexpr char kUsage[] =
    "usage: jitsym explain (--pid PID | --image IMAGE) [--time T] [--json] ADDR\n"
    "\n"
    "Explains the answer for one address: the process and its incarnations (start, exit,\n"
    "owner), every source file (owner, trust, state, bytes and records read, errors), every\n"
    "definition that ever covered ADDR with the interval of times it was valid [from, to),\n"
    "the files naming the process that were ignored, and the answer at T with the rule that\n"
    "picked it. Times are CLOCK_MONOTONIC nanoseconds, shown also relative to the start of\n"
    "the incarnation that answers (+1.234567 s).\n"
    "\n"
    "  --pid PID       the process (or one of its threads)\n"
    "  --image IMAGE   an image instead: r2rmap image name or absolute ELF path; ADDR an RVA\n"
    "  --time T        when: CLOCK_MONOTONIC nanoseconds, or seconds with a decimal point as\n"
    "                  perf script prints them; without it, now / the newest definitions\n"
    "  --json          the report as on the wire (one JSON object)\n"
    "\n"
    "Exit status as lookup's: 0 explained, 1 daemon error, 2 usage, 3 process unknown to\n"
    "jitsymd, 4 permission denied for the process (the report is printed in every case).\n";

// "123456789 (+1.234 s)": raw nanoseconds and, when the base is known, relative to it.
std::string Time(uint64_t ns, std::optional<uint64_t> base) {
  std::string out = std::to_string(ns);
  if (base) {
    const bool negative = ns < *base;
    const uint64_t d = negative ? *base - ns : ns - *base;
    char buf[64];
    std::snprintf(buf, sizeof(buf), " (%c%" PRIu64 ".%06" PRIu64 " s)", negative ? '-' : '+',
                  d / 1000000000, d / 1000 % 1000000);
    out += buf;
  }
  return out;
}

std::string OptTime(const std::optional<uint64_t>& ns, std::optional<uint64_t> base,
                    std::string_view none) {
  return ns ? Time(*ns, base) : std::string(none);
}

void Print(const proto::ExplainResponse& e, std::string* out) {
  // Times are shown relative to the start of the incarnation that answered, else the first.
  const proto::LookupResult* a = e.answer.results.empty() ? nullptr : &e.answer.results.front();
  std::optional<uint64_t> base;
  for (const auto& inc : e.incarnations) {
    if (a != nullptr && a->incarnation && *a->incarnation == inc.incarnation) base = inc.start_time;
  }
  if (!base && !e.incarnations.empty()) base = e.incarnations.front().start_time;

  out->append("address ").append(proto::FormatAddress(e.addr));
  if (e.pid) out->append(" in pid ").append(std::to_string(*e.pid));
  if (e.image) out->append(" in image ").append(*e.image);
  out->append(", time ").append(OptTime(e.time, base, "now (none given)")).append("\n");

  if (e.pid) {
    out->append("\nprocess:\n");
    if (e.incarnations.empty()) out->append("  (no incarnation you may query is known)\n");
    for (const auto& inc : e.incarnations) {
      out->append("  incarnation ").append(std::to_string(inc.incarnation));
      out->append(inc.alive ? " (alive)" : " (exited)");
      out->append(", owner uid ").append(inc.uid ? std::to_string(*inc.uid) : "unknown");
      if (inc.nspid) out->append(", nspid ").append(std::to_string(*inc.nspid));
      if (inc.cgroup) out->append(", cgroup ").append(*inc.cgroup);
      out->append("\n    start ").append(OptTime(inc.start_time, base, "unknown"));
      out->append("\n    exit  ").append(OptTime(inc.exit_time, base, inc.alive ? "-" : "unknown"));
      out->append("\n");
      for (const auto& s : inc.sources) {
        out->append("    source ").append(proto::OriginName(s.origin)).append(" ").append(s.path);
        out->append("\n      owner uid ").append(s.owner ? std::to_string(*s.owner) : "?");
        if (!s.trust.empty()) out->append(" (trusted: ").append(s.trust).append(")");
        out->append(", state ").append(proto::SourceStateName(s.state));
        out->append(", ").append(std::to_string(s.bytes_read)).append(" bytes");
        if (s.records) out->append(", ").append(std::to_string(*s.records)).append(" records");
        out->append(", ").append(std::to_string(s.ranges)).append(" ranges\n");
        if (!s.error.empty()) out->append("      error: ").append(s.error).append("\n");
      }
    }
  }

  out->append("\ndefinitions covering ").append(proto::FormatAddress(e.addr)).append(":\n");
  if (e.definitions_omitted != 0) {
    out->append("  (").append(std::to_string(e.definitions_omitted));
    out->append(" older definitions not shown)\n");
  }
  if (e.definitions.empty()) out->append("  (none)\n");
  for (const auto& d : e.definitions) {
    out->append(d.picked ? "* " : "  ");
    out->append("[").append(OptTime(d.from, base, "mapped"));
    out->append(", ").append(OptTime(d.to, base, "now")).append(")  ");
    out->append(proto::FormatAddress(d.start)).append("+").append(std::to_string(d.size));
    out->append("  ").append(d.removed ? "(removed)" : d.name);
    out->append("  [").append(proto::OriginName(d.origin));
    if (d.incarnation) out->append(" incarnation ").append(std::to_string(*d.incarnation));
    out->append(" ").append(d.source).append("]");
    if (d.from && d.to && *d.to == *d.from) out->append("  (never answered)");
    out->append("\n");
  }

  if (!e.ignored.empty()) {
    out->append("\nignored files:\n");
    for (const auto& i : e.ignored) {
      out->append("  ").append(i.path).append(": ").append(i.reason).append("\n");
    }
  }

  out->append("\nanswer: ");
  if (a == nullptr) {
    out->append("(none)\n");
  } else if (a->found) {
    out->append(a->name);
    if (a->offset != 0) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "+0x%" PRIx64, a->offset);
      out->append(buf);
    }
    out->append(" (").append(proto::OriginName(a->origin));
    if (!a->source.empty()) out->append(", ").append(a->source);
    if (a->source.empty() && !a->image.empty()) out->append(", ").append(a->image);
    out->append(")");
    if (!a->file.empty()) {
      out->append(" at ").append(a->file).append(":").append(std::to_string(a->line));
      if (a->column != 0) out->append(":").append(std::to_string(a->column));
    }
    out->append("\n");
    // Found, but without what debug info would give (a split DWARF part is missing).
    if (a->reason != proto::Reason::kNone) {
      out->append("  ").append(proto::ReasonName(a->reason));
      if (!a->detail.empty()) out->append(": ").append(a->detail);
      out->append("\n");
    }
  } else {
    // As jitsym lookup prints a miss: the reason code, then its sentence.
    out->append("??");
    if (a->reason != proto::Reason::kNone) {
      out->append(" ").append(proto::ReasonName(a->reason));
      if (!a->detail.empty()) out->append(": ").append(a->detail);
    } else if (!a->error.empty()) {
      out->append(" (").append(a->error).append(")");
    }
    out->append("\n");
  }
  out->append("rule: ").append(e.rule).append("\n");
}

}  // namespace

int RunExplain(const GlobalOptions& globals, const std::vector<std::string>& args) {
  std::optional<std::string> pid_text, image, time_text;
  bool json = false;
  ArgParser parser("explain", kUsage);
  parser.AddValue("--pid", &pid_text);
  parser.AddValue("--image", &image);
  parser.AddValue("--time", &time_text);
  parser.AddFlag("--json", &json);
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return *status;
  proto::ExplainRequest request;
  if (pid_text && image) return parser.UsageError("--pid and --image exclude each other");
  if (!pid_text && !image) return parser.UsageError("--pid or --image is required");
  if (pid_text) {
    const std::optional<uint64_t> pid = proto::ParseDecimal(*pid_text);
    if (!pid || *pid == 0 || *pid > 0x7fffffff) {
      return parser.UsageError("invalid PID '" + *pid_text + "'");
    }
    request.pid = static_cast<int64_t>(*pid);
  }
  if (image) {
    request.image = *image;
    if (image->find('/') != std::string::npos && image->front() != '/') {
      // A relative path names a file here; the daemon wants it absolute.
      std::error_code ec;
      const std::filesystem::path absolute = std::filesystem::absolute(*image, ec);
      if (!ec) request.image = absolute.string();
    }
  }
  // A file is opened here and its descriptor named: the daemon reads it, not the path.
  ImageFiles image_files;
  image_files.Attach(&request);
  if (time_text) {
    request.time = proto::ParseTime(*time_text);
    if (!request.time) {
      return parser.UsageError("invalid --time '" + *time_text +
                               "' (CLOCK_MONOTONIC nanoseconds, or seconds like 219.895069)");
    }
  }
  if (positional.size() != 1) return parser.UsageError("exactly one ADDR is required");
  const std::optional<uint64_t> addr = proto::ParseAddress(positional[0]);
  if (!addr) return parser.UsageError("invalid address '" + positional[0] + "'");
  request.addr = *addr;

  std::optional<proto::Response> response = CallOrReport(globals, {"", request});
  if (!response) return kExitError;
  const auto* explain = std::get_if<proto::ExplainResponse>(&response->body);
  if (explain == nullptr) {
    std::fprintf(stderr, "jitsym: jitsymd answered explain with something else\n");
    return kExitError;
  }
  Output output;
  std::string& out = output.buffer();
  if (json) {
    proto::EncodeExplain(*explain, &out);
    out.push_back('\n');
  } else {
    Print(*explain, &out);
  }
  if (!output.Flush()) return kExitError;
  // As lookup: the process unknown or not the caller's to see is not an answer.
  const proto::Reason reason =
      explain->answer.results.empty() ? proto::Reason::kNone : explain->answer.results[0].reason;
  return ExitStatusFor(reason == proto::Reason::kUnknownProcess,
                       reason == proto::Reason::kPermissionDenied);
}

}  // namespace jitsym::client
