// The kinds of sources the daemon reads (jitdump, perf map, ...) and what became of a followed
// file (following, closed, truncated, ...): enums of the daemon's own, below every layer, so
// that the index, ingest and query name them alike and never compare strings. Each has one
// table of names, which are also the wire's (proto/wire_enums.h sends them as they are).
#ifndef JITSYM_DAEMON_UTIL_SOURCE_KINDS_H_
#define JITSYM_DAEMON_UTIL_SOURCE_KINDS_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace jitsym {

// Where an answer or a source comes from.
enum class Origin : uint8_t {
  kUnknown,  // a name this build does not know (a newer daemon); never sent
  kJitdump,  // perf jitdump, /tmp/jit-<pid>.dump
  kPerfmap,  // perf map, /tmp/perf-<pid>.map
  kMlpd,     // Mono log profiler output, *.mlpd
  kR2rmap,   // .NET ReadyToRun image map, *.ni.r2rmap
  kElf,      // native code: ELF symbols and DWARF
};

// What became of a source file the daemon follows (processes answers).
enum class SourceState : uint8_t {
  kUnknown,    // a name this build does not know (a newer daemon); never sent
  kFollowing,  // being read as it grows
  kClosed,     // complete: the format says no more records follow
  kDeleted,    // the file was removed; what was read stays indexed
  kReplaced,   // another file took its name; the new one is followed as a new source
  kTruncated,  // it shrank (rewritten in place); what was read stays indexed
  kError,      // stopped on a corrupt record ("error" says why)
  kLimit,      // stopped by a configured limit ("error" names it)
  kUntrusted,  // ignored: owned by neither the process's owner nor root
  kLoaded,     // read once from an operator's directory (--r2rmap-dir)
};

inline constexpr std::pair<Origin, std::string_view> kOriginNames[] = {
    {Origin::kJitdump, "jitdump"}, {Origin::kPerfmap, "perfmap"}, {Origin::kMlpd, "mlpd"},
    {Origin::kR2rmap, "r2rmap"},   {Origin::kElf, "elf"},
};

inline constexpr std::pair<SourceState, std::string_view> kSourceStateNames[] = {
    {SourceState::kFollowing, "following"}, {SourceState::kClosed, "closed"},
    {SourceState::kDeleted, "deleted"},     {SourceState::kReplaced, "replaced"},
    {SourceState::kTruncated, "truncated"}, {SourceState::kError, "error"},
    {SourceState::kLimit, "limit"},         {SourceState::kUntrusted, "untrusted"},
    {SourceState::kLoaded, "loaded"},
};

// The name; "unknown" for kUnknown.
constexpr std::string_view OriginName(Origin origin) {
  for (const auto& [value, name] : kOriginNames) {
    if (value == origin) return name;
  }
  return "unknown";
}
constexpr std::string_view SourceStateName(SourceState state) {
  for (const auto& [value, name] : kSourceStateNames) {
    if (value == state) return name;
  }
  return "unknown";
}

// The value of a name; nullopt for a name not in the table.
constexpr std::optional<Origin> OriginFromName(std::string_view name) {
  for (const auto& [value, n] : kOriginNames) {
    if (n == name) return value;
  }
  return std::nullopt;
}
constexpr std::optional<SourceState> SourceStateFromName(std::string_view name) {
  for (const auto& [value, n] : kSourceStateNames) {
    if (n == name) return value;
  }
  return std::nullopt;
}

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_SOURCE_KINDS_H_
