// Parses perfinfo maps (see perfinfo_parser.h).
#include "daemon/formats/perfinfo/perfinfo_parser.h"

#include <optional>

namespace jitsym::perfinfo {
namespace {

// A hex address as the runtime prints it, with or without "0x"; nullopt for "(nil)" and for
// anything wider than 64 bits.
std::optional<uint64_t> ParseHex(std::string_view text) {
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  while (i + 1 < text.size() && text[i] == '0') ++i;
  if (text.size() - i > 16) return std::nullopt;
  uint64_t value = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  return value;
}

}  // namespace

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
    const std::optional<uint64_t> base = ParseHex(f[3]);
    if (!base || *base == 0) continue;  // not ReadyToRun: the runtime logs base 0
    out.push_back({std::string(f[1]), std::string(f[2]), *base});
  }
  return out;
}

}  // namespace jitsym::perfinfo
