// Responses, decoding side: the client's hot path for lookups.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "proto/json_reader.h"
#include "proto/protocol.h"
#include "proto/stats_members.h"

namespace jitsym::proto {
namespace {

using json::JsonReader;
using Kind = JsonReader::Kind;

// Reads typed members and keeps the first problem; a response the client cannot understand is
// a bug somewhere, so it fails whole (unknown members are still skipped).
class Decoder {
 public:
  explicit Decoder(std::string_view line) : r_(line), line_(line), line_size_(line.size()) {}

  JsonReader& reader() { return r_; }
  std::string_view line() const { return line_; }
  bool ok() const { return r_.ok() && error_.empty(); }
  std::string error() const { return error_.empty() ? r_.error() : error_; }

  bool Fail(std::string_view member, std::string_view what) {
    if (error_.empty())
      error_ = "response member '" + std::string(member) + "' " + std::string(what);
    return false;
  }

  bool String(std::string_view member, std::string* out) {
    std::string_view text;
    if (r_.Peek() != Kind::kString) return Fail(member, "must be a string");
    if (!r_.ReadString(&text)) return false;
    out->assign(text);
    return true;
  }
  // A lookup response: its strings are copied into *text (reused when nobody else holds it),
  // reserved for the whole line so that no copy moves what earlier views point to (a string's
  // unescaped text is never longer than its JSON).
  void UseText(std::shared_ptr<std::string>* text) {
    if (text_ != nullptr) return;
    if (*text == nullptr || text->use_count() != 1) *text = std::make_shared<std::string>();
    text_ = text->get();
    text_->clear();
    text_->reserve(line_size_);
  }
  bool Keep(std::string_view member, std::string_view s, std::string_view* out) {
    if (text_ == nullptr || text_->capacity() - text_->size() < s.size()) {
      return Fail(member, "does not fit the response");  // not reached: see UseText
    }
    const size_t at = text_->size();
    text_->append(s);
    *out = std::string_view(text_->data() + at, s.size());
    return true;
  }
  // A string member of a result: the string itself, or in the compact form the index of a
  // string in the response's table. Either way *out points into the response's text.
  bool StringOrIndex(std::string_view member, std::string_view* out) {
    if (r_.Peek() != Kind::kNumber) {
      std::string_view text;
      if (r_.Peek() != Kind::kString) return Fail(member, "must be a string");
      if (!r_.ReadString(&text)) return false;
      return Keep(member, text, out);
    }
    size_t index = 0;
    if (!Uint(member, &index)) return false;
    if (index >= table_.size()) return Fail(member, "refers to no entry of 'strings'");
    *out = table_[index];
    return true;
  }
  // A wire enum (origin, state): a name of its table; kUnknown for a name this build does not
  // know, which a newer daemon may send.
  template <typename E, typename FromName>
  bool Enum(std::string_view member, E* out, FromName from_name) {
    std::string_view text;
    if (r_.Peek() == Kind::kNumber) {  // compact form: an index into the string table
      size_t index = 0;
      if (!Uint(member, &index)) return false;
      if (index >= table_.size()) return Fail(member, "refers to no entry of 'strings'");
      text = table_[index];
    } else {
      if (r_.Peek() != Kind::kString) return Fail(member, "must be a string");
      if (!r_.ReadString(&text)) return false;
    }
    *out = from_name(text).value_or(E::kUnknown);
    return true;
  }
  // The compact form's "strings" array (UseText first).
  bool StringTable() {
    // Once per response: results decoded so far may point into the table.
    if (have_table_) return Fail("strings", "appears twice");
    have_table_ = true;
    if (r_.Peek() != Kind::kArray) return Fail("strings", "must be an array of strings");
    table_.clear();
    if (!r_.BeginArray()) return false;
    while (r_.NextElement()) {
      std::string_view text;
      if (r_.Peek() != Kind::kString) return Fail("strings", "must be an array of strings");
      if (!r_.ReadString(&text)) return false;
      if (!Keep("strings", text, &table_.emplace_back())) return false;
    }
    return r_.ok();
  }
  template <typename T>
  bool Uint(std::string_view member, T* out) {
    if (uint64_t v = 0; r_.TryReadUint(&v)) {
      if (v > std::numeric_limits<T>::max()) return Fail(member, "is out of range");
      *out = static_cast<T>(v);
      return true;
    }
    std::string_view text;
    if (r_.Peek() != Kind::kNumber) return Fail(member, "must be a non-negative integer");
    if (!r_.ReadNumber(&text)) return false;
    const std::optional<uint64_t> v = ParseDecimal(text);
    if (!v || *v > std::numeric_limits<T>::max()) return Fail(member, "is out of range");
    *out = static_cast<T>(*v);
    return true;
  }
  bool OptionalUint(std::string_view member, std::optional<uint64_t>* out) {
    if (r_.Peek() == Kind::kNull) {
      out->reset();
      return r_.ReadNull();
    }
    uint64_t v = 0;
    if (!Uint(member, &v)) return false;
    *out = v;
    return true;
  }
  bool Int(std::string_view member, int64_t* out) {
    std::string_view text;
    if (r_.Peek() != Kind::kNumber) return Fail(member, "must be an integer");
    if (!r_.ReadNumber(&text)) return false;
    const bool negative = !text.empty() && text[0] == '-';
    const std::optional<uint64_t> v = ParseDecimal(negative ? text.substr(1) : text);
    if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return Fail(member, "is out of range");
    *out = negative ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
    return true;
  }
  bool Bool(std::string_view member, bool* out) {
    if (r_.Peek() != Kind::kBool) return Fail(member, "must be true or false");
    return r_.ReadBool(out);
  }
  // Hex string (or a plain number).
  bool Address(std::string_view member, uint64_t* out) {
    std::string_view text;
    if (r_.Peek() == Kind::kNumber) return Uint(member, out);
    if (r_.Peek() != Kind::kString) return Fail(member, "must be a hex string");
    if (!r_.ReadString(&text)) return false;
    const std::optional<uint64_t> v = ParseAddress(text);
    if (!v) return Fail(member, "is not a hex address");
    *out = *v;
    return true;
  }

