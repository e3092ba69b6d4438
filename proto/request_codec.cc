// Requests: decoding (daemon side, hostile input) and encoding (client side).
#include <cstdint>
#include <limits>
#include <string>

#include "proto/json_reader.h"
#include "proto/json_writer.h"
#include "proto/protocol.h"

namespace jitsym::proto {
namespace {

using json::JsonReader;
using Kind = JsonReader::Kind;

constexpr std::string_view kInvalidAddress = "invalid address";
constexpr std::string_view kInvalidTime = "invalid time";

// A JSON number or string holding a time, per ParseTime. JSON numbers with a fraction are
// accepted as seconds too ("time":219.895069), exponents are not.
std::optional<uint64_t> ReadTime(JsonReader& r, bool* syntax_ok) {
  std::string_view text;
  const Kind kind = r.Peek();
  if (kind == Kind::kNumber) {
    *syntax_ok = r.ReadNumber(&text);
  } else if (kind == Kind::kString) {
    *syntax_ok = r.ReadString(&text);
  } else {
    *syntax_ok = r.Skip();
    return std::nullopt;
  }
  if (!*syntax_ok) return std::nullopt;
  return ParseTime(text);
}

// The compact JSON text of the value in text[start, end), for echoing an unparsable entry.
std::string CompactSlice(std::string_view text, size_t start, size_t end) {
  JsonReader copier(text.substr(start, end - start));
  std::string out;
  copier.Copy(&out);
  return out;
}

// An address given as a string (hex) or a number (decimal, integers only).
bool ReadAddressValue(JsonReader& r, AddressQuery* q) {
  std::string_view text;
  const Kind kind = r.Peek();
  if (kind == Kind::kString || kind == Kind::kNumber) {
    if (!(kind == Kind::kString ? r.ReadString(&text) : r.ReadNumber(&text))) return false;
    const std::optional<uint64_t> value =
        kind == Kind::kString ? ParseAddress(text) : ParseDecimal(text);
    if (value) {
      q->addr = *value;
    } else {
      q->error = kInvalidAddress;
      q->raw = text;
    }
    return true;
  }
  q->error = kInvalidAddress;  // raw is filled in by the caller from the entry's text
  return r.Skip();
}

// One entry of "addrs": A | {"addr":A,"time":T}. Entry-level problems become q->error (the
// batch goes on); only broken JSON fails.
bool ReadAddressEntry(JsonReader& r, std::string_view line, AddressQuery* q) {
  const size_t start = r.position();
  const Kind kind = r.Peek();
  bool ok;
  if (kind == Kind::kObject) {
    ok = r.BeginObject();
    bool have_addr = false;
    std::string_view key;
    while (ok && r.NextMember(&key)) {
      if (key == "addr") {
        have_addr = true;
        ok = ReadAddressValue(r, q);
      } else if (key == "time") {
        if (r.Peek() == Kind::kNull) {
          ok = r.ReadNull();
          continue;
        }
        q->time = ReadTime(r, &ok);
        if (ok && !q->time && q->error.empty()) q->error = kInvalidTime;
      } else {
        ok = r.Skip();
      }
    }
    ok = ok && r.ok();
    if (ok && !have_addr) q->error = kInvalidAddress;
    if (ok && !q->error.empty()) q->raw = CompactSlice(line, start, r.position());
  } else {
    ok = ReadAddressValue(r, q);
    if (ok && !q->error.empty() && q->raw.empty() && kind != Kind::kString) {
      q->raw = CompactSlice(line, start, r.position());
    }
  }
  if (!q->error.empty()) {
    q->addr = 0;
    q->time.reset();
  }
  return ok;
}

struct RequestFields {
  std::string id_json;
  bool have_id = false;
  std::optional<int64_t> version;
  std::string op;
  bool have_op = false;
  std::string header_error;  // wrong type of "v" or "op"
  LookupRequest lookup;
  bool have_addrs = false;
  bool too_many_addrs = false;
  std::string lookup_error;  // first problem with a lookup member
  // "addr" (explain): one address.
  AddressQuery addr;
  bool have_addr = false;
};

void SetOnce(std::string* slot, std::string message) {
  if (slot->empty()) *slot = std::move(message);
}

bool ReadOptionalString(JsonReader& r, std::string_view name, std::optional<std::string>* out,
                        std::string* error) {
  std::string_view text;
  switch (r.Peek()) {
    case Kind::kNull:
      out->reset();
      return r.ReadNull();
    case Kind::kString:
      if (!r.ReadString(&text)) return false;
      *out = std::string(text);
      return true;
    default:
      SetOnce(error, "member '" + std::string(name) + "' must be a string");
      return r.Skip();
  }
}

// An integer member in [min, max] into *out, or null (absent); anything else leaves *out as it
// is and sets *error to `message` (once).
template <typename T>
bool ReadOptionalInteger(JsonReader& r, uint64_t min, uint64_t max, std::optional<T>* out,
                         std::string* error, std::string_view message) {
  std::string_view text;
  switch (r.Peek()) {
    case Kind::kNull:
      out->reset();
      return r.ReadNull();
    case Kind::kNumber: {
      if (!r.ReadNumber(&text)) return false;
      const std::optional<uint64_t> v = ParseDecimal(text);
      if (v && *v >= min && *v <= max) {
        *out = static_cast<T>(*v);
        return true;
      }
      break;
    }
    default:
      if (!r.Skip()) return false;
  }
  SetOnce(error, std::string(message));
  return true;
}

bool ReadAddrs(JsonReader& r, std::string_view line, RequestFields* f) {
  if (r.Peek() != Kind::kArray) {
    SetOnce(&f->lookup_error, "member 'addrs' must be an array");
    return r.Skip();
  }
  f->have_addrs = true;
  if (!r.BeginArray()) return false;
  std::vector<AddressQuery>& addrs = f->lookup.addrs;
  while (r.NextElement()) {
    if (addrs.size() >= kMaxBatch) {
      f->too_many_addrs = true;
      if (!r.Skip()) return false;
      continue;
    }
    AddressQuery& q = addrs.emplace_back();
    if (!ReadAddressEntry(r, line, &q)) return false;
  }
  return r.ok();
}

bool ReadMember(JsonReader& r, std::string_view key, std::string_view line, RequestFields* f) {
  std::string_view text;
  if (key == "v") {
    if (r.Peek() != Kind::kNumber) {
      SetOnce(&f->header_error, "member 'v' must be an integer");
      return r.Skip();
    }
    if (!r.ReadNumber(&text)) return false;
    const bool negative = text.size() > 1 && text[0] == '-';
    const std::string_view digits = negative ? text.substr(1) : text;
    if (digits.find_first_not_of("0123456789") != std::string_view::npos) {
      SetOnce(&f->header_error, "member 'v' must be an integer");
    } else if (negative) {
      f->version = -1;
    } else {
      // Too large to represent is still just an unsupported version.
      f->version = static_cast<int64_t>(
          std::min<uint64_t>(ParseDecimal(digits).value_or(INT64_MAX), INT64_MAX));
    }
    return true;
  }
  if (key == "id") {
    f->id_json.clear();
    f->have_id = true;
    if (r.Copy(&f->id_json)) return true;
    f->id_json.clear();
    f->have_id = false;
    return false;
  }
  if (key == "op") {
    if (r.Peek() != Kind::kString) {
      SetOnce(&f->header_error, "member 'op' must be a string");
      return r.Skip();
    }
    if (!r.ReadString(&text)) return false;
    f->op = text;
    f->have_op = true;
    return true;
  }
  if (key == "pid") {
    return ReadOptionalInteger(r, 1, INT64_MAX, &f->lookup.pid, &f->lookup_error,
                               "member 'pid' must be a positive integer");
  }
  if (key == "time") {
    if (r.Peek() == Kind::kNull) {
      f->lookup.time.reset();
      return r.ReadNull();
    }
    bool ok;
    f->lookup.time = ReadTime(r, &ok);
    if (ok && !f->lookup.time) {
      SetOnce(&f->lookup_error,
              "member 'time' must be nanoseconds (an integer) or seconds with a decimal point");
    }
    return ok;
  }
  if (key == "origin") return ReadOptionalString(r, key, &f->lookup.origin, &f->lookup_error);
  if (key == "image") return ReadOptionalString(r, key, &f->lookup.image, &f->lookup_error);
  if (key == "build_id") {
    return ReadOptionalString(r, key, &f->lookup.build_id, &f->lookup_error);
  }
  if (key == "file_offset") {
    if (r.Peek() == Kind::kNull) return r.ReadNull();
    if (r.Peek() != Kind::kBool) {
      SetOnce(&f->lookup_error, "member 'file_offset' must be true or false");
      return r.Skip();
    }
    return r.ReadBool(&f->lookup.file_offset);
  }
  if (key == "image_fd") {
    return ReadOptionalInteger(r, 0, INT32_MAX, &f->lookup.image_fd, &f->lookup_error,
                               "member 'image_fd' must be a descriptor number (0 or more)");
  }
  if (key == "strings") {
    if (r.Peek() == Kind::kNull) return r.ReadNull();
    if (r.Peek() != Kind::kBool) {
      SetOnce(&f->lookup_error, "member 'strings' must be true or false");
      return r.Skip();
    }
    return r.ReadBool(&f->lookup.strings);
  }
  if (key == "encoding") {
    // The answer's encoding: "binary", or anything else for JSON (a newer client may name an
    // encoding this daemon does not speak; it reads the JSON answer instead).
    std::optional<std::string> name;
    if (!ReadOptionalString(r, key, &name, &f->lookup_error)) return false;
    f->lookup.binary = name == kBinaryEncoding;
    return true;
  }
  if (key == "string_table") {
    // "connection": the binary answers' strings kept across the answers of this connection;
    // any other name (a newer client's) is a table per answer.
    std::optional<std::string> name;
    if (!ReadOptionalString(r, key, &name, &f->lookup_error)) return false;
    f->lookup.connection_strings = name == kConnectionStringTable;
    return true;
  }
  if (key == "addrs") return ReadAddrs(r, line, f);
  if (key == "addr") {
    f->have_addr = true;
    f->addr = AddressQuery{};
    return ReadAddressValue(r, &f->addr);
  }
  if (key == "fields") {
    if (r.Peek() == Kind::kNull) return r.ReadNull();
    if (r.Peek() != Kind::kArray) {
      SetOnce(&f->lookup_error, "member 'fields' must be an array of member names");
      return r.Skip();
    }
    if (!r.BeginArray()) return false;
    uint32_t mask = 0;
    while (r.NextElement()) {
      std::string_view name;
      if (r.Peek() != Kind::kString) {
        SetOnce(&f->lookup_error, "member 'fields' must be an array of member names");
        if (!r.Skip()) return false;
        continue;
      }
      if (!r.ReadString(&name)) return false;
      mask |= ResultFieldFromName(name);  // unknown names are ignored, as unknown members are
    }
    f->lookup.fields = mask;
    return r.ok();
  }
  return r.Skip();  // unknown members are ignored: additive protocol changes keep v1
}

DecodeRequestResult Error(const RequestFields& f, std::string_view code, std::string message) {
  DecodeRequestResult result;
  result.error = MakeErrorResponse(f.have_id ? f.id_json : std::string(), code, std::move(message));
  return result;
}

}  // namespace

DecodeRequestResult DecodeRequest(std::string_view line) {
  RequestFields f;
  JsonReader r(line);
  const Kind kind = r.Peek();
  if (kind != Kind::kObject) {
    if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      return Error(f, kErrBadRequest, "empty request");
    }
    const bool is_json = kind != Kind::kInvalid && r.Skip() && r.AtEnd();
    return Error(f, kErrBadRequest,
                 is_json ? "request must be a JSON object" : "request is not JSON");
  }
  r.BeginObject();
  std::string_view key;
  while (r.NextMember(&key)) {
    if (!ReadMember(r, key, line, &f)) break;
  }
  if (!r.ok()) return Error(f, kErrBadRequest, r.error());
  if (!r.AtEnd()) return Error(f, kErrBadRequest, "unexpected characters after the request object");
  if (!f.header_error.empty()) return Error(f, kErrBadRequest, f.header_error);
  if (f.version && *f.version != kProtocolVersion) {
    return Error(f, kErrUnsupportedVersion,
                 "protocol version " + std::to_string(*f.version) +
                     " is not supported (this daemon speaks version " +
                     std::to_string(kProtocolVersion) + ")");
  }
  if (!f.have_op) return Error(f, kErrBadRequest, "missing member 'op'");

