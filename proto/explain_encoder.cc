// The explain answer, encoding side: whole (EncodeExplain) and in steps (ExplainAnswerSteps),
// from the same pieces.
#include <string>

#include "proto/json_writer.h"
#include "proto/protocol.h"

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

void AppendOptionalUint(std::string_view member, const std::optional<uint64_t>& v,
                        std::string* out) {
  if (!v) return;
  out->append(member);
  AppendUint(*v, out);
}

// The report up to its first list: {"pid":N,"addr":A,"time":T,"incarnations":[
void ExplainHead(const ExplainResponse& e, std::string* out) {
  out->push_back('{');
  if (e.pid) {
    out->append("\"pid\":");
    json::AppendInt(*e.pid, out);
  } else {
    AppendMember("\"image\":", e.image.value_or(""), out);
  }
  out->append(",\"addr\":");
  AppendHexString(e.addr, out);
  AppendOptionalUint(",\"time\":", e.time, out);
  out->append(",\"incarnations\":[");
}

void ExplainIncarnationObject(const ExplainIncarnation& inc, std::string* out) {
  out->append("{\"incarnation\":");
  AppendUint(inc.incarnation, out);
  out->append(",\"alive\":");
  json::AppendBool(inc.alive, out);
  if (inc.uid) AppendOptionalUint(",\"uid\":", uint64_t{*inc.uid}, out);
  AppendOptionalUint(",\"start_time\":", inc.start_time, out);
  AppendOptionalUint(",\"exit_time\":", inc.exit_time, out);
  if (inc.nspid) AppendOptionalUint(",\"nspid\":", uint64_t{*inc.nspid}, out);
  if (inc.cgroup) AppendMember(",\"cgroup\":", *inc.cgroup, out);
  out->append(",\"sources\":[");
  bool first_source = true;
  for (const ExplainSource& s : inc.sources) {
    if (!first_source) out->push_back(',');
    first_source = false;
    AppendMember("{\"origin\":", OriginName(s.origin), out);
    AppendMember(",\"path\":", s.path, out);
    if (s.owner) AppendOptionalUint(",\"owner\":", uint64_t{*s.owner}, out);
    if (!s.trust.empty()) AppendMember(",\"trust\":", s.trust, out);
    AppendMember(",\"state\":", SourceStateName(s.state), out);
    out->append(",\"ranges\":");
    AppendUint(s.ranges, out);
    out->append(",\"bytes_read\":");
    AppendUint(s.bytes_read, out);
    AppendOptionalUint(",\"records\":", s.records, out);
    if (!s.error.empty()) AppendMember(",\"error\":", s.error, out);
    out->push_back('}');
  }
  out->append("]}");
}

void ExplainDefinitionObject(const ExplainDefinition& d, std::string* out) {
  out->push_back('{');
  if (d.incarnation) {
    AppendOptionalUint("\"incarnation\":", d.incarnation, out);
    out->push_back(',');
  }
  AppendMember("\"origin\":", OriginName(d.origin), out);
  AppendMember(",\"source\":", d.source, out);
  if (d.removed) {
    out->append(",\"removed\":true");
  } else {
    AppendMember(",\"name\":", d.name, out);
  }
  out->append(",\"start\":");
  AppendHexString(d.start, out);
  out->append(",\"size\":");
  AppendUint(d.size, out);
  AppendOptionalUint(",\"from\":", d.from, out);
  AppendOptionalUint(",\"to\":", d.to, out);
  if (d.picked) out->append(",\"picked\":true");
  out->push_back('}');
}

// Between the lists: the end of one, what comes between, the start of the next.
void ExplainDefinitionsBegin(std::string* out) { out->append("],\"definitions\":["); }

void ExplainIgnoredBegin(const ExplainResponse& e, std::string* out) {
  out->push_back(']');
  if (e.definitions_omitted != 0) {
    out->append(",\"definitions_omitted\":");
    AppendUint(e.definitions_omitted, out);
  }
  out->append(",\"ignored\":[");
}

void ExplainIgnoredObject(const ExplainIgnored& i, std::string* out) {
  AppendMember("{\"path\":", i.path, out);
  AppendMember(",\"reason\":", i.reason, out);
  out->push_back('}');
}

// After the last list: the lookup's answer, the rule, the end of the report.
void ExplainTail(const ExplainResponse& e, std::string* out) {
  out->push_back(']');
  if (!e.answer.results.empty()) {
    out->append(",\"answer\":");
    EncodeLookupResult(e.answer.results.front(), out);
  }
  AppendMember(",\"rule\":", e.rule, out);
  out->push_back('}');
}

template <typename T, typename F>
void List(const std::vector<T>& items, F&& encode, std::string* out) {
  bool first = true;
  for (const T& item : items) {
    if (!first) out->push_back(',');
    first = false;
    encode(item, out);
  }
}

}  // namespace

void EncodeExplain(const ExplainResponse& e, std::string* out) {
  ExplainHead(e, out);
  List(e.incarnations, ExplainIncarnationObject, out);
  ExplainDefinitionsBegin(out);
  List(e.definitions, ExplainDefinitionObject, out);
  ExplainIgnoredBegin(e, out);
  List(e.ignored, ExplainIgnoredObject, out);
  ExplainTail(e, out);
}

bool ExplainAnswerSteps::Step(std::string* out) {
  // Each step appends, then moves on: a step that throws has changed nothing but *out.
  switch (part_) {
    case Part::kHead:
      EncodeResponseHead(id_json_, out);
      out->append(",\"ok\":true,\"explain\":");
      ExplainHead(explain_, out);
      part_ = Part::kIncarnations;
      return true;
    case Part::kIncarnations:
      if (next_ < explain_.incarnations.size()) {
        if (next_ > 0) out->push_back(',');
        ExplainIncarnationObject(explain_.incarnations[next_], out);
        ++next_;
        return true;
      }
      ExplainDefinitionsBegin(out);
      part_ = Part::kDefinitions;
      next_ = 0;
      return true;
    case Part::kDefinitions:
      if (next_ < explain_.definitions.size()) {
        if (next_ > 0) out->push_back(',');
        ExplainDefinitionObject(explain_.definitions[next_], out);
        ++next_;
        return true;
      }
      ExplainIgnoredBegin(explain_, out);
      part_ = Part::kIgnored;
      next_ = 0;
      return true;
    case Part::kIgnored:
      if (next_ < explain_.ignored.size()) {
        if (next_ > 0) out->push_back(',');
        ExplainIgnoredObject(explain_.ignored[next_], out);
        ++next_;
        return true;
      }
      ExplainTail(explain_, out);
      out->append("}\n");
      part_ = Part::kDone;
      return false;
    case Part::kDone:
      break;
  }
  return false;
}

void ExplainAnswerSteps::Close(std::string* out) const {
  // Steps end between elements of a list: that list, then the report.
  if (part_ != Part::kHead && part_ != Part::kDone) out->append("]}");
}

}  // namespace jitsym::proto
