// Parses perfinfo maps (see perfinfo_parser.h).
#include "daemon/formats/perfinfo/perfinfo_parser.h"

#include <optional>

#include "proto/hex.h"

namespace jitsym::perfinfo {

std::vector<PerfInfoImage> ParsePerfInfo(std::string_view text) {
  std::vector<PerfInfoImage> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string_view> f;
    while (!line.empty()) {
      const size_t semi = line.find(';');
      f.push_back(line.substr(0, semi));
      line.remove_prefix(semi == std::string_view::npos ? line.size() : semi + 1);
    }
    if (f.size() < 4 || f[0] != "ImageLoad") continue;
    const std::optional<uint64_t> base = ParseHex64(f[3]);
    if (!base || *base == 0) continue;  // not ReadyToRun: the runtime logs base 0
    out.push_back({std::string(f[1]), std::string(f[2]), *base});
  }
  return out;
}

}  // namespace jitsym::perfinfo
