// jitsym pprof: names the pcs of a gperftools CPU profile through jitsymd.
//
// Every pc is resolved once (callers' return addresses minus 1, as pprof does): pcs in a file
// the profile's own mapping list names are native code, asked of jitsymd as (file, file offset)
// ELF image lookups; the rest (anonymous memory: JIT code) is asked by pid, as of the latest
// code (the format has no sample times). Then a flat table (--text), collapsed stacks
// (--folded) or a symbolized profile that google-pprof reads (--symbolized OUT).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <unordered_map>

#include "client/args.h"
#include "client/command.h"
#include "client/daemon_call.h"
#include "client/frame_summary.h"
#include "client/gperftools_profile.h"
#include "client/output.h"
#include "client/pc_resolver.h"
#include "proto/client_connection.h"
#include "proto/protocol.h"

namespace jitsym::client {
namespace {

constexpr char kUsage[] =
    "usage: jitsym pprof PROFILE --pid PID [--text | --folded | --symbolized OUT] [--quiet]\n"
    "\n"
    "Resolves the pcs of a gperftools CPU profile (CPUPROFILE=PROFILE with libprofiler.so)\n"
    "through jitsymd: JIT code by PID (the latest code at each address: the format has no\n"
    "sample times), native code through the profile's mapping list as ELF image lookups.\n"
    "\n"
    "  --pid PID         the profiled process\n"
    "  --text            flat and cumulative samples per function, as pprof --text (default)\n"
    "  --folded          collapsed stacks (outer;...;leaf COUNT) for flame graph tools\n"
    "  --symbolized OUT  write a symbolized profile that google-pprof reads:\n"
    "                    google-pprof --text OUT\n"
    "  --quiet           no summary on stderr\n"
    "\n"
    "Ends with a summary on stderr: pcs named per origin, left unknown per reason, and a\n"
    "warning when no JIT pc of PID was named (jitsymd may not know the process).\n"
    "Exit status: 0, or 1 on an error, 2 usage, 3 when jitsymd knows no process PID, 4 when\n"
    "it may not tell about it (the output is written in every case but 1 and 2).\n";

constexpr size_t kBatch = 8192;
constexpr size_t kMaxProfileBytes = size_t{4} << 30;

// The whole file; a failure's message is for "cannot read PATH: MESSAGE".
Result<std::string> ReadWholeFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return MakeError(ErrorKind::kIo, std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    out.append(buf, n);
    if (out.size() > kMaxProfileBytes) {
      std::fclose(f);
      return MakeError(ErrorKind::kLimit, "larger than 4 GiB");
    }
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return MakeError(ErrorKind::kIo, "read error");
  return out;
}

// Mappings of files that hold native code (not JIT memory: anonymous, memfd, or pseudo files).
bool IsFileMapping(const ProfileMapping& m) {
  return !m.path.empty() && m.path[0] == '/' && m.path.rfind("/memfd:", 0) != 0 &&
         m.path.rfind("/dev/", 0) != 0;
}

// A pc's function names, outermost first: the function, then what was inlined into it down to
// the innermost.
std::vector<std::string> FunctionsOf(const NamedPc& pc) {
  std::vector<std::string> out;
  for (auto it = pc.frames.rbegin(); it != pc.frames.rend(); ++it) out.push_back(it->name);
  return out;
}

// pprof's ShortFunctionName: no argument types, no template arguments, no leading return type;
// what `pprof --text` prints, so that the tables compare.
std::string ShortFunctionName(std::string name) {
  static const std::regex args(R"(\([^()]*\)(\s*const)?)");
  static const std::regex templates(R"(<[^<>]*>)");
  static const std::regex leading(R"(^.*\s+(\w+::))");
  if (name.find('(') != std::string::npos) {
    for (std::string next; (next = std::regex_replace(name, args, "")) != name;) name = next;
  }
  if (name.find('<') != std::string::npos) {
    for (std::string next; (next = std::regex_replace(name, templates, "")) != name;) {
      name = next;
    }
  }
  if (name.find("::") != std::string::npos) {
    name = std::regex_replace(name, leading, "$1", std::regex_constants::format_first_only);
  }
  return name;
}

std::string Hex(uint64_t pc) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(pc));
  return buf;
}

void PrintText(const CpuProfile& profile, const std::vector<std::vector<std::string>>& stacks,
               std::string* out) {
  uint64_t total = 0;
  std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> by_name;  // flat, cum
  std::set<std::string_view> seen;
  for (size_t i = 0; i < profile.samples.size(); ++i) {
    const uint64_t count = profile.samples[i].count;
    total += count;
    const auto& names = stacks[i];
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
    out->append(name);
    out->push_back('\n');
  }
}