  DecodeRequestResult result;
  Request& request = result.request.emplace();
  request.id_json = f.id_json;
  if (f.op == "lookup") {
    if (!f.lookup_error.empty()) {
      result.request.reset();
      return Error(f, kErrBadRequest, f.lookup_error);
    }
    if (!f.lookup.pid && !f.lookup.image && !f.lookup.build_id) {
      result.request.reset();
      return Error(f, kErrBadRequest, "lookup needs member 'pid' or 'image' (or 'build_id')");
    }
    if (f.lookup.image_fd && (!f.lookup.image || f.lookup.image->find('/') == std::string::npos)) {
      result.request.reset();
      return Error(f, kErrBadRequest, "member 'image_fd' needs 'image' (the file's path)");
    }
    if (!f.have_addrs) {
      result.request.reset();
      return Error(f, kErrBadRequest, "missing member 'addrs'");
    }
    if (f.too_many_addrs) {
      result.request.reset();
      return Error(f, kErrTooLarge,
                   "more than " + std::to_string(kMaxBatch) + " addresses in one request");
    }
    request.body = std::move(f.lookup);
  } else if (f.op == "symbols") {
    // "pid" is read by the lookup member parser; its errors apply here too.
    if (!f.lookup_error.empty() || !f.lookup.pid) {
      result.request.reset();
      return Error(f, kErrBadRequest,
                   f.lookup_error.empty() ? "symbols needs member 'pid'" : f.lookup_error);
    }
    request.body = SymbolsRequest{*f.lookup.pid};
  } else if (f.op == "explain") {
    std::string problem = f.lookup_error;
    if (problem.empty() && !f.lookup.pid && !f.lookup.image) {
      problem = "explain needs member 'pid' or 'image'";
    } else if (problem.empty() && f.lookup.pid && f.lookup.image) {
      problem = "explain takes 'pid' or 'image', not both";
    } else if (problem.empty() && !f.have_addr) {
      problem = "explain needs member 'addr'";
    } else if (problem.empty() && !f.addr.error.empty()) {
      problem = "member 'addr' must be a hex string";
    } else if (problem.empty() && f.lookup.image_fd &&
               (!f.lookup.image || f.lookup.image->find('/') == std::string::npos)) {
      problem = "member 'image_fd' needs 'image' (the file's path)";
    }
    if (!problem.empty()) {
      result.request.reset();
      return Error(f, kErrBadRequest, std::move(problem));
    }
    request.body =
        ExplainRequest{f.lookup.pid, f.lookup.image, f.addr.addr, f.lookup.time, f.lookup.image_fd};
  } else if (f.op == "processes") {
    request.body = ProcessesRequest{};
  } else if (f.op == "stats") {
    request.body = StatsRequest{};
  } else if (f.op == "ping") {
    request.body = PingRequest{};
  } else if (f.op == "version") {
    request.body = VersionRequest{};
  } else {
    result.request.reset();
    return Error(f, kErrUnknownOp, "unknown op '" + f.op + "'");
  }
  return result;
}

