// profile.proto encoder, decoder and validator (see profile_proto.h for the grammar and why this
// is not libprotobuf). Protobuf wire format: each field is a varint tag (number << 3 | wire
// type) then a varint (0), 8 bytes (1), a varint length and that many bytes (2: strings,
// messages, packed repeated varints) or 4 bytes (5); 3 and 4 open and close groups.
#include "client/profile_proto.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "daemon/util/byte_reader.h"

namespace jitsym::client::pprof {
namespace {

enum Wire : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kGroupStart = 3,
  kGroupEnd = 4,
  kFixed32 = 5
};

// ---------------------------------------------------------------------------------------------
// Encoder

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
size_t TagSize(int field) { return VarintSize(static_cast<uint64_t>(field) << 3); }
// Size of a scalar field as written (0 when the value is 0 and so omitted).
size_t ScalarSize(int field, uint64_t v) { return v == 0 ? 0 : TagSize(field) + VarintSize(v); }
size_t ScalarSize(int field, int64_t v) { return ScalarSize(field, static_cast<uint64_t>(v)); }
size_t LenFieldSize(int field, size_t len) { return TagSize(field) + VarintSize(len) + len; }

template <typename T>
size_t PackedBodySize(const std::vector<T>& v) {
  size_t n = 0;
  for (T x : v) n += VarintSize(static_cast<uint64_t>(x));
  return n;
}
template <typename T>
size_t PackedSize(int field, const std::vector<T>& v) {
  return v.empty() ? 0 : LenFieldSize(field, PackedBodySize(v));
}

size_t BodySize(const ValueType& m) { return ScalarSize(1, m.type) + ScalarSize(2, m.unit); }
size_t BodySize(const Label& m) {
  return ScalarSize(1, m.key) + ScalarSize(2, m.str) + ScalarSize(3, m.num) +
         ScalarSize(4, m.num_unit);
}
size_t BodySize(const Sample& m) {
  size_t n = PackedSize(1, m.location_id) + PackedSize(2, m.value);
  for (const Label& l : m.label) n += LenFieldSize(3, BodySize(l));
  return n;
}
size_t BodySize(const Mapping& m) {
  return ScalarSize(1, m.id) + ScalarSize(2, m.memory_start) + ScalarSize(3, m.memory_limit) +
         ScalarSize(4, m.file_offset) + ScalarSize(5, m.filename) + ScalarSize(6, m.build_id) +
         ScalarSize(7, uint64_t{m.has_functions}) + ScalarSize(8, uint64_t{m.has_filenames}) +
         ScalarSize(9, uint64_t{m.has_line_numbers}) +
         ScalarSize(10, uint64_t{m.has_inline_frames});
}
size_t BodySize(const Line& m) {
  return ScalarSize(1, m.function_id) + ScalarSize(2, m.line) + ScalarSize(3, m.column);
}
size_t BodySize(const Location& m) {
  size_t n = ScalarSize(1, m.id) + ScalarSize(2, m.mapping_id) + ScalarSize(3, m.address);
  for (const Line& l : m.line) n += LenFieldSize(4, BodySize(l));
  return n + ScalarSize(5, uint64_t{m.is_folded});
}
size_t BodySize(const Function& m) {
  return ScalarSize(1, m.id) + ScalarSize(2, m.name) + ScalarSize(3, m.system_name) +
         ScalarSize(4, m.filename) + ScalarSize(5, m.start_line);
}

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void Varint(uint64_t v) {
    char buf[10];
    size_t n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    out_.append(buf, n);
  }
  void Tag(int field, Wire wire) { Varint(static_cast<uint64_t>(field) << 3 | wire); }
  void Scalar(int field, uint64_t v) {
    if (v == 0) return;
    Tag(field, kVarint);
    Varint(v);
  }
  void Scalar(int field, int64_t v) { Scalar(field, static_cast<uint64_t>(v)); }
  void Bool(int field, bool v) { Scalar(field, uint64_t{v}); }
  void String(int field, std::string_view s) {
    Tag(field, kLen);
    Varint(s.size());
    out_.append(s);
  }
  template <typename T>
  void Packed(int field, const std::vector<T>& v) {
    if (v.empty()) return;
    Tag(field, kLen);
    Varint(PackedBodySize(v));
    for (T x : v) Varint(static_cast<uint64_t>(x));
  }
  // A submessage: tag, length, then the body.
  template <typename M>
  void Message(int field, const M& m) {
    Tag(field, kLen);
    Varint(BodySize(m));
    Body(m);
  }

