// Parsing `perf evlist -v` output and perf inject's clock rule.
#include "client/perf_recording.h"

#include <time.h>

namespace jitsym::client {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::optional<int64_t> Number(std::string_view s) {
  s = Trim(s);
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// `assign` is ": " in `perf evlist -v` output, " = " in perf's header ("# event : ...").
PerfEventAttrs ParseEvent(std::string_view name, std::string_view attrs, std::string_view assign) {
  PerfEventAttrs event;
  event.name = std::string(name);
  // "key: value" items separated by ", " (a value in braces may hold ", " too: such pieces
  // match no key below).
  while (!attrs.empty()) {
    const size_t comma = attrs.find(", ");
    const std::string_view item = Trim(attrs.substr(0, comma));
    attrs = comma == std::string_view::npos ? std::string_view() : attrs.substr(comma + 2);
    const size_t colon = item.find(assign);
    if (colon == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, colon);
    const std::string_view value = Trim(item.substr(colon + assign.size()));
    if (key == "name" && event.name.empty()) {
      event.name = std::string(value);
    } else if (key == "use_clockid") {
      event.use_clockid = Number(value).value_or(0) != 0;
    } else if (key == "clockid") {
      event.clockid = Number(value).value_or(-1);
    } else if (key == "sample_type") {
      // "IP|TID|TIME|CALLCHAIN|PERIOD"
      size_t pos = 0;
      while (pos <= value.size()) {
        const size_t bar = value.find('|', pos);
        const std::string_view flag =
            value.substr(pos, bar == std::string_view::npos ? std::string_view::npos : bar - pos);
        if (flag == "CALLCHAIN") event.callchain = true;
        if (flag == "TIME") event.time = true;
        if (bar == std::string_view::npos) break;
        pos = bar + 1;
      }
    }
  }
  return event;
}

}  // namespace

std::vector<PerfEventAttrs> ParsePerfEvlist(std::string_view text) {
  std::vector<PerfEventAttrs> events;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // The event name may hold colons ("sched:sched_switch", "cpu-clock:u"): the attributes
    // start at the first ": type: ".
    constexpr std::string_view kType = ": type: ";
    const size_t type = line.find(kType);
    if (type == std::string_view::npos || line.starts_with("#")) continue;
    events.push_back(ParseEvent(Trim(line.substr(0, type)), line.substr(type + 2), ": "));
  }
  return events;
}

std::optional<PerfEventAttrs> ParsePerfHeaderEvent(std::string_view line) {
  constexpr std::string_view kEvent = "# event : ";
  if (!line.starts_with(kEvent)) return std::nullopt;
  return ParseEvent({}, line.substr(kEvent.size()), " = ");
}

std::string ClockIdName(int64_t clockid) {
  switch (clockid) {
    case CLOCK_REALTIME:
      return "CLOCK_REALTIME";
    case CLOCK_MONOTONIC:
      return "CLOCK_MONOTONIC";
    case CLOCK_MONOTONIC_RAW:
      return "CLOCK_MONOTONIC_RAW";
    case CLOCK_BOOTTIME:
      return "CLOCK_BOOTTIME";
    case CLOCK_TAI:
      return "CLOCK_TAI";
    default:
      return "clock " + std::to_string(clockid);
  }
}

std::optional<std::string> InjectClockProblem(const std::vector<PerfEventAttrs>& events) {
  for (const PerfEventAttrs& e : events) {
    if (!e.use_clockid) {
      return "event " + e.name + " was recorded with perf's default clock, not CLOCK_MONOTONIC";
    }
    if (e.clockid != CLOCK_MONOTONIC) {
      return "event " + e.name + " was recorded with " + ClockIdName(e.clockid) +
             ", not CLOCK_MONOTONIC";
    }
  }
  return std::nullopt;
}

}  // namespace jitsym::client