void EncodeRequest(const Request& request, std::string* out) {
  out->append("{\"v\":1");
  if (!request.id_json.empty()) {
    out->append(",\"id\":");
    out->append(request.id_json);
  }
  out->append(",\"op\":");
  struct Visitor {
    std::string* out;
    void operator()(const LookupRequest& lookup) const {
      out->append("\"lookup\"");
      if (lookup.pid) {
        out->append(",\"pid\":");
        json::AppendInt(*lookup.pid, out);
      }
      if (lookup.image) {
        out->append(",\"image\":");
        json::AppendString(*lookup.image, out);
      }
      if (lookup.build_id) {
        out->append(",\"build_id\":");
        json::AppendString(*lookup.build_id, out);
      }
      if (lookup.image_fd) {
        out->append(",\"image_fd\":");
        json::AppendInt(*lookup.image_fd, out);
      }
      if (lookup.file_offset) out->append(",\"file_offset\":true");
      if (lookup.origin) {
        out->append(",\"origin\":");
        json::AppendString(*lookup.origin, out);
      }
      if (lookup.time) {
        out->append(",\"time\":");
        json::AppendUint(*lookup.time, out);
      }
      if (lookup.fields != kAllFields) {
        out->append(",\"fields\":[");
        bool first_field = true;
        for (std::string_view name : ResultFieldNames(lookup.fields)) {
          if (!first_field) out->push_back(',');
          first_field = false;
          json::AppendString(name, out);
        }
        out->push_back(']');
      }
      if (lookup.strings) out->append(",\"strings\":true");
      if (lookup.binary) out->append(",\"encoding\":\"binary\"");
      if (lookup.connection_strings) out->append(",\"string_table\":\"connection\"");
      out->append(",\"addrs\":[");
      bool first = true;
      for (const AddressQuery& q : lookup.addrs) {
        if (!first) out->push_back(',');
        first = false;
        if (!q.error.empty()) {
          // Unparsable input the caller still wants answered in place: the daemon will
          // report it back as a per-address error.
          json::AppendString(q.raw, out);
        } else if (q.time) {
          out->append("{\"addr\":");
          json::AppendHexString(q.addr, out);
          out->append(",\"time\":");
          json::AppendUint(*q.time, out);
          out->push_back('}');
        } else {
          json::AppendHexString(q.addr, out);
        }
      }
      out->push_back(']');
    }
    void operator()(const SymbolsRequest& symbols) const {
      out->append("\"symbols\",\"pid\":");
      json::AppendInt(symbols.pid, out);
    }
    void operator()(const ExplainRequest& explain) const {
      out->append("\"explain\"");
      if (explain.pid) {
        out->append(",\"pid\":");
        json::AppendInt(*explain.pid, out);
      }
      if (explain.image) {
        out->append(",\"image\":");
        json::AppendString(*explain.image, out);
      }
      if (explain.image_fd) {
        out->append(",\"image_fd\":");
        json::AppendInt(*explain.image_fd, out);
      }
      out->append(",\"addr\":");
      json::AppendHexString(explain.addr, out);
      if (explain.time) {
        out->append(",\"time\":");
        json::AppendUint(*explain.time, out);
      }
    }
    void operator()(const ProcessesRequest&) const { out->append("\"processes\""); }
    void operator()(const StatsRequest&) const { out->append("\"stats\""); }
    void operator()(const PingRequest&) const { out->append("\"ping\""); }
    void operator()(const VersionRequest&) const { out->append("\"version\""); }
  };
  std::visit(Visitor{out}, request.body);
  out->append("}\n");
}

}  // namespace jitsym::proto