  void Body(const ValueType& m) {
    Scalar(1, m.type);
    Scalar(2, m.unit);
  }
  void Body(const Label& m) {
    Scalar(1, m.key);
    Scalar(2, m.str);
    Scalar(3, m.num);
    Scalar(4, m.num_unit);
  }
  void Body(const Sample& m) {
    Packed(1, m.location_id);
    Packed(2, m.value);
    for (const Label& l : m.label) Message(3, l);
  }
  void Body(const Mapping& m) {
    Scalar(1, m.id);
    Scalar(2, m.memory_start);
    Scalar(3, m.memory_limit);
    Scalar(4, m.file_offset);
    Scalar(5, m.filename);
    Scalar(6, m.build_id);
    Bool(7, m.has_functions);
    Bool(8, m.has_filenames);
    Bool(9, m.has_line_numbers);
    Bool(10, m.has_inline_frames);
  }
  void Body(const Line& m) {
    Scalar(1, m.function_id);
    Scalar(2, m.line);
    Scalar(3, m.column);
  }
  void Body(const Location& m) {
    Scalar(1, m.id);
    Scalar(2, m.mapping_id);
    Scalar(3, m.address);
    for (const Line& l : m.line) Message(4, l);
    Bool(5, m.is_folded);
  }
  void Body(const Function& m) {
    Scalar(1, m.id);
    Scalar(2, m.name);
    Scalar(3, m.system_name);
    Scalar(4, m.filename);
    Scalar(5, m.start_line);
  }

 private:
  std::string& out_;
};

// ---------------------------------------------------------------------------------------------
// Decoder

struct Field {
  uint32_t number = 0;
  Wire wire = kVarint;
  uint64_t varint = 0;       // wire type 0
  std::string_view data;     // wire type 2
  uint64_t offset = 0;       // of the tag, from the start of the input
  uint64_t data_offset = 0;  // of `data`
};

// Where each message of a decoded profile started, for Validate's errors.
struct Offsets {
  std::vector<uint64_t> sample, mapping, location, function;
};

class Decoder {
 public:
  Decoder(std::string_view bytes, const DecodeLimits& limits) : bytes_(bytes), limits_(limits) {}

  Result<Profile> Run(Offsets& offsets);

 private:
  // The next field of r (false at the end or on error; error_ tells which).
  bool Next(ByteReader& r, uint64_t base, Field& f);
  void Fail(ErrorKind kind, std::string message, uint64_t offset) {
    if (!error_) error_ = MakeError(kind, std::move(message), offset);
  }
  // Counts n items against max_items.
  bool Count(size_t n, uint64_t offset) {
    items_ += n;
    if (items_ <= limits_.max_items) return true;
    Fail(ErrorKind::kLimit,
         "more than " + std::to_string(limits_.max_items) +
             " items (location ids, values, labels, lines, comments) in the profile",
         offset);
    return false;
  }
  bool CountMessages(size_t have, size_t max, const char* what, uint64_t offset) {
    if (have < max) return true;
    Fail(ErrorKind::kLimit, "more than " + std::to_string(max) + " " + what, offset);
    return false;
  }
  // A repeated varint field, packed (wire type 2) or not (0); other wire types are skipped.
  template <typename T>
  bool Repeated(const Field& f, std::vector<T>& out);