void PrintFolded(const CpuProfile& profile, const std::vector<std::vector<std::string>>& stacks,
                 std::string* out) {
  std::map<std::string, uint64_t> folded;
  for (size_t i = 0; i < profile.samples.size(); ++i) {
    std::string key;
    for (auto it = stacks[i].rbegin(); it != stacks[i].rend(); ++it) {
      if (!key.empty()) key.push_back(';');
      for (char c : *it) key.push_back(c == ';' ? ':' : c);
    }
    folded[key] += profile.samples[i].count;
  }
  for (const auto& [stack, count] : folded) {
    out->append(stack);
    out->push_back(' ');
    out->append(std::to_string(count));
    out->push_back('\n');
  }
}

}  // namespace

int RunPprof(const GlobalOptions& globals, const std::vector<std::string>& args) {
  std::optional<std::string> pid_text, symbolized;
  bool text = false, folded = false, quiet = false;
  ArgParser parser("pprof", kUsage);
  parser.AddFlag("--quiet", &quiet);
  parser.AddValue("--pid", &pid_text);
  parser.AddFlag("--text", &text);
  parser.AddFlag("--folded", &folded);
  parser.AddValue("--symbolized", &symbolized);
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return *status;
  if (positional.size() != 1) return parser.UsageError("one PROFILE is required");
  if (!pid_text) return parser.UsageError("--pid is required");
  const std::optional<uint64_t> pid = proto::ParseDecimal(*pid_text);
  if (!pid || *pid == 0 || *pid > 0x7fffffff) {
    return parser.UsageError("invalid PID '" + *pid_text + "'");
  }
  if (int(text) + int(folded) + int(symbolized.has_value()) > 1) {
    return parser.UsageError("--text, --folded and --symbolized exclude each other");
  }
  const std::string& path = positional[0];
  const Result<std::string> file = ReadWholeFile(path);
  if (!file) {
    std::fprintf(stderr, "jitsym: cannot read %s: %s\n", path.c_str(),
                 file.error().message.c_str());
    return kExitError;
  }
  const std::string& bytes = *file;  // the profile points into it
  Result<CpuProfile> profile = ParseCpuProfile(bytes);
  if (!profile) {
    const Error& e = profile.error();
    std::fprintf(stderr, "jitsym: %s: %s%s (offset %llu)\n", path.c_str(),
                 e.kind == ErrorKind::kNotThisFormat ? "" : "corrupt profile: ", e.message.c_str(),
                 static_cast<unsigned long long>(e.offset));
    return kExitError;
  }

  // Every distinct pc, callers minus 1, and where it is asked.
  std::vector<uint64_t> pcs;
  for (const auto& s : profile->samples) {
    const uint64_t* p = profile->pcs_of(s);
    for (uint32_t k = 0; k < s.depth; ++k) pcs.push_back(k == 0 || p[k] == 0 ? p[k] : p[k] - 1);
  }
  std::sort(pcs.begin(), pcs.end());
  pcs.erase(std::unique(pcs.begin(), pcs.end()), pcs.end());
  std::vector<ProfileMapping> maps = profile->mappings;
  std::sort(maps.begin(), maps.end(),
            [](const ProfileMapping& a, const ProfileMapping& b) { return a.start < b.start; });
  auto mapping_of = [&](uint64_t pc) -> const ProfileMapping* {
    auto it = std::upper_bound(maps.begin(), maps.end(), pc,
                               [](uint64_t a, const ProfileMapping& m) { return a < m.start; });
    if (it == maps.begin()) return nullptr;
    --it;
    return pc < it->end ? &*it : nullptr;
  };
  std::vector<uint64_t> jit;                           // by pid
  std::map<std::string, std::vector<uint64_t>> files;  // by file: pcs
  for (uint64_t pc : pcs) {
    const ProfileMapping* m = mapping_of(pc);
    if (m != nullptr && IsFileMapping(*m)) {
      files[m->path].push_back(pc);
    } else {
      jit.push_back(pc);
    }
  }

  auto connection = ConnectOrReport(globals);
  if (!connection) return kExitError;
  PcResolver resolver(*connection);
  std::unordered_map<uint64_t, NamedPc> named;
  proto::LookupRequest by_pid;
  by_pid.pid = static_cast<int64_t>(*pid);
  FrameSummary jit_summary, file_summary;
  if (!resolver.Ask(
          by_pid, jit, [&](size_t i, const proto::LookupResult& r) { named[jit[i]] = NamePc(r); },
          &jit_summary)) {
    return kExitError;
  }
  for (const auto& entry : files) {
    const auto& file_pcs = entry.second;  // a plain reference: lambdas below capture it
    proto::LookupRequest by_image;
    by_image.image = entry.first;
    by_image.file_offset = true;
    std::vector<uint64_t> offsets;
    for (uint64_t pc : file_pcs) {
      const ProfileMapping* m = mapping_of(pc);
      offsets.push_back(pc - m->start + m->offset);
    }
    if (!resolver.Ask(
            by_image, offsets,
            [&](size_t i, const proto::LookupResult& r) { named[file_pcs[i]] = NamePc(r); },
            &file_summary)) {
      return kExitError;
    }
  }
  if (!quiet) {
    // The pcs outside the profile's files are the process's JIT code: when none of them is
    // named, the likeliest cause is a process jitsymd knows nothing about; say so, with the pid.
    if (jit_summary.unknown(kUnknownProcessKey) > 0) {
      std::fprintf(stderr,
                   "jitsym pprof: warning: jitsymd knows nothing about pid %llu: its JIT code "
                   "stays unnamed (`jitsym processes` lists the processes it knows)\n",
                   static_cast<unsigned long long>(*pid));
    } else if (jit_summary.unknown("permission_denied") > 0) {
      std::fprintf(stderr,
                   "jitsym pprof: warning: pid %llu: permission denied; its JIT code stays "
                   "unnamed\n",
                   static_cast<unsigned long long>(*pid));
    } else if (!jit.empty() && jit_summary.named() == 0) {
      std::fprintf(stderr,
                   "jitsym pprof: warning: none of the %zu pcs outside the profile's files was "
                   "named for pid %llu: is it the profiled process, and does jitsymd know it "
                   "(`jitsym processes`)?\n",
                   jit.size(), static_cast<unsigned long long>(*pid));
    }
    std::fputs(jit_summary.Format("pprof", "JIT pcs (by pid)").c_str(), stderr);
    if (!files.empty()) {
      std::fputs(file_summary.Format("pprof", "pcs in files").c_str(), stderr);
    }
  }

  Output output;
  std::string& out = output.buffer();
  if (symbolized) {
    std::map<uint64_t, std::vector<std::string>> sorted;
    for (const auto& [pc, n] : named) sorted.emplace(pc, FunctionsOf(n));
    std::string binary;
    for (const ProfileMapping& m : profile->mappings) {
      if (IsFileMapping(m)) {
        binary = m.path;  // the executable comes first in /proc/self/maps
        break;
      }
    }
    const std::string data = WriteSymbolizedProfile(*profile, binary, sorted);
    std::FILE* f = std::fopen(symbolized->c_str(), "wb");
    if (f == nullptr || std::fwrite(data.data(), 1, data.size(), f) != data.size() ||
        std::fclose(f) != 0) {
      std::fprintf(stderr, "jitsym: cannot write %s: %s\n", symbolized->c_str(),
                   std::strerror(errno));
      return kExitError;
    }
    std::fprintf(stderr, "jitsym: named %zu of %zu pcs; wrote %s (google-pprof --text %s)\n",
                 named.size(), pcs.size(), symbolized->c_str(), symbolized->c_str());
    return resolver.ExitStatus();
  }
  std::vector<std::vector<std::string>> stacks(profile->samples.size());
  std::unordered_map<std::string, std::string> short_names;
  for (size_t i = 0; i < profile->samples.size(); ++i) {
    const auto& s = profile->samples[i];
    const uint64_t* p = profile->pcs_of(s);
    for (uint32_t k = 0; k < s.depth; ++k) {
      const uint64_t pc = k == 0 || p[k] == 0 ? p[k] : p[k] - 1;
      auto it = named.find(pc);
      if (it == named.end()) {
        stacks[i].push_back(Hex(pc));
        continue;
      }
      // Leaf first: the innermost inlined function first.
      for (const NamedFrame& f : it->second.frames) {
        auto [short_it, inserted] = short_names.try_emplace(f.name);
        if (inserted) short_it->second = ShortFunctionName(f.name);
        stacks[i].push_back(short_it->second);
      }
    }
  }
  if (folded) {
    PrintFolded(*profile, stacks, &out);
  } else {
    PrintText(*profile, stacks, &out);
  }
  if (!output.Flush()) return kExitError;
  return resolver.ExitStatus();
}

}  // namespace jitsym::client
