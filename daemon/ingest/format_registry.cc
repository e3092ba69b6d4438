// The file names the daemon follows, and which Source reads each.
#include <charconv>

#include "daemon/ingest/jitdump_source.h"
#include "daemon/ingest/mlpd_source.h"
#include "daemon/ingest/perfmap_source.h"
#include "daemon/ingest/r2rmap_source.h"
#include "daemon/ingest/source.h"

namespace jitsym::ingest {
namespace {

// "<prefix><decimal pid><suffix>", nothing else.
std::optional<uint32_t> PidFromName(std::string_view name, std::string_view prefix,
                                    std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 10 || digits[0] == '0') return std::nullopt;
  uint32_t pid = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end != digits.data() + digits.size() || pid == 0) return std::nullopt;
  return pid;
}

}  // namespace

std::optional<FileMatch> MatchFile(std::string_view filename) {
  if (auto pid = PidFromName(filename, "jit-", ".dump")) {
    return FileMatch{JitdumpSource::kOrigin, pid, std::nullopt,
                     [](const std::string& path, const SourceContext&) {
                       return std::make_unique<JitdumpSource>(path);
                     }};
  }
  if (auto pid = PidFromName(filename, "perf-", ".map")) {
    return FileMatch{PerfmapSource::kOrigin, pid, std::nullopt,
                     [](const std::string& path, const SourceContext& context) {
                       return std::make_unique<PerfmapSource>(path, context);
                     }};
  }
  // ReadyToRun perf maps: <image>.ni.r2rmap, and crossgen1's <image>.ni.{MVID}.map.
  std::string mvid;
  if (auto image = R2rmapImageName(filename, &mvid)) {
    return FileMatch{R2rmapSource::kOrigin, std::nullopt, std::move(image),
                     [mvid](const std::string& path, const SourceContext&) {
                       return std::make_unique<R2rmapSource>(path, mvid);
                     }};
  }
  // A Mono log profiler file names no pid: the ingester attaches it by the header's pid.
  if (filename.size() > 5 && filename.ends_with(".mlpd")) {
    return FileMatch{MlpdSource::kOrigin, std::nullopt, std::nullopt,
                     [](const std::string& path, const SourceContext&) {
                       return std::make_unique<MlpdSource>(path);
                     }};
  }
  return std::nullopt;
}

}  // namespace jitsym::ingest
