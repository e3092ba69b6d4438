// Responses, encoding side: the daemon's hot path for lookups.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/json_writer.h"
#include "proto/protocol.h"
#include "proto/stats_members.h"
#include "proto/string_interner.h"

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

// The strings of one compact lookup response (LookupRequest::strings), each sent once.
class StringTable {
 public:
  uint32_t Intern(std::string_view s) { return interner_.Intern(s).index; }
  void Encode(std::string* out) const {
    out->append("\"strings\":[");
    const std::vector<std::string_view>& strings = interner_.strings();
    for (size_t i = 0; i < strings.size(); ++i) {
      if (i != 0) out->push_back(',');
      AppendString(strings[i], out);
    }
    out->append("],");
  }

 private:
  StringInterner interner_;
};

// Writes a string member's value: the string itself, or its index in the compact form.
class StringWriter {
 public:
  explicit StringWriter(StringTable* table) : table_(table) {}
  bool compact() const { return table_ != nullptr; }
  void Member(std::string_view key_with_quotes_and_colon, std::string_view value,
              std::string* out) const {
    out->append(key_with_quotes_and_colon);
    Value(value, out);
  }
  void Value(char separator, std::string_view value, std::string* out) const {
    out->push_back(separator);
    Value(value, out);
  }
  void Value(std::string_view value, std::string* out) const {
    if (table_ != nullptr) {
      AppendUint(table_->Intern(value), out);
    } else {
      AppendString(value, out);
    }
  }

 private:
  StringTable* table_;
};

