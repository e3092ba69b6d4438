// Responses, encoding side: the daemon's hot path for lookups.
#include <cstdint>
#include <string>

#include "proto/json_writer.h"
#include "proto/protocol.h"
#include "proto/stats_members.h"

namespace jitsym::proto {
namespace {

using json::AppendHexString;
using json::AppendString;
using json::AppendUint;

void AppendMember(std::string_view key_with_quotes_and_colon, std::string_view value,
                  std::string* out) {
  out->append(key_with_quotes_and_colon);
  AppendString(value, out);
}

void EncodeFrame(const Frame& frame, std::string* out) {
  AppendMember("{\"name\":", frame.name_or_view(), out);
  if (!frame.file_or_view().empty()) AppendMember(",\"file\":", frame.file_or_view(), out);
  if (frame.line != 0) {
    out->append(",\"line\":");
    AppendUint(frame.line, out);
  }
  if (frame.column != 0) {
    out->append(",\"column\":");
    AppendUint(frame.column, out);
  }
  out->push_back('}');
}

void EncodeSource(const SourceInfo& source, std::string* out) {
  AppendMember("{\"origin\":", source.origin, out);
  AppendMember(",\"path\":", source.path, out);
  AppendMember(",\"state\":", source.state, out);
  out->append(",\"ranges\":");
  AppendUint(source.ranges, out);
  out->append(",\"bytes_read\":");
  AppendUint(source.bytes_read, out);
  if (!source.error.empty()) AppendMember(",\"error\":", source.error, out);
  out->push_back('}');
}

struct BodyEncoder {
  std::string* out;
  void operator()(const LookupResponse& lookup) const {
    out->append(",\"ok\":true,\"results\":[");
    bool first = true;
    for (const LookupResult& result : lookup.results) {
      if (!first) out->push_back(',');
      first = false;
      EncodeLookupResult(result, out, lookup.fields);
    }
    out->push_back(']');
  }
  void operator()(const ProcessesResponse& processes) const {
    out->append(",\"ok\":true,\"processes\":[");
    bool first = true;
    for (const ProcessInfo& process : processes.processes) {
      if (!first) out->push_back(',');
      first = false;
      EncodeProcessInfo(process, out);
    }
    out->push_back(']');
  }
  void operator()(const SymbolsResponse& symbols) const {
    out->append(",\"ok\":true,\"pid\":");
    json::AppendInt(symbols.pid, out);
    out->append(",\"incarnation\":");
    AppendUint(symbols.incarnation, out);
    out->append(",\"symbols\":[");
    bool first = true;
    for (const SymbolEntry& s : symbols.symbols) {
      if (!first) out->push_back(',');
      first = false;
      out->append("{\"start\":");
      AppendHexString(s.start, out);
      out->append(",\"size\":");
      AppendUint(s.size, out);
      AppendMember(",\"name\":", s.name, out);
      AppendMember(",\"origin\":", s.origin, out);
      if (!s.image.empty()) AppendMember(",\"image\":", s.image, out);
      out->push_back('}');
    }
    out->push_back(']');
  }
  void operator()(const StatsResponse& stats) const {
    out->append(",\"ok\":true,\"stats\":");
    EncodeStats(stats, out);
  }
  void operator()(const PingResponse&) const { out->append(",\"ok\":true,\"pong\":true"); }
  void operator()(const VersionResponse& version) const {
    AppendMember(",\"ok\":true,\"version\":", version.daemon_version, out);
    out->append(",\"protocol\":");
    json::AppendInt(version.protocol, out);
  }
  void operator()(const ErrorResponse& error) const {
    AppendMember(",\"ok\":false,\"error\":{\"code\":", error.code, out);
    AppendMember(",\"message\":", error.message, out);
    out->push_back('}');
  }
};

}  // namespace

void EncodeLookupResult(const LookupResult& r, std::string* out, uint32_t fields) {
  out->append("{\"addr\":");
  if (!r.error.empty() && !r.raw.empty()) {
    AppendString(r.raw, out);
  } else {
    AppendHexString(r.addr, out);
  }
  if (!r.found) {
    out->append(",\"found\":false");
    if (!r.error.empty()) AppendMember(",\"error\":", r.error, out);
    out->push_back('}');
    return;
  }
  out->append(",\"found\":true");
  if (fields & kFieldName) AppendMember(",\"name\":", r.name_or_view(), out);
  if (fields & kFieldOffset) {
    out->append(",\"offset\":");
    AppendUint(r.offset, out);
  }
  if (fields & kFieldStart) {
    out->append(",\"start\":");
    AppendHexString(r.start, out);
  }
  if (fields & kFieldSize) {
    out->append(",\"size\":");
    AppendUint(r.size, out);
  }
  if (fields & kFieldOrigin) AppendMember(",\"origin\":", r.origin_or_view(), out);
  if ((fields & kFieldSource) && !r.source_or_view().empty()) {
    AppendMember(",\"source\":", r.source_or_view(), out);
  }
  if ((fields & kFieldLoadedAt) && r.loaded_at) {
    out->append(",\"loaded_at\":");
    AppendUint(*r.loaded_at, out);
  }
  if ((fields & kFieldIncarnation) && r.incarnation) {
    out->append(",\"incarnation\":");
    AppendUint(*r.incarnation, out);
  }
  if (fields & kFieldPosition) {
    if (!r.file_or_view().empty()) AppendMember(",\"file\":", r.file_or_view(), out);
    if (r.line != 0) {
      out->append(",\"line\":");
      AppendUint(r.line, out);
    }
    if (r.column != 0) {
      out->append(",\"column\":");
      AppendUint(r.column, out);
    }
  }
  if ((fields & kFieldImage) && !r.image_or_view().empty()) {
    AppendMember(",\"image\":", r.image_or_view(), out);
  }
  if ((fields & kFieldBuildId) && !r.build_id_or_view().empty()) {
    AppendMember(",\"build_id\":", r.build_id_or_view(), out);
  }
  if ((fields & kFieldFrames) && !r.frames.empty()) {
    out->append(",\"frames\":[");
    bool first = true;
    for (const Frame& frame : r.frames) {
      if (!first) out->push_back(',');
      first = false;
      EncodeFrame(frame, out);
    }
    out->push_back(']');
  }
  if (!r.error.empty()) AppendMember(",\"error\":", r.error, out);
  out->push_back('}');
}

void EncodeProcessInfo(const ProcessInfo& p, std::string* out) {
  out->append("{\"pid\":");
  json::AppendInt(p.pid, out);
  out->append(",\"incarnation\":");
  AppendUint(p.incarnation, out);
  out->append(",\"alive\":");
  json::AppendBool(p.alive, out);
  if (p.uid) {
    out->append(",\"uid\":");
    AppendUint(*p.uid, out);
  }
  if (p.first_time) {
    out->append(",\"first_time\":");
    AppendUint(*p.first_time, out);
  }
  if (p.last_time) {
    out->append(",\"last_time\":");
    AppendUint(*p.last_time, out);
  }
  out->append(",\"ranges\":");
  AppendUint(p.ranges, out);
  out->append(",\"sources\":[");
  bool first = true;
  for (const SourceInfo& source : p.sources) {
    if (!first) out->push_back(',');
    first = false;
    EncodeSource(source, out);
  }
  out->append("]}");
}

void EncodeStats(const StatsResponse& stats, std::string* out) {
  char sep = '{';
  ForEachStat(stats, [&](std::string_view name, uint64_t value) {
    out->push_back(sep);
    sep = ',';
    AppendString(name, out);
    out->push_back(':');
    AppendUint(value, out);
  });
  out->push_back('}');
}

std::vector<std::pair<std::string_view, uint64_t>> StatsMembers(const StatsResponse& stats) {
  std::vector<std::pair<std::string_view, uint64_t>> members;
  ForEachStat(stats,
              [&](std::string_view name, uint64_t value) { members.emplace_back(name, value); });
  return members;
}

void EncodeResponse(const Response& response, std::string* out) {
  out->append("{\"v\":1");
  if (!response.id_json.empty()) {
    out->append(",\"id\":");
    out->append(response.id_json);
  }
  std::visit(BodyEncoder{out}, response.body);
  out->append("}\n");
}
}  // namespace jitsym::proto
