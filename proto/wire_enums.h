// The closed sets of names the daemon sends: the kind of source an answer came from ("origin"),
// the state of a followed file ("state") and why an address was not found ("reason"). Each is an
// enum with one table of wire names, so that the encoder, the decoder, the daemon and
// docs/protocol.md (which lists the tables) cannot drift apart.
#ifndef JITSYM_PROTO_WIRE_ENUMS_H_
#define JITSYM_PROTO_WIRE_ENUMS_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "daemon/util/source_kinds.h"

namespace jitsym::proto {

// Where an answer or a source comes from, and what became of a followed file: the daemon's own
// kinds (util/source_kinds.h), sent by these names.
using ::jitsym::kOriginNames;
using ::jitsym::kSourceStateNames;
using ::jitsym::Origin;
using ::jitsym::OriginFromName;
using ::jitsym::OriginName;
using ::jitsym::SourceState;
using ::jitsym::SourceStateFromName;
using ::jitsym::SourceStateName;

// Why an address was not found (a lookup result's "reason"; docs/protocol.md has the table).
enum class Reason : uint8_t {
  kNone,              // found, or a per-address input error; never sent
  kUnknown,           // a name this build does not know (a newer daemon); never sent
  kUnknownProcess,    // no incarnation of the pid (or thread id) is known and none is alive
  kPermissionDenied,  // the client may not see the process or image
  kNoCode,            // the process is known; nothing covers the address
  kBeforeCode,        // code covers the address, but only from a time later than asked
  kBeforeStart,       // the time is before the process started
  kAfterExit,         // the time is after the process exited
  kWrongClock,        // the time looks like another clock or unit
  kFileIgnored,       // side files of the process that could have answered were ignored
  kNoSymbol,          // in a mapped image, but no symbol covers the address
  kNoDebugInfo,       // in a mapped image that has neither symbols nor debug info
  kImageUnknown,      // an image lookup: nothing known for that image
  kImageUnreadable,   // in a mapped file that could not be read (its filesystem did not answer)
  kNativeFailed,      // in a native file whose reader failed (killed, out of time or memory)
};

inline constexpr std::pair<Reason, std::string_view> kReasonNames[] = {
    {Reason::kUnknownProcess, "unknown_process"},
    {Reason::kPermissionDenied, "permission_denied"},
    {Reason::kNoCode, "no_code"},
    {Reason::kBeforeCode, "before_code"},
    {Reason::kBeforeStart, "before_start"},
    {Reason::kAfterExit, "after_exit"},
    {Reason::kWrongClock, "wrong_clock"},
    {Reason::kFileIgnored, "file_ignored"},
    {Reason::kNoSymbol, "no_symbol"},
    {Reason::kNoDebugInfo, "no_debug_info"},
    {Reason::kImageUnknown, "image_unknown"},
    {Reason::kImageUnreadable, "image_unreadable"},
    {Reason::kNativeFailed, "native_failed"},
};

// The wire name; "unknown" for kUnknown (and kNone).
constexpr std::string_view ReasonName(Reason reason) {
  for (const auto& [value, name] : kReasonNames) {
    if (value == reason) return name;
  }
  return "unknown";
}

// The value of a wire name; nullopt for a name not in the table.
constexpr std::optional<Reason> ReasonFromName(std::string_view name) {
  for (const auto& [value, n] : kReasonNames) {
    if (n == name) return value;
  }
  return std::nullopt;
}

}  // namespace jitsym::proto

#endif  // JITSYM_PROTO_WIRE_ENUMS_H_