  template <typename F>
  bool Message(const Field& f, F&& on_field);
  // One more message of a repeated message field of Profile: counted against `max`, its offset
  // kept for Validate's errors, decoded by `decode`.
  template <typename T>
  bool Add(const Field& f, std::vector<T>& out, size_t max, const char* what,
           std::vector<uint64_t>& offsets, bool (Decoder::*decode)(const Field&, T&)) {
    if (f.wire != kLen) return true;
    if (!CountMessages(out.size(), max, what, f.offset)) return false;
    offsets.push_back(f.offset);
    return (this->*decode)(f, out.emplace_back());
  }

  bool DecodeValueType(const Field& f, ValueType& m);
  bool DecodeLabel(const Field& f, Label& m);
  bool DecodeSample(const Field& f, Sample& m);
  bool DecodeMapping(const Field& f, Mapping& m);
  bool DecodeLine(const Field& f, Line& m);
  bool DecodeLocation(const Field& f, Location& m);
  bool DecodeFunction(const Field& f, Function& m);

  std::string_view bytes_;
  const DecodeLimits& limits_;
  std::optional<Error> error_;
  size_t items_ = 0;
};

bool Decoder::Next(ByteReader& r, uint64_t base, Field& f) {
  if (r.at_end() || error_) return false;
  f.offset = base + r.pos();
  const uint64_t tag = r.Uleb();
  if (!r.ok()) {
    Fail(ErrorKind::kMalformed, "truncated field tag", f.offset);
    return false;
  }
  if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff) {
    Fail(ErrorKind::kMalformed, "invalid field number " + std::to_string(tag >> 3), f.offset);
    return false;
  }
  f.number = static_cast<uint32_t>(tag >> 3);
  f.wire = static_cast<Wire>(tag & 7);
  // Built only on failure: this runs for every field of the input.
  auto field_name = [&] { return "field " + std::to_string(f.number); };
  f.data_offset = base + r.pos();
  switch (f.wire) {
    case kVarint:
      f.varint = r.Uleb();
      if (!r.ok()) Fail(ErrorKind::kMalformed, "truncated varint in " + field_name(), f.offset);
      break;
    case kFixed64:
      r.Skip(8);
      if (!r.ok()) Fail(ErrorKind::kMalformed, "truncated 8-byte " + field_name(), f.offset);
      break;
    case kFixed32:
      r.Skip(4);
      if (!r.ok()) Fail(ErrorKind::kMalformed, "truncated 4-byte " + field_name(), f.offset);
      break;
    case kLen: {
      const uint64_t len = r.Uleb();
      if (!r.ok()) {
        Fail(ErrorKind::kMalformed, "truncated length of " + field_name(), f.offset);
        break;
      }
      f.data_offset = base + r.pos();
      if (len > r.remaining()) {
        Fail(ErrorKind::kMalformed,
             field_name() + " of " + std::to_string(len) +
                 " bytes runs past the end of its message (" + std::to_string(r.remaining()) +
                 " bytes left)",
             f.offset);
        break;
      }
      const auto span = r.Bytes(static_cast<size_t>(len));
      f.data = std::string_view(reinterpret_cast<const char*>(span.data()), span.size());
      break;
    }
    case kGroupStart:
      Fail(ErrorKind::kUnsupported,
           field_name() + " is a group (wire type 3): profile.proto has none", f.offset);
      break;
    case kGroupEnd:
      Fail(ErrorKind::kMalformed, field_name() + " ends a group that never started", f.offset);
      break;
    default:
      Fail(ErrorKind::kMalformed,
           field_name() + " has invalid wire type " + std::to_string(static_cast<int>(f.wire)),
           f.offset);
      break;
  }
  return !error_;
}

template <typename T>
bool Decoder::Repeated(const Field& f, std::vector<T>& out) {
  if (f.wire == kVarint) {
    if (!Count(1, f.offset)) return false;
    out.push_back(static_cast<T>(f.varint));
    return true;
  }
  if (f.wire != kLen) return true;  // not ours: skipped
  // Every varint ends in a byte below 0x80: counting those sizes the vector before filling it.
  size_t n = 0;
  for (char c : f.data) n += static_cast<unsigned char>(c) < 0x80;
  if (!Count(n, f.offset)) return false;
  out.reserve(out.size() + n);
  ByteReader r(f.data, ByteOrder::kLittle);
  while (!r.at_end()) {
    const uint64_t at = f.data_offset + r.pos();
    const uint64_t v = r.Uleb();
    if (!r.ok()) {
      Fail(ErrorKind::kMalformed, "truncated varint in packed field " + std::to_string(f.number),
           at);
      return false;
    }
    out.push_back(static_cast<T>(v));
  }
  return true;
}

