// Counting and printing what was named and what was not.
#include "client/frame_summary.h"

namespace jitsym::client {

std::string UnknownKey(const proto::LookupResult& r) {
  // The daemon's reason (proto::Reason); an older daemon's per-address error otherwise.
  if (r.reason != proto::Reason::kNone) return std::string(proto::ReasonName(r.reason));
  if (!r.error.empty()) return r.error;
  return "unknown";
}

uint64_t FrameSummary::named() const {
  uint64_t n = 0;
  for (const auto& [key, count] : named_) n += count;
  return n;
}

uint64_t FrameSummary::unknown() const {
  uint64_t n = 0;
  for (const auto& [key, count] : unknown_) n += count;
  return n;
}

uint64_t FrameSummary::unknown(std::string_view key) const {
  auto it = unknown_.find(std::string(key));
  return it == unknown_.end() ? 0 : it->second;
}

std::string FrameSummary::Format(std::string_view command, std::string_view what) const {
  const uint64_t named = this->named(), unknown = this->unknown();
  std::string out = "jitsym ";
  out.append(command);
  out += ": summary: " + std::to_string(named + unknown) + " ";
  out.append(what);
  out += " to name, " + std::to_string(named) + " named, " + std::to_string(unknown) +
         " left unknown\n";
  for (const auto& [origin, n] : named_) {
    out += "  named by " + origin + ": " + std::to_string(n) + "\n";
  }
  for (const auto& [key, n] : unknown_) {
    out += "  left unknown, reason " + key;
    if (key == kNoPidKey) out += " (no pid or tid in the input: nobody to ask)";
    out += ": " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace jitsym::client
