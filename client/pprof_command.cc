// jitsym pprof: names the pcs of a CPU profile through jitsymd: a gperftools CPU profile
// (CPUPROFILE=, cpu_profile_resolve.h) or a pprof profile.proto whose locations are raw addresses
// (profile_symbolize.h). Then a flat table (--text), collapsed stacks (--folded), a symbolized
// gperftools profile that google-pprof reads (--symbolized OUT), or a profile.proto with the
// names filled in (--proto OUT) for go tool pprof and profile stores.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "client/args.h"
#include "client/command.h"
#include "client/cpu_profile_resolve.h"
#include "client/daemon_call.h"
#include "client/frame_summary.h"
#include "client/gperftools_profile.h"
#include "client/named_stacks.h"
#include "client/output.h"
#include "client/pc_resolver.h"
#include "client/pprof_sink.h"
#include "client/profile_proto.h"
#include "client/profile_symbolize.h"
#include "proto/client_connection.h"
#include "proto/protocol.h"

namespace jitsym::client {
namespace {

constexpr char kUsage[] =
    "usage: jitsym pprof PROFILE [--pid PID]\n"
    "                    [--text | --folded | --symbolized OUT | --proto OUT] [--label K=V]\n"
    "                    [--quiet]\n"
    "\n"
    "Names the pcs of a CPU profile through jitsymd: JIT code by pid (the latest code at each\n"
    "address: these formats have no sample times), native code through the profile's mappings\n"
    "as ELF image lookups by file offset. PROFILE is either\n"
    "  - a gperftools CPU profile (CPUPROFILE=PROFILE with libprofiler.so): --pid is required;\n"
    "  - a pprof profile.proto, gzip'd or not, whose locations are raw addresses: the process\n"
    "    of each sample is its numeric `pid` label, else --pid. Locations that already have\n"
    "    functions are kept as they are.\n"
    "\n"
    "  --pid PID         the profiled process\n"
    "  --text            flat and cumulative samples per function, as pprof --text (default;\n"
    "                    for profile.proto input, the `samples` sample type when it has one)\n"
    "  --folded          collapsed stacks (outer;...;leaf COUNT) for flame graph tools\n"
    "  --symbolized OUT  write a symbolized gperftools profile that google-pprof reads:\n"
    "                    google-pprof --text OUT (gperftools input only)\n"
    "  --proto OUT       write a gzip'd profile.proto with the names filled in (`-`: stdout):\n"
    "                    go tool pprof -top OUT\n"
    "  --label K=V       with --proto: a label on every sample (host=..., service=...);\n"
    "                    may be repeated\n"
    "  --quiet           no summary on stderr\n"
    "\n"
    "Ends with a summary on stderr: pcs named per origin, left unknown per reason, and a\n"
    "warning when no JIT pc of PID was named (jitsymd may not know the process).\n"
    "Exit status: 0, or 1 on an error, 2 usage, 3 when jitsymd knows no process PID, 4 when\n"
    "it may not tell about it (the output is written in every case but 1 and 2).\n";

// Inflated profile.proto bytes at most (a gzip bomb stops here).
constexpr size_t kMaxProtoBytes = size_t{1} << 30;

// Appends a string to a profile's table; its index.
int64_t AppendString(pprof::Profile* p, std::string s) {
  p->string_table.push_back(std::move(s));
  return static_cast<int64_t>(p->string_table.size() - 1);
}

void PrintText(const NamedStacks& named, std::string* out) {
  uint64_t total = 0;
  std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> by_name;  // flat, cum
  std::set<std::string_view> seen;
  for (size_t i = 0; i < named.stacks.size(); ++i) {
    const uint64_t count = named.counts[i];
    total += count;
    const auto& names = named.stacks[i];
    if (names.empty()) continue;
    by_name[names[0]].first += count;
    seen.clear();
    for (const std::string& n : names) {
      if (seen.insert(n).second) by_name[n].second += count;
    }
  }
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> rows(by_name.begin(),
                                                                          by_name.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (a.second.first != b.second.first) return a.second.first > b.second.first;
    if (a.second.second != b.second.second) return a.second.second > b.second.second;
    return a.first < b.first;
  });
  char buf[128];
  std::snprintf(buf, sizeof(buf), "Total: %llu samples\n", static_cast<unsigned long long>(total));
  out->append(buf);
  const double t = total == 0 ? 1.0 : static_cast<double>(total);
  uint64_t sum = 0;
  for (const auto& [name, fc] : rows) {
    sum += fc.first;
    std::snprintf(buf, sizeof(buf), "%8llu %5.1f%% %5.1f%% %8llu %5.1f%% ",
                  static_cast<unsigned long long>(fc.first), 100.0 * fc.first / t, 100.0 * sum / t,
                  static_cast<unsigned long long>(fc.second), 100.0 * fc.second / t);
    out->append(buf);
    AppendClean(name, out);
    out->push_back('\n');
  }
}

void PrintFolded(const NamedStacks& named, std::string* out) {
  std::map<std::string, uint64_t> folded;
  for (size_t i = 0; i < named.stacks.size(); ++i) {
    std::string key;
    for (auto it = named.stacks[i].rbegin(); it != named.stacks[i].rend(); ++it) {
      if (!key.empty()) key.push_back(';');
      AppendFoldName(*it, &key);
    }
    folded[key] += named.counts[i];
  }
  for (const auto& [stack, count] : folded) {
    out->append(stack);
    out->push_back(' ');
    out->append(std::to_string(count));
    out->push_back('\n');
  }
}

struct Options {
  std::optional<int64_t> pid;
  bool text = false, folded = false, quiet = false;
  std::optional<std::string> symbolized, proto_out;
  std::vector<std::pair<std::string, std::string>> labels;
};

// Writes --text or --folded.
int PrintStacks(const Options& o, const NamedStacks& named) {
  Output output;
  if (o.folded) {
    PrintFolded(named, &output.buffer());
  } else {
    PrintText(named, &output.buffer());
  }
  return output.Flush() ? kExitOk : kExitError;
}

// ---- gperftools input ----

// The gperftools profile as profile.proto: samples/count and cpu/nanoseconds, the profile's
// mappings (with the build ids jitsymd reported), a location per resolved pc.
pprof::Profile CpuProfileToProto(const CpuProfile& profile, const ResolvedPcs& resolved,
                                 int64_t pid, const Options& o) {
  pprof::ProfileBuilder b;
  b.AddSampleType("samples", "count");
  b.AddSampleType("cpu", "nanoseconds");
  const int64_t period_ns = static_cast<int64_t>(profile.period_us) * 1000;
  b.SetPeriod("cpu", "nanoseconds", period_ns);
  b.AddComment("jitsym pprof: gperftools CPU profile of pid " + std::to_string(pid));
  // Per mapping: whether every pc in it was named, and a build id jitsymd reported.
  std::map<const ProfileMapping*, std::pair<bool, std::string>> facts;
  for (uint64_t pc : resolved.pcs) {
    const ProfileMapping* m = resolved.MappingOf(pc);
    if (m == nullptr) continue;
    auto [it, _] = facts.try_emplace(m, true, std::string());
    auto named = resolved.named.find(pc);
    if (named == resolved.named.end()) {
      it->second.first = false;
    } else if (it->second.second.empty()) {
      it->second.second = named->second.build_id;
    }
  }
  std::map<const ProfileMapping*, uint64_t> mapping_ids;
  for (const auto& [m, f] : facts) {
    pprof::ProfileBuilder::MappingSpec spec;
    spec.memory_start = m->start;
    spec.memory_limit = m->end;
    spec.file_offset = m->offset;
    spec.filename = m->path;
    spec.build_id = f.second;
    spec.has_functions = spec.has_filenames = spec.has_line_numbers = spec.has_inline_frames =
        f.first;
    mapping_ids[m] = b.AddMapping(spec);
  }
  std::unordered_map<uint64_t, uint64_t> location_of;
  std::vector<pprof::Line> lines;
  for (uint64_t pc : resolved.pcs) {
    lines.clear();
    if (auto it = resolved.named.find(pc); it != resolved.named.end()) {
      for (const NamedFrame& f : it->second.frames) {
        lines.push_back({b.AddFunction(f.name, f.name, f.file, 0), f.line, f.column});
      }
    }
    const ProfileMapping* m = resolved.MappingOf(pc);
    location_of[pc] = b.AddLocation(m == nullptr ? 0 : mapping_ids[m], pc, lines);
  }
  std::vector<pprof::Label> labels = {b.NumLabel("pid", pid)};
  for (const auto& [k, v] : o.labels) labels.push_back(b.StringLabel(k, v));
  std::vector<uint64_t> ids;
  for (const auto& s : profile.samples) {
    ids.clear();
    const uint64_t* p = profile.pcs_of(s);
    for (uint32_t k = 0; k < s.depth; ++k) ids.push_back(location_of[ResolvedPc(p, k)]);
    const int64_t values[2] = {static_cast<int64_t>(s.count),
                               static_cast<int64_t>(s.count) * period_ns};
    b.AddSample(ids, values, labels);
  }
  return b.Take();
}

int RunCpuProfile(const GlobalOptions& globals, const Options& o, const std::string& path,
                  const CpuProfile& profile) {
  if (!o.pid) {
    std::fprintf(stderr, "jitsym pprof: %s is a gperftools CPU profile: --pid is required\n",
                 path.c_str());
    return kExitUsage;
  }
  auto connection = ConnectOrReport(globals);
  if (!connection) return kExitError;
  PcResolver resolver(*connection);
  ResolvedPcs resolved;
  if (!ResolveCpuProfile(profile, *o.pid, &resolver, &resolved)) return kExitError;
  if (!o.quiet) ReportResolveSummary("pprof", *o.pid, resolved);

  if (o.symbolized) {
    std::map<uint64_t, std::vector<std::string>> sorted;
    for (const auto& [pc, n] : resolved.named) {
      std::vector<std::string> outermost_first;
      for (auto it = n.frames.rbegin(); it != n.frames.rend(); ++it) {
        outermost_first.push_back(it->name);
      }
      sorted.emplace(pc, std::move(outermost_first));
    }
    std::string binary;
    for (const ProfileMapping& m : profile.mappings) {
      if (IsNativeFile(m.path)) {
        binary = m.path;  // the executable comes first in /proc/self/maps
        break;
      }
    }
    const std::string data = WriteSymbolizedProfile(profile, binary, sorted);
    if (!WriteFileBytes(data, *o.symbolized)) return kExitError;
    if (!o.quiet) {
      std::fprintf(stderr, "jitsym: named %zu of %zu pcs; wrote %s (google-pprof --text %s)\n",
                   resolved.named.size(), resolved.pcs.size(), o.symbolized->c_str(),
                   o.symbolized->c_str());
    }
    return resolver.ExitStatus();
  }
  if (o.proto_out) {
    if (!WriteProfileFile(CpuProfileToProto(profile, resolved, *o.pid, o), *o.proto_out)) {
      return kExitError;
    }
    return resolver.ExitStatus();
  }
  const NamedStacks named = CpuProfileStacks(profile, resolved);
  const int status = PrintStacks(o, named);
  return status != kExitOk ? status : resolver.ExitStatus();
}

// ---- profile.proto input ----

// Which value --text and --folded count: `samples` when the profile has it, else the default
// sample type, else the last (pprof's default).
size_t CountedValue(const pprof::Profile& p) {
  for (size_t i = 0; i < p.sample_type.size(); ++i) {
    if (p.str(p.sample_type[i].type) == "samples") return i;
  }
  for (size_t i = 0; i < p.sample_type.size(); ++i) {
    if (p.default_sample_type != 0 && p.sample_type[i].type == p.default_sample_type) return i;
  }
  return p.sample_type.empty() ? 0 : p.sample_type.size() - 1;
}

int RunProtoProfile(const GlobalOptions& globals, const Options& o, const std::string& path,
                    pprof::Profile profile) {
  if (o.symbolized) {
    std::fprintf(stderr,
                 "jitsym pprof: --symbolized writes gperftools' format; %s is a profile.proto: "
                 "use --proto OUT\n",
                 path.c_str());
    return kExitUsage;
  }
  auto connection = ConnectOrReport(globals);
  if (!connection) return kExitError;
  PcResolver resolver(*connection);
  FrameSummary jit, files;
  SymbolizeCounts counts;
  if (!SymbolizeProfile(&profile, o.pid, &resolver, &jit, &files, &counts)) return kExitError;
  if (!o.quiet) {
    if (counts.no_pid > 0) {
      std::fprintf(stderr,
                   "jitsym pprof: warning: %llu locations outside files are used by samples "
                   "without a `pid` label: they stay unnamed (give --pid)\n",
                   static_cast<unsigned long long>(counts.no_pid));
    }
    if (jit.unknown(kUnknownProcessKey) > 0) {
      std::fprintf(stderr,
                   "jitsym pprof: warning: jitsymd knows nothing about %s: its JIT code stays "
                   "unnamed (`jitsym processes` lists the processes it knows)\n",
                   counts.pids.size() == 1 ? ("pid " + std::to_string(counts.pids[0])).c_str()
                                           : "some of the profile's pids");
    }
    std::fputs(jit.Format("pprof", "JIT locations (by pid)").c_str(), stderr);
    if (files.named() + files.unknown() > 0) {
      std::fputs(files.Format("pprof", "locations in files").c_str(), stderr);
    }
  }
  if (o.proto_out) {
    std::vector<pprof::Label> extra;  // the strings once, the labels on every sample
    for (const auto& [k, v] : o.labels) {
      pprof::Label l;
      l.key = AppendString(&profile, k);
      l.str = AppendString(&profile, v);
      extra.push_back(l);
    }
    for (pprof::Sample& s : profile.sample)
      s.label.insert(s.label.end(), extra.begin(), extra.end());
    profile.comment.push_back(AppendString(&profile, "jitsym pprof: names filled in"));
    if (!WriteProfileFile(profile, *o.proto_out)) return kExitError;
    return resolver.ExitStatus();
  }
  const int status = PrintStacks(o, ProtoProfileStacks(profile, CountedValue(profile)));
  return status != kExitOk ? status : resolver.ExitStatus();
}

}  // namespace