// Calls on_field(field) for each field of the submessage in f; a field of the wrong wire type
// for a message is not ours and is skipped.
template <typename F>
bool Decoder::Message(const Field& f, F&& on_field) {
  if (f.wire != kLen) return true;
  ByteReader r(f.data, ByteOrder::kLittle);
  Field g;
  while (Next(r, f.data_offset, g)) {
    if (!on_field(g)) return false;
  }
  return !error_;
}

// A non-repeated varint: the last one wins; another wire type is skipped.
template <typename T>
void Set(const Field& f, T& v) {
  if (f.wire == kVarint) v = static_cast<T>(f.varint);
}
void SetBool(const Field& f, bool& v) {
  if (f.wire == kVarint) v = f.varint != 0;
}

// The messages, one case per field number (a table: clang-format would spread it over three
// lines a field).
// clang-format off
bool Decoder::DecodeValueType(const Field& f, ValueType& m) {
  return Message(f, [&](const Field& g) {
    switch (g.number) {
      case 1: Set(g, m.type); break;
      case 2: Set(g, m.unit); break;
    }
    return true;
  });
}

bool Decoder::DecodeLabel(const Field& f, Label& m) {
  return Message(f, [&](const Field& g) {
    switch (g.number) {
      case 1: Set(g, m.key); break;
      case 2: Set(g, m.str); break;
      case 3: Set(g, m.num); break;
      case 4: Set(g, m.num_unit); break;
    }
    return true;
  });
}

bool Decoder::DecodeSample(const Field& f, Sample& m) {
  return Message(f, [&](const Field& g) {
    switch (g.number) {
      case 1: return Repeated(g, m.location_id);
      case 2: return Repeated(g, m.value);
      case 3:
        if (g.wire != kLen) return true;
        if (!Count(1, g.offset)) return false;
        return DecodeLabel(g, m.label.emplace_back());
    }
    return true;
  });
}

bool Decoder::DecodeMapping(const Field& f, Mapping& m) {
  return Message(f, [&](const Field& g) {
    switch (g.number) {
      case 1: Set(g, m.id); break;
      case 2: Set(g, m.memory_start); break;
      case 3: Set(g, m.memory_limit); break;
      case 4: Set(g, m.file_offset); break;
      case 5: Set(g, m.filename); break;
      case 6: Set(g, m.build_id); break;
      case 7: SetBool(g, m.has_functions); break;
      case 8: SetBool(g, m.has_filenames); break;
      case 9: SetBool(g, m.has_line_numbers); break;
      case 10: SetBool(g, m.has_inline_frames); break;
    }
    return true;
  });
}

bool Decoder::DecodeLine(const Field& f, Line& m) {
  return Message(f, [&](const Field& g) {
    switch (g.number) {
      case 1: Set(g, m.function_id); break;
      case 2: Set(g, m.line); break;
      case 3: Set(g, m.column); break;
    }
    return true;
  });
}

bool Decoder::DecodeLocation(const Field& f, Location& m) {
  return Message(f, [&](const Field& g) {
    switch (g.number) {
      case 1: Set(g, m.id); break;
      case 2: Set(g, m.mapping_id); break;
      case 3: Set(g, m.address); break;
      case 4:
        if (g.wire != kLen) return true;
        if (!Count(1, g.offset)) return false;
        return DecodeLine(g, m.line.emplace_back());
      case 5: SetBool(g, m.is_folded); break;
    }
    return true;
  });
}

bool Decoder::DecodeFunction(const Field& f, Function& m) {
  return Message(f, [&](const Field& g) {
    switch (g.number) {
      case 1: Set(g, m.id); break;
      case 2: Set(g, m.name); break;
      case 3: Set(g, m.system_name); break;
      case 4: Set(g, m.filename); break;
      case 5: Set(g, m.start_line); break;
    }
    return true;
  });
}
// clang-format on