void EncodeFrame(const Frame& frame, const StringWriter& strings, std::string* out) {
  if (strings.compact()) {  // [name, file, line, column]: no member names to send and parse
    strings.Value('[', frame.name, out);
    strings.Value(',', frame.file, out);
    out->push_back(',');
    AppendUint(frame.line, out);
    out->push_back(',');
    AppendUint(frame.column, out);
    out->push_back(']');
    return;
  }
  strings.Member("{\"name\":", frame.name, out);
  if (!frame.file.empty()) strings.Member(",\"file\":", frame.file, out);
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

void EncodeResult(const LookupResult& r, uint32_t fields, const StringWriter& strings,
                  std::string* out) {
  out->append("{\"addr\":");
  if (!r.error.empty() && !r.raw.empty()) {
    AppendString(r.raw, out);
  } else {
    AppendHexString(r.addr, out);
  }
  if (!r.found) {
    out->append(",\"found\":false");
    // Plain strings in the compact form too: misses are rare and their texts their own.
    if (r.reason != Reason::kNone) AppendMember(",\"reason\":", ReasonName(r.reason), out);
    if (!r.detail.empty()) AppendMember(",\"detail\":", r.detail, out);
    if (!r.error.empty()) AppendMember(",\"error\":", r.error, out);
    out->push_back('}');
    return;
  }
  out->append(",\"found\":true");
  if (fields & kFieldName) strings.Member(",\"name\":", r.name, out);
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
  if (fields & kFieldOrigin) strings.Member(",\"origin\":", OriginName(r.origin), out);
  if ((fields & kFieldSource) && !r.source.empty()) {
    strings.Member(",\"source\":", r.source, out);
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
    if (!r.file.empty()) strings.Member(",\"file\":", r.file, out);
    if (r.line != 0) {
      out->append(",\"line\":");
      AppendUint(r.line, out);
    }
    if (r.column != 0) {
      out->append(",\"column\":");
      AppendUint(r.column, out);
    }
  }
  if ((fields & kFieldImage) && !r.image.empty()) {
    strings.Member(",\"image\":", r.image, out);
  }
  if ((fields & kFieldBuildId) && !r.build_id.empty()) {
    strings.Member(",\"build_id\":", r.build_id, out);
  }
  if ((fields & kFieldFrames) && !r.frames.empty()) {
    out->append(",\"frames\":[");
    bool first = true;
    for (const Frame& frame : r.frames) {
      if (!first) out->push_back(',');
      first = false;
      EncodeFrame(frame, strings, out);
    }
    out->push_back(']');
  }
  if ((fields & kFieldClone) && !r.clone.empty()) strings.Member(",\"clone\":", r.clone, out);
  // An answer missing what debug info would give says why, as a miss does (plain strings).
  if (r.reason != Reason::kNone) AppendMember(",\"reason\":", ReasonName(r.reason), out);
  if (!r.detail.empty()) AppendMember(",\"detail\":", r.detail, out);
  if (!r.error.empty()) AppendMember(",\"error\":", r.error, out);
  out->push_back('}');
}

void EncodeSource(const SourceInfo& source, std::string* out) {
  AppendMember("{\"origin\":", OriginName(source.origin), out);
  AppendMember(",\"path\":", source.path, out);
  AppendMember(",\"state\":", SourceStateName(source.state), out);
  out->append(",\"ranges\":");
  AppendUint(source.ranges, out);
  out->append(",\"bytes_read\":");
  AppendUint(source.bytes_read, out);
  if (!source.error.empty()) AppendMember(",\"error\":", source.error, out);
  out->push_back('}');
}

// A symbols answer's members before its entries: ,"ok":true,"pid":N,"incarnation":N,"symbols":[
void SymbolsMembers(int64_t pid, uint64_t incarnation, std::string* out) {
  out->append(",\"ok\":true,\"pid\":");
  json::AppendInt(pid, out);
  out->append(",\"incarnation\":");
  AppendUint(incarnation, out);
  out->append(",\"symbols\":[");
}

struct BodyEncoder {
  std::string* out;
  void operator()(const LookupResponse& lookup) const {
    out->append(",\"ok\":true,");
    if (!lookup.strings) {
      EncodeResults(lookup, StringWriter(nullptr), out);
      return;
    }
    // Compact form: the table goes first, so the results are written aside while it fills.
    StringTable table;
    std::string results;
    results.reserve(lookup.results.size() * 128);
    EncodeResults(lookup, StringWriter(&table), &results);
    table.Encode(out);
    out->append(results);
  }
  static void EncodeResults(const LookupResponse& lookup, const StringWriter& strings,
                            std::string* out) {
    out->append("\"results\":[");
    bool first = true;
    for (const LookupResult& result : lookup.results) {
      if (!first) out->push_back(',');
      first = false;
      EncodeResult(result, lookup.fields, strings, out);
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
    if (!processes.unattached.empty()) {
      EncodeUnattachedBegin(out);
      first = true;
      for (const UnattachedInfo& u : processes.unattached) {
        if (!first) out->push_back(',');
        first = false;
        EncodeUnattachedInfo(u, out);
      }
    }
    out->push_back(']');
  }
  void operator()(const SymbolsResponse& symbols) const {
    SymbolsMembers(symbols.pid, symbols.incarnation, out);
    bool first = true;
    for (const SymbolEntry& s : symbols.symbols) {
      if (!first) out->push_back(',');
      first = false;
      EncodeSymbolEntry(s, out);
    }
    out->push_back(']');
  }
  void operator()(const ExplainResponse& explain) const {
    out->append(",\"ok\":true,\"explain\":");
    EncodeExplain(explain, out);
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
  EncodeResult(r, fields, StringWriter(nullptr), out);
}

void EncodeResponseHead(std::string_view id_json, std::string* out) {
  out->append("{\"v\":1");
  if (!id_json.empty()) {
    out->append(",\"id\":");
    out->append(id_json);
  }
}

void EncodeLookupResponseBegin(std::string_view id_json, std::string* out) {
  EncodeResponseHead(id_json, out);
  out->append(",\"ok\":true,\"results\":[");
}

void EncodeLookupResponseEnd(std::string* out) { out->append("]}\n"); }

void EncodeSymbolsResponseBegin(std::string_view id_json, int64_t pid, uint64_t incarnation,
                                std::string* out) {
  EncodeResponseHead(id_json, out);
  SymbolsMembers(pid, incarnation, out);
}

void EncodeSymbolEntry(const SymbolEntry& s, std::string* out) {
  out->append("{\"start\":");
  AppendHexString(s.start, out);
  out->append(",\"size\":");
  AppendUint(s.size, out);
  AppendMember(",\"name\":", s.name, out);
  AppendMember(",\"origin\":", OriginName(s.origin), out);
  if (!s.image.empty()) AppendMember(",\"image\":", s.image, out);
  out->push_back('}');
}

void EncodeProcessesResponseBegin(std::string_view id_json, std::string* out) {
  EncodeResponseHead(id_json, out);
  out->append(",\"ok\":true,\"processes\":[");
}

void EncodeUnattachedBegin(std::string* out) { out->append("],\"unattached\":["); }

void EncodeUnattachedInfo(const UnattachedInfo& u, std::string* out) {
  out->append("{\"path\":");
  AppendString(u.path, out);
  out->append(",\"uid\":");
  AppendUint(u.uid, out);
  out->append(",\"reason\":");
  AppendString(u.reason, out);
  out->push_back('}');
}

void EncodeListResponseEnd(std::string* out) { out->append("]}\n"); }

void EncodeAnswerFailure(std::string_view code, std::string_view message, std::string* out) {
  AppendMember(",\"error\":{\"code\":", code, out);
  AppendMember(",\"message\":", message, out);
  out->append("}}\n");
}

size_t LookupResultStringBytes(const LookupResult& r) {
  size_t n = r.name.size() + (r.origin == Origin::kUnknown ? 0 : OriginName(r.origin).size()) +
             r.source.size() + r.file.size() + r.image.size() + r.build_id.size() + r.clone.size() +
             r.error.size() + r.raw.size() + r.detail.size() +
             (r.reason == Reason::kNone ? 0 : ReasonName(r.reason).size());
  for (const Frame& f : r.frames) n += f.name.size() + f.file.size();
  return n;
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
  if (p.nspid) {
    out->append(",\"nspid\":");
    AppendUint(*p.nspid, out);
  }
  if (p.pid_ns) {
    out->append(",\"pid_ns\":");
    AppendUint(*p.pid_ns, out);
  }
  if (p.mnt_ns) {
    out->append(",\"mnt_ns\":");
    AppendUint(*p.mnt_ns, out);
  }
  if (p.cgroup) {
    out->append(",\"cgroup\":");
    AppendString(*p.cgroup, out);
  }
  out->append(",\"ranges\":");
  AppendUint(p.ranges, out);
  if (p.threads) {
    out->append(",\"threads\":");
    AppendUint(*p.threads, out);
  }
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
  if (const auto* lookup = std::get_if<LookupResponse>(&response.body);
      lookup != nullptr && lookup->binary) {
    EncodeBinaryLookupBegin(response.id_json, out);
    BinaryAnswerEncoder encoder;
    std::span<const LookupResult> rest(lookup->results);
    while (!rest.empty()) {
      rest = rest.subspan(encoder.EncodeFrame(rest, lookup->fields, kBinaryFrameTarget, out));
    }
    EncodeBinaryLookupEnd(out);
    return;
  }
  EncodeResponseHead(response.id_json, out);
  std::visit(BodyEncoder{out}, response.body);
  out->append("}\n");
}
}  // namespace jitsym::proto