int RunPprof(const GlobalOptions& globals, const std::vector<std::string>& args) {
  Options o;
  std::optional<std::string> pid_text;
  std::vector<std::string> label_texts;
  ArgParser parser("pprof", kUsage);
  parser.AddFlag("--quiet", &o.quiet);
  parser.AddValue("--pid", &pid_text);
  parser.AddFlag("--text", &o.text);
  parser.AddFlag("--folded", &o.folded);
  parser.AddValue("--symbolized", &o.symbolized);
  parser.AddValue("--proto", &o.proto_out);
  parser.AddList("--label", &label_texts);
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return *status;
  if (positional.size() != 1) return parser.UsageError("one PROFILE is required");
  if (pid_text) {
    const std::optional<uint64_t> pid = proto::ParseDecimal(*pid_text);
    if (!pid || *pid == 0 || *pid > 0x7fffffff) {
      return parser.UsageError("invalid PID '" + *pid_text + "'");
    }
    o.pid = static_cast<int64_t>(*pid);
  }
  if (int(o.text) + int(o.folded) + int(o.symbolized.has_value()) + int(o.proto_out.has_value()) >
      1) {
    return parser.UsageError("--text, --folded, --symbolized and --proto exclude each other");
  }
  for (const std::string& t : label_texts) {
    std::string error;
    if (!ParseLabel(t, &o.labels.emplace_back(), &error)) return parser.UsageError(error);
  }
  if (!o.labels.empty() && !o.proto_out) return parser.UsageError("--label goes with --proto");
  const std::string& path = positional[0];
  const Result<std::string> file = ReadWholeFile(path);
  if (!file) {
    std::fprintf(stderr, "jitsym: cannot read %s: %s\n", path.c_str(),
                 file.error().message.c_str());
    return kExitError;
  }
  const std::string& bytes = *file;  // a CPU profile points into it
  Result<CpuProfile> profile = ParseCpuProfile(bytes);
  if (profile) return RunCpuProfile(globals, o, path, *profile);
  if (profile.error().kind != ErrorKind::kNotThisFormat) {
    const Error& e = profile.error();
    std::fprintf(stderr, "jitsym: %s: corrupt gperftools profile: %s (offset %llu)\n", path.c_str(),
                 e.message.c_str(), static_cast<unsigned long long>(e.offset));
    return kExitError;
  }
  // Not a gperftools profile: a profile.proto, gzip'd or not.
  // Decode validates: every index and id of the profile it returns is in range.
  const bool gzipped = bytes.size() >= 2 && bytes[0] == '\x1f' && bytes[1] == '\x8b';
  Result<std::string> raw = pprof::MaybeGunzip(bytes, kMaxProtoBytes);
  if (!raw) {
    std::fprintf(stderr, "jitsym: %s: corrupt gzip data: %s (offset %llu)\n", path.c_str(),
                 raw.error().message.c_str(), static_cast<unsigned long long>(raw.error().offset));
    return kExitError;
  }
  Result<pprof::Profile> proto = pprof::Decode(*raw);
  if (!proto) {
    const Error& e = proto.error();
    if (e.kind == ErrorKind::kNotThisFormat) {
      std::fprintf(stderr,
                   "jitsym: %s is neither a gperftools CPU profile nor a pprof profile.proto\n",
                   path.c_str());
    } else {
      std::fprintf(stderr, "jitsym: %s: corrupt profile.proto: %s (offset %llu%s)\n", path.c_str(),
                   e.message.c_str(), static_cast<unsigned long long>(e.offset),
                   gzipped ? " of the inflated data" : "");
    }
    return kExitError;
  }
  return RunProtoProfile(globals, o, path, std::move(*proto));
}

}  // namespace jitsym::client