// Whether a field number and wire type are one of Profile's own (repeated varints may be packed).
// clang-format off
bool IsProfileField(uint64_t number, Wire wire) {
  switch (number) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 11:  // messages, strings
      return wire == kLen;
    case 13:  // comment
      return wire == kVarint || wire == kLen;
    case 7: case 8: case 9: case 10: case 12: case 14: case 15:
      return wire == kVarint;
  }
  return false;
}
// clang-format on

// Whether the bytes start like a profile: the first field is one of Profile's own with the wire
// type the schema gives it, and the next ones (up to kSniffFields in all) are well-formed fields,
// of the schema's wire type where the number is Profile's. Encoders do not all write fields in
// number order (Go's runtime/pprof starts with period_type or time_nanos), so any of Profile's
// fields may come first. A gperftools profile starts with a zero byte (field 0), perf.data with
// "PE" then "R" (field 10 as a varint, then as a length), text with characters that are rarely
// valid tags three times in a row.
bool LooksLikeProfile(std::string_view bytes) {
  constexpr int kSniffFields = 3;
  ByteReader r(bytes, ByteOrder::kLittle);
  for (int i = 0; i < kSniffFields && !r.at_end(); ++i) {
    const uint64_t tag = r.Uleb();
    const uint64_t number = tag >> 3;
    const auto wire = static_cast<Wire>(tag & 7);
    if (!r.ok() || number == 0) return false;
    if (number <= 15 || i == 0) {
      if (!IsProfileField(number, wire)) return false;
    }
    switch (wire) {
      case kVarint:
        (void)r.Uleb();
        break;
      case kFixed64:
        r.Skip(8);
        break;
      case kFixed32:
        r.Skip(4);
        break;
      case kLen: {
        const uint64_t len = r.Uleb();
        if (len > r.remaining()) return false;
        r.Skip(static_cast<size_t>(len));
        break;
      }
      default:
        return false;
    }
    if (!r.ok()) return false;
  }
  return true;
}

Status ValidateAt(const Profile& p, const Offsets* offsets);

Result<Profile> Decoder::Run(Offsets& offsets) {
  if (bytes_.empty()) return MakeError(ErrorKind::kNotThisFormat, "empty input: not a profile");
  if (!LooksLikeProfile(bytes_)) {
    return MakeError(ErrorKind::kNotThisFormat,
                     "not a profile.proto (it does not start with fields of Profile's)");
  }
  Profile p;
  p.string_table.clear();
  ByteReader r(bytes_, ByteOrder::kLittle);
  Field f;
  size_t fields = 0;
  while (Next(r, 0, f)) {
    ++fields;
    bool ok = true;
    // clang-format off
    switch (f.number) {
      case 1:
        if (f.wire == kLen) ok = Count(1, f.offset) && DecodeValueType(f, p.sample_type.emplace_back());
        break;
      case 2: ok = Add(f, p.sample, limits_.max_samples, "samples", offsets.sample, &Decoder::DecodeSample); break;
      case 3: ok = Add(f, p.mapping, limits_.max_mappings, "mappings", offsets.mapping, &Decoder::DecodeMapping); break;
      case 4: ok = Add(f, p.location, limits_.max_locations, "locations", offsets.location, &Decoder::DecodeLocation); break;
      case 5: ok = Add(f, p.function, limits_.max_functions, "functions", offsets.function, &Decoder::DecodeFunction); break;
      case 6:
        if (f.wire != kLen) break;
        ok = CountMessages(p.string_table.size(), limits_.max_strings, "strings", f.offset);
        if (ok) p.string_table.emplace_back(f.data);
        break;
      case 7: Set(f, p.drop_frames); break;
      case 8: Set(f, p.keep_frames); break;
      case 9: Set(f, p.time_nanos); break;
      case 10: Set(f, p.duration_nanos); break;
      case 11: ok = DecodeValueType(f, p.period_type); break;
      case 12: Set(f, p.period); break;
      case 13: ok = Repeated(f, p.comment); break;
      case 14: Set(f, p.default_sample_type); break;
      case 15: Set(f, p.doc_url); break;
    }
    // clang-format on
    if (!ok) break;
  }
  if (error_) return *error_;
  if (p.string_table.empty()) {
    // One or two fields that happen to parse say little; more are a profile whose string table
    // (which Go's runtime writes last) was cut off: a truncated upload must not read as "not a
    // profile".
    if (fields < 3) {
      return MakeError(ErrorKind::kNotThisFormat, "not a profile.proto (no string table)");
    }
    return MakeError(ErrorKind::kMalformed, "no string table (a profile.proto cut short?)",
                     bytes_.size());
  }
  if (Status s = ValidateAt(p, &offsets); !s) return s.error();
  return p;
}

