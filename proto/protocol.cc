// Scalar helpers of the protocol: socket path, addresses, times.
#include "proto/protocol.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>

#include "daemon/util/hex.h"
#include "proto/daemon_socket.h"
#include "proto/json_writer.h"

namespace jitsym::proto {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;

}  // namespace

std::string DefaultSocketPath() {
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  return DaemonSocketPathFor(geteuid(), runtime_dir != nullptr ? runtime_dir : "");
}

std::optional<uint64_t> ParseAddress(std::string_view text) { return ParseHex64(text); }

std::string FormatAddress(uint64_t value) {
  std::string out;
  json::AppendHexString(value, &out);
  return out.substr(1, out.size() - 2);
}

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  // Up to 19 digits cannot overflow; check only beyond that.
  const size_t safe = std::min<size_t>(text.size(), 19);
  size_t i = 0;
  for (; i < safe; ++i) {
    const unsigned digit = static_cast<unsigned char>(text[i]) - '0';
    if (digit > 9) return std::nullopt;
    value = value * 10 + digit;
  }
  for (; i < text.size(); ++i) {
    const unsigned digit = static_cast<unsigned char>(text[i]) - '0';
    if (digit > 9) return std::nullopt;
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

std::optional<uint64_t> ParseTime(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) return ParseDecimal(text);
  // Seconds with a fraction, as `perf script` prints them. Both sides need digits: "1." and
  // ".5" are more likely typos than times.
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = text.substr(dot + 1);
  if (fraction.empty() || fraction.size() > 9) return std::nullopt;
  const std::optional<uint64_t> seconds = ParseDecimal(whole);
  std::optional<uint64_t> frac = ParseDecimal(fraction);
  if (!seconds || !frac) return std::nullopt;
  for (size_t i = fraction.size(); i < 9; ++i) *frac *= 10;
  if (*seconds > (std::numeric_limits<uint64_t>::max() - *frac) / kNsPerSecond) {
    return std::nullopt;
  }
  return *seconds * kNsPerSecond + *frac;
}

Response MakeErrorResponse(std::string id_json, std::string_view code, std::string message) {
  return Response{std::move(id_json), ErrorResponse{std::string(code), std::move(message)}};
}

namespace {
struct FieldName {
  std::string_view name;
  uint32_t bit;
};
constexpr FieldName kFieldNames[] = {
    {"name", kFieldName},          {"offset", kFieldOffset},           {"start", kFieldStart},
    {"size", kFieldSize},          {"origin", kFieldOrigin},           {"source", kFieldSource},
    {"loaded_at", kFieldLoadedAt}, {"incarnation", kFieldIncarnation}, {"file", kFieldPosition},
    {"line", kFieldPosition},      {"column", kFieldPosition},         {"image", kFieldImage},
    {"build_id", kFieldBuildId},   {"frames", kFieldFrames},           {"clone", kFieldClone},
};
}  // namespace

uint32_t ResultFieldFromName(std::string_view name) {
  for (const FieldName& f : kFieldNames) {
    if (f.name == name) return f.bit;
  }
  return 0;
}

std::vector<std::string_view> ResultFieldNames(uint32_t mask) {
  std::vector<std::string_view> out;
  uint32_t seen = 0;
  for (const FieldName& f : kFieldNames) {
    if ((mask & f.bit) && !(seen & f.bit)) {
      out.push_back(f.name);
      seen |= f.bit;
    }
  }
  return out;
}

void ResetLookupResult(LookupResult* r) {
  r->addr = 0;
  r->found = false;
  r->error.clear();
  r->raw.clear();
  r->reason = Reason::kNone;
  r->detail.clear();
  r->name = {};
  r->offset = r->start = r->size = 0;
  r->origin = Origin::kUnknown;
  r->image = r->source = r->file = r->build_id = r->clone = {};
  r->line = r->column = 0;
  r->loaded_at.reset();
  r->incarnation.reset();
  r->frames.clear();
}

}  // namespace jitsym::proto
