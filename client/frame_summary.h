// What a client command did with the addresses it asked about, for its summary on stderr:
// named per origin, left unknown per reason. One place decides the reason key of a miss
// (UnknownKey), so that annotate and pprof count and print misses the same way.
#ifndef JITSYM_CLIENT_FRAME_SUMMARY_H_
#define JITSYM_CLIENT_FRAME_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "proto/protocol.h"

namespace jitsym::client {

// The key a miss is counted under: the daemon's reason code ("unknown_process", "no_code",
// ...: proto::Reason, docs/protocol.md), or an older daemon's per-address error.
std::string UnknownKey(const proto::LookupResult& r);

// The key the daemon gives to a process it knows nothing about (see UnknownKey).
inline constexpr std::string_view kUnknownProcessKey = "unknown_process";

// Keys the client gives to addresses it did not ask about or that a refused request left
// unanswered, with what they mean.
inline constexpr std::string_view kNoPidKey = "no_pid";

class FrameSummary {
 public:
  void Named(const proto::LookupResult& r) { ++named_[std::string(proto::OriginName(r.origin))]; }
  void Unknown(const proto::LookupResult& r) { ++unknown_[UnknownKey(r)]; }
  void Unknown(std::string key) { ++unknown_[std::move(key)]; }

  uint64_t named() const;
  uint64_t unknown() const;
  uint64_t unknown(std::string_view key) const;

  // "jitsym COMMAND: summary: N WHAT to name, A named, B left unknown" and a line per origin
  // and per reason.
  std::string Format(std::string_view command, std::string_view what) const;

 private:
  std::map<std::string, uint64_t> named_, unknown_;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_FRAME_SUMMARY_H_