  // Calls f(key) for each member of an object; f reads the value.
  template <typename F>
  bool Object(std::string_view member, F&& f) {
    if (r_.Peek() != Kind::kObject) return Fail(member, "must be an object");
    if (!r_.BeginObject()) return false;
    std::string_view key;
    while (r_.NextMember(&key)) {
      if (!f(key)) return false;
    }
    return ok();
  }
  // Calls f() for each element of an array; f reads the element.
  template <typename F>
  bool Array(std::string_view member, F&& f) {
    if (r_.Peek() != Kind::kArray) return Fail(member, "must be an array");
    if (!r_.BeginArray()) return false;
    while (r_.NextElement()) {
      if (!f()) return false;
    }
    return ok();
  }

 private:
  JsonReader r_;
  std::string_view line_;
  size_t line_size_;
  std::string error_;
  std::string* text_ = nullptr;          // where string members are copied (UseText)
  std::vector<std::string_view> table_;  // the compact form's strings
  bool have_table_ = false;
};

bool DecodeFrame(Decoder& d, Frame* frame) {
  if (d.reader().Peek() == Kind::kArray) {  // compact form: [name, file, line, column]
    int i = 0;
    const bool ok = d.Array("frames", [&] {
      switch (i++) {
        case 0:
          return d.StringOrIndex("frames", &frame->name);
        case 1:
          return d.StringOrIndex("frames", &frame->file);
        case 2:
          return d.Uint("frames", &frame->line);
        case 3:
          return d.Uint("frames", &frame->column);
        default:
          return d.reader().Skip();  // later additions
      }
    });
    return ok && (i >= 4 || d.Fail("frames", "must have name, file, line and column"));
  }
  return d.Object("frames", [&](std::string_view key) {
    if (key == "name") return d.StringOrIndex(key, &frame->name);
    if (key == "file") return d.StringOrIndex(key, &frame->file);
    if (key == "line") return d.Uint(key, &frame->line);
    if (key == "column") return d.Uint(key, &frame->column);
    return d.reader().Skip();
  });
}

bool DecodeLookupResult(Decoder& d, LookupResult* r) {
  ResetLookupResult(r);
  bool have_addr = false;
  bool addr_is_hex = false;
  const bool ok = d.Object("results", [&](std::string_view key) {
    // Most frequent members first.
    if (key == "addr") {
      have_addr = true;
      std::string_view text;
      if (d.reader().Peek() != Kind::kString) return d.Fail(key, "must be a string");
      if (!d.reader().ReadString(&text)) return false;
      if (std::optional<uint64_t> addr = ParseAddress(text)) {
        r->addr = *addr;
        addr_is_hex = true;
      } else {
        r->raw.assign(text);  // the daemon echoes input it could not parse
      }
      return true;
    }
    if (key == "found") return d.Bool(key, &r->found);
    if (key == "name") return d.StringOrIndex(key, &r->name);
    if (key == "offset") return d.Uint(key, &r->offset);
    if (key == "start") return d.Address(key, &r->start);
    if (key == "size") return d.Uint(key, &r->size);
    if (key == "origin") return d.Enum(key, &r->origin, OriginFromName);
    if (key == "source") return d.StringOrIndex(key, &r->source);
    if (key == "error") return d.String(key, &r->error);
    if (key == "loaded_at") return d.OptionalUint(key, &r->loaded_at);
    if (key == "incarnation") return d.OptionalUint(key, &r->incarnation);
    if (key == "file") return d.StringOrIndex(key, &r->file);
    if (key == "line") return d.Uint(key, &r->line);
    if (key == "column") return d.Uint(key, &r->column);
    if (key == "image") return d.StringOrIndex(key, &r->image);
    if (key == "build_id") return d.StringOrIndex(key, &r->build_id);
    if (key == "clone") return d.StringOrIndex(key, &r->clone);
    if (key == "frames") {
      return d.Array(key, [&] { return DecodeFrame(d, &r->frames.emplace_back()); });
    }
    // Misses last: they are rare.
    if (key == "reason") return d.Enum(key, &r->reason, ReasonFromName);
    if (key == "detail") return d.String(key, &r->detail);
    return d.reader().Skip();
  });
  if (!ok) return false;
  if (!have_addr) return d.Fail("addr", "is missing");
  if (!addr_is_hex && r->error.empty()) return d.Fail("addr", "is not a hex address");
  if (addr_is_hex) r->raw.clear();
  return true;
}

bool DecodeSource(Decoder& d, SourceInfo* s) {
  return d.Object("sources", [&](std::string_view key) {
    if (key == "origin") return d.Enum(key, &s->origin, OriginFromName);
    if (key == "path") return d.String(key, &s->path);
    if (key == "state") return d.Enum(key, &s->state, SourceStateFromName);
    if (key == "ranges") return d.Uint(key, &s->ranges);
    if (key == "bytes_read") return d.Uint(key, &s->bytes_read);
    if (key == "error") return d.String(key, &s->error);
    return d.reader().Skip();
  });
}

bool DecodeProcess(Decoder& d, ProcessInfo* p) {
  return d.Object("processes", [&](std::string_view key) {
    if (key == "pid") return d.Int(key, &p->pid);
    if (key == "incarnation") return d.Uint(key, &p->incarnation);
    if (key == "alive") return d.Bool(key, &p->alive);
    if (key == "uid") return d.Uint(key, &p->uid.emplace());
    if (key == "first_time") return d.OptionalUint(key, &p->first_time);
    if (key == "last_time") return d.OptionalUint(key, &p->last_time);
    if (key == "ranges") return d.Uint(key, &p->ranges);
    if (key == "nspid") return d.Uint(key, &p->nspid.emplace());
    if (key == "pid_ns") return d.Uint(key, &p->pid_ns.emplace());
    if (key == "mnt_ns") return d.Uint(key, &p->mnt_ns.emplace());
    if (key == "cgroup") return d.String(key, &p->cgroup.emplace());
    if (key == "threads") return d.OptionalUint(key, &p->threads);
    if (key == "sources") {
      return d.Array(key, [&] { return DecodeSource(d, &p->sources.emplace_back()); });
    }
    return d.reader().Skip();
  });
}

bool DecodeSymbol(Decoder& d, SymbolEntry* s) {
  return d.Object("symbols", [&](std::string_view key) {
    if (key == "start") return d.Address(key, &s->start);
    if (key == "size") return d.Uint(key, &s->size);
    if (key == "name") return d.String(key, &s->name);
    if (key == "origin") return d.Enum(key, &s->origin, OriginFromName);
    if (key == "image") return d.String(key, &s->image);
    return d.reader().Skip();
  });
}

bool DecodeExplain(Decoder& d, ExplainResponse* e) {
  return d.Object("explain", [&](std::string_view key) {
    if (key == "pid") return d.Int(key, &e->pid.emplace());
    if (key == "image") return d.String(key, &e->image.emplace());
    if (key == "addr") return d.Address(key, &e->addr);
    if (key == "time") return d.OptionalUint(key, &e->time);
    if (key == "rule") return d.String(key, &e->rule);
    if (key == "definitions_omitted") return d.Uint(key, &e->definitions_omitted);
    if (key == "answer") {
      // Decoded on its own, so that its strings live in the explain body's own text whatever
      // else the line holds (another body's strings go to that body's text).
      const size_t start = d.reader().position();
      if (!d.reader().Skip()) return false;
      Decoder sub(d.line().substr(start, d.reader().position() - start));
      sub.UseText(&e->answer.text);
      e->answer.results.resize(1);
      if (!DecodeLookupResult(sub, &e->answer.results[0]) || !sub.ok()) {
        return d.Fail("answer", "is not a lookup result (" + sub.error() + ")");
      }
      return true;
    }
    if (key == "incarnations") {
      return d.Array(key, [&] {
        ExplainIncarnation& inc = e->incarnations.emplace_back();
        return d.Object(key, [&](std::string_view k) {
          if (k == "incarnation") return d.Uint(k, &inc.incarnation);
          if (k == "alive") return d.Bool(k, &inc.alive);
          if (k == "uid") return d.Uint(k, &inc.uid.emplace());
          if (k == "start_time") return d.OptionalUint(k, &inc.start_time);
          if (k == "exit_time") return d.OptionalUint(k, &inc.exit_time);
          if (k == "nspid") return d.Uint(k, &inc.nspid.emplace());
          if (k == "cgroup") return d.String(k, &inc.cgroup.emplace());
          if (k == "sources") {
            return d.Array(k, [&] {
              ExplainSource& s = inc.sources.emplace_back();
              return d.Object(k, [&](std::string_view m) {
                if (m == "origin") return d.Enum(m, &s.origin, OriginFromName);
                if (m == "path") return d.String(m, &s.path);
                if (m == "owner") return d.Uint(m, &s.owner.emplace());
                if (m == "trust") return d.String(m, &s.trust);
                if (m == "state") return d.Enum(m, &s.state, SourceStateFromName);
                if (m == "ranges") return d.Uint(m, &s.ranges);
                if (m == "bytes_read") return d.Uint(m, &s.bytes_read);
                if (m == "records") return d.OptionalUint(m, &s.records);
                if (m == "error") return d.String(m, &s.error);
                return d.reader().Skip();
              });
            });
          }
          return d.reader().Skip();
        });
      });
    }
    if (key == "definitions") {
      return d.Array(key, [&] {
        ExplainDefinition& def = e->definitions.emplace_back();
        return d.Object(key, [&](std::string_view k) {
          if (k == "incarnation") return d.OptionalUint(k, &def.incarnation);
          if (k == "origin") return d.Enum(k, &def.origin, OriginFromName);
          if (k == "source") return d.String(k, &def.source);
          if (k == "name") return d.String(k, &def.name);
          if (k == "removed") return d.Bool(k, &def.removed);
          if (k == "start") return d.Address(k, &def.start);
          if (k == "size") return d.Uint(k, &def.size);
          if (k == "from") return d.OptionalUint(k, &def.from);
          if (k == "to") return d.OptionalUint(k, &def.to);
          if (k == "picked") return d.Bool(k, &def.picked);
          return d.reader().Skip();
        });
      });
    }
    if (key == "ignored") {
      return d.Array(key, [&] {
        ExplainIgnored& i = e->ignored.emplace_back();
        return d.Object(key, [&](std::string_view k) {
          if (k == "path") return d.String(k, &i.path);
          if (k == "reason") return d.String(k, &i.reason);
          return d.reader().Skip();
        });
      });
    }
    return d.reader().Skip();
  });
}

bool DecodeStats(Decoder& d, StatsResponse* s) {
  return d.Object("stats", [&](std::string_view key) {
    bool matched = false;
    bool ok = true;
    ForEachStat(*s, [&](std::string_view name, uint64_t& value) {
      if (!matched && key == name) {
        matched = true;
        ok = d.Uint(key, &value);
      }
    });
    return matched ? ok : d.reader().Skip();
  });
}

Error Malformed(std::string message) {
  return MakeError(ErrorKind::kMalformed, std::move(message));
}

}  // namespace

Status DecodeResponseInto(std::string_view line, Response* response) {
  Decoder d(line);
  JsonReader& r = d.reader();
  response->id_json.clear();
  std::optional<bool> ok;
  ErrorResponse err;
  bool have_error = false;
  // Which body the members named; the lookup results decode straight into the reused vector.
  enum class Body {
    kNone,
    kLookup,
    kProcesses,
    kStats,
    kPing,
    kVersion,
    kSymbols,
    kExplain
  } body = Body::kNone;
  SymbolsResponse symbols;
  ExplainResponse explain;
  LookupResponse* lookup = std::get_if<LookupResponse>(&response->body);
  if (lookup != nullptr) lookup->strings_kept.reset();
  size_t n_results = 0;
  ProcessesResponse processes;
  StatsResponse stats;
  VersionResponse version;
  version.protocol = 0;

  if (r.Peek() != Kind::kObject) {
    return Malformed(r.ok() ? "response is not a JSON object" : r.error());
  }
  const bool parsed = d.Object("response", [&](std::string_view key) {
    if (key == "id") {
      response->id_json.clear();  // a repeated "id": the last one counts, as for requests
      return r.Copy(&response->id_json);
    }
    if (key == "ok") {
      bool v = false;
      if (!d.Bool(key, &v)) return false;
      ok = v;
      return true;
    }
    if (key == "strings") {
      if (lookup == nullptr) lookup = &response->body.emplace<LookupResponse>();
      d.UseText(&lookup->text);
      return d.StringTable();
    }
    if (key == "results") {
      body = Body::kLookup;
      if (lookup == nullptr) lookup = &response->body.emplace<LookupResponse>();
      lookup->binary = false;
      d.UseText(&lookup->text);
      return d.Array(key, [&] {
        if (n_results == lookup->results.size()) lookup->results.emplace_back();
        return DecodeLookupResult(d, &lookup->results[n_results++]);
      });
    }
    if (key == "encoding") {  // a binary answer's header: its frames follow the line
      std::string_view name;
      if (r.Peek() != Kind::kString) return d.Fail(key, "must be a string");
      if (!r.ReadString(&name)) return false;
      if (name != kBinaryEncoding)
        return d.Fail(key, "names an encoding this client does not know");
      body = Body::kLookup;
      if (lookup == nullptr) lookup = &response->body.emplace<LookupResponse>();
      lookup->binary = true;
      return true;
    }
    if (key == "strings_kept") {  // a binary answer's header: it uses the connection's table
      if (lookup == nullptr) lookup = &response->body.emplace<LookupResponse>();
      return d.Uint(key, &lookup->strings_kept.emplace());
    }
    if (key == "processes") {
      body = Body::kProcesses;
      return d.Array(key, [&] { return DecodeProcess(d, &processes.processes.emplace_back()); });
    }
    if (key == "unattached") {
      body = Body::kProcesses;
      return d.Array(key, [&] {
        UnattachedInfo& u = processes.unattached.emplace_back();
        return d.Object(key, [&](std::string_view member) {
          if (member == "path") return d.String(member, &u.path);
          if (member == "uid") return d.Uint(member, &u.uid);
          if (member == "reason") return d.String(member, &u.reason);
          return d.reader().Skip();
        });
      });
    }
    if (key == "symbols") {
      body = Body::kSymbols;
      return d.Array(key, [&] { return DecodeSymbol(d, &symbols.symbols.emplace_back()); });
    }
    if (key == "explain") {
      body = Body::kExplain;
      return DecodeExplain(d, &explain);
    }
    if (key == "pid") return d.Int(key, &symbols.pid);
    if (key == "incarnation") return d.Uint(key, &symbols.incarnation);
    if (key == "stats") {
      body = Body::kStats;
      return DecodeStats(d, &stats);
    }
    if (key == "pong") {
      bool v = false;
      if (body == Body::kNone) body = Body::kPing;
      return d.Bool(key, &v);
    }
    if (key == "version") {
      body = Body::kVersion;
      return d.String(key, &version.daemon_version);
    }
    if (key == "protocol") {
      int64_t v = 0;
      if (!d.Int(key, &v)) return false;
      version.protocol = static_cast<int>(v);
      return true;
    }
    if (key == "error") {
      have_error = true;
      return d.Object(key, [&](std::string_view k) {
        if (k == "code") return d.String(k, &err.code);
        if (k == "message") return d.String(k, &err.message);
        return r.Skip();
      });
    }
    return r.Skip();
  });
  if (!parsed || !d.ok()) {
    return Malformed(d.error());
  }
  if (!r.AtEnd()) {
    return Malformed("unexpected characters after the response object");
  }
  if (!ok) {
    return Malformed("response member 'ok' is missing");
  }
  // An answer sent in pieces that failed after it started keeps its "ok":true and ends with
  // the error (EncodeAnswerFailure): what came before it is incomplete.
  if (!*ok || have_error) {
    if (!have_error) {
      err.code = kErrInternal;
      err.message = "error response without an 'error' member";
    }
    response->body = std::move(err);
    return OkStatus();
  }
  switch (body) {
    case Body::kLookup:
      // A binary header: DecodeBinaryLookupFrames fills the results (reusing their storage).
      if (!lookup->binary) lookup->results.resize(n_results);
      return OkStatus();
    case Body::kProcesses:
      response->body = std::move(processes);
      return OkStatus();
    case Body::kStats:
      response->body = stats;
      return OkStatus();
    case Body::kSymbols:
      response->body = std::move(symbols);
      return OkStatus();
    case Body::kExplain:
      response->body = std::move(explain);
      return OkStatus();
    case Body::kPing:
      response->body = PingResponse{};
      return OkStatus();
    case Body::kVersion:
      response->body = std::move(version);
      return OkStatus();
    case Body::kNone:
      break;
  }
  return Malformed("response has no recognizable body");
}

Status DecodeSymbolEntry(std::string_view text, SymbolEntry* entry) {
  *entry = SymbolEntry{};
  Decoder d(text);
  if (!DecodeSymbol(d, entry) || !d.ok()) return Malformed(d.error());
  if (!d.reader().AtEnd()) return Malformed("unexpected characters after a symbols entry");
  return OkStatus();
}

Status DecodeProcessInfo(std::string_view text, ProcessInfo* process) {
  *process = ProcessInfo{};
  Decoder d(text);
  if (!DecodeProcess(d, process) || !d.ok()) return Malformed(d.error());
  if (!d.reader().AtEnd()) return Malformed("unexpected characters after a process");
  return OkStatus();
}

Result<Response> DecodeResponse(std::string_view line) {
  Response response;
  response.body = PingResponse{};
  if (Status st = DecodeResponseInto(line, &response); !st.ok()) return std::move(st).error();
  return response;
}

}  // namespace jitsym::proto