// ---------------------------------------------------------------------------------------------
// Validation

// The ids of one kind of message: sorted, for "is this id defined". Ids 1..N (what every
// encoder we know writes) are checked without searching.
class IdSet {
 public:
  template <typename T>
  explicit IdSet(const std::vector<T>& items) {
    ids_.reserve(items.size());
    for (const T& t : items) ids_.push_back(t.id);
    std::sort(ids_.begin(), ids_.end());
    dense_ = ids_.empty() || (ids_.front() == 1 && ids_.back() == ids_.size() &&
                              std::adjacent_find(ids_.begin(), ids_.end()) == ids_.end());
  }
  bool contains(uint64_t id) const {
    if (dense_) return id >= 1 && id <= ids_.size();
    return std::binary_search(ids_.begin(), ids_.end(), id);
  }
  // An id held twice (0 if none).
  std::optional<uint64_t> duplicate() const {
    if (dense_) return std::nullopt;
    auto it = std::adjacent_find(ids_.begin(), ids_.end());
    if (it == ids_.end()) return std::nullopt;
    return *it;
  }

 private:
  std::vector<uint64_t> ids_;
  bool dense_ = true;
};

Status ValidateAt(const Profile& p, const Offsets* offsets) {
  auto at = [&](const std::vector<uint64_t> Offsets::*which, size_t i) -> uint64_t {
    if (offsets == nullptr || i >= (offsets->*which).size()) return 0;
    return (offsets->*which)[i];
  };
  if (p.string_table.empty() || !p.string_table[0].empty()) {
    return MakeError(ErrorKind::kMalformed, "string_table[0] is not \"\"");
  }
  const uint64_t strings = p.string_table.size();
  auto bad_string = [&](int64_t i) { return i < 0 || static_cast<uint64_t>(i) >= strings; };
  auto string_error = [&](const std::string& where, int64_t i, uint64_t offset) {
    return MakeError(
        ErrorKind::kMalformed,
        where + " names string " + std::to_string(i) + " of a table of " + std::to_string(strings),
        offset);
  };

  for (size_t i = 0; i < p.sample_type.size(); ++i) {
    for (int64_t s : {p.sample_type[i].type, p.sample_type[i].unit}) {
      if (bad_string(s)) return string_error("sample_type " + std::to_string(i), s, 0);
    }
  }
  for (int64_t s : {p.drop_frames, p.keep_frames, p.period_type.type, p.period_type.unit,
                    p.default_sample_type, p.doc_url}) {
    if (bad_string(s)) return string_error("the profile", s, 0);
  }
  for (int64_t s : p.comment) {
    if (bad_string(s)) return string_error("a comment", s, 0);
  }

  // Ids: nonzero and unique per kind.
  const IdSet mappings(p.mapping), locations(p.location), functions(p.function);
  struct Kind {
    const char* name;
    const IdSet& ids;
  };
  for (const Kind& k :
       {Kind{"mapping", mappings}, Kind{"location", locations}, Kind{"function", functions}}) {
    if (auto dup = k.ids.duplicate()) {
      return MakeError(ErrorKind::kMalformed,
                       std::string("two ") + k.name + "s have id " + std::to_string(*dup));
    }
  }

  for (size_t i = 0; i < p.mapping.size(); ++i) {
    const Mapping& m = p.mapping[i];
    const uint64_t off = at(&Offsets::mapping, i);
    const std::string where = "mapping " + std::to_string(i);
    if (m.id == 0) return MakeError(ErrorKind::kMalformed, where + " has id 0", off);
    if (bad_string(m.filename)) return string_error(where + " filename", m.filename, off);
    if (bad_string(m.build_id)) return string_error(where + " build_id", m.build_id, off);
  }
  for (size_t i = 0; i < p.function.size(); ++i) {
    const Function& f = p.function[i];
    const uint64_t off = at(&Offsets::function, i);
    const std::string where = "function " + std::to_string(i);
    if (f.id == 0) return MakeError(ErrorKind::kMalformed, where + " has id 0", off);
    for (int64_t s : {f.name, f.system_name, f.filename}) {
      if (bad_string(s)) return string_error(where, s, off);
    }
  }
  for (size_t i = 0; i < p.location.size(); ++i) {
    const Location& l = p.location[i];
    const uint64_t off = at(&Offsets::location, i);
    if (l.id == 0) {
      return MakeError(ErrorKind::kMalformed, "location " + std::to_string(i) + " has id 0", off);
    }
    if (l.mapping_id != 0 && !mappings.contains(l.mapping_id)) {
      return MakeError(ErrorKind::kMalformed,
                       "location " + std::to_string(l.id) + " names mapping " +
                           std::to_string(l.mapping_id) + ", which the profile does not hold",
                       off);
    }
    for (const Line& line : l.line) {
      if (line.function_id != 0 && !functions.contains(line.function_id)) {
        return MakeError(ErrorKind::kMalformed,
                         "location " + std::to_string(l.id) + " names function " +
                             std::to_string(line.function_id) + ", which the profile does not hold",
                         off);
      }
    }
  }
  for (size_t i = 0; i < p.sample.size(); ++i) {
    const Sample& s = p.sample[i];
    const uint64_t off = at(&Offsets::sample, i);
    const std::string where = "sample " + std::to_string(i);
    if (s.value.size() != p.sample_type.size()) {
      return MakeError(ErrorKind::kMalformed,
                       where + " has " + std::to_string(s.value.size()) + " values for " +
                           std::to_string(p.sample_type.size()) + " sample types",
                       off);
    }
    for (uint64_t id : s.location_id) {
      if (!locations.contains(id)) {
        return MakeError(
            ErrorKind::kMalformed,
            where + " names location " + std::to_string(id) + ", which the profile does not hold",
            off);
      }
    }
    for (const Label& l : s.label) {
      for (int64_t x : {l.key, l.str, l.num_unit}) {
        if (bad_string(x)) return string_error(where + " label", x, off);
      }
    }
  }
  return OkStatus();
}

}  // namespace

std::string Encode(const Profile& p) {
  std::string out;
  Writer w(out);
  for (const ValueType& m : p.sample_type) w.Message(1, m);
  for (const Sample& m : p.sample) w.Message(2, m);
  for (const Mapping& m : p.mapping) w.Message(3, m);
  for (const Location& m : p.location) w.Message(4, m);
  for (const Function& m : p.function) w.Message(5, m);
  for (const std::string& s : p.string_table) w.String(6, s);
  w.Scalar(7, p.drop_frames);
  w.Scalar(8, p.keep_frames);
  w.Scalar(9, p.time_nanos);
  w.Scalar(10, p.duration_nanos);
  if (p.period_type != ValueType{}) w.Message(11, p.period_type);
  w.Scalar(12, p.period);
  w.Packed(13, p.comment);
  w.Scalar(14, p.default_sample_type);
  w.Scalar(15, p.doc_url);
  return out;
}

Result<Profile> Decode(std::string_view bytes, const DecodeLimits& limits) {
  Offsets offsets;
  return Decoder(bytes, limits).Run(offsets);
}

Status Validate(const Profile& profile) { return ValidateAt(profile, nullptr); }

}  // namespace jitsym::client::pprof
