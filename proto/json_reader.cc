#include "proto/json_reader.h"

#include <array>
#include <cstdint>
#include <string>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "proto/json_writer.h"

namespace jitsym::proto::json {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Bytes that end the plain run of a string: the closing quote, a backslash, control characters.
constexpr auto kStringSpecial = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[c] = true;
  table['"'] = true;
  table['\\'] = true;
  return table;
}();

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The first index in [i, n) holding a kStringSpecial byte, or n. Names and paths make up most of
// a lookup response, so this scans 16 bytes at a time where SSE2 is there (every x86-64).
size_t FindStringSpecial(const char* data, size_t i, size_t n) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i control_max = _mm_set1_epi8(0x1f);
  for (; i + 16 <= n; i += 16) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    const __m128i special =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
                     // c <= 0x1f (unsigned) exactly when min(c, 0x1f) == c
                     _mm_cmpeq_epi8(_mm_min_epu8(chunk, control_max), chunk));
    if (const int mask = _mm_movemask_epi8(special); mask != 0) {
      return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
  }
#endif
  while (i < n && !kStringSpecial[static_cast<unsigned char>(data[i])]) ++i;
  return i;
}

}  // namespace

JsonReader::JsonReader(std::string_view text, int max_depth)
    : text_(text), max_depth_(max_depth), first_(static_cast<size_t>(max_depth) + 1, 0) {}

bool JsonReader::Fail(std::string_view what) {
  if (error_.empty()) {
    error_ = "invalid JSON at offset " + std::to_string(pos_) + ": ";
    error_.append(what);
  }
  return false;
}

void JsonReader::SkipWhitespaceSlow() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++pos_;
  }
}

bool JsonReader::Expect(char c) {
  SkipWhitespace();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  if (pos_ >= text_.size()) return Fail(std::string("unexpected end, expected '") + c + "'");
  return Fail(std::string("expected '") + c + "'");
}

JsonReader::Kind JsonReader::Peek() {
  if (!ok()) return Kind::kInvalid;
  SkipWhitespace();
  if (pos_ >= text_.size()) return Kind::kInvalid;
  switch (text_[pos_]) {
    case '{':
      return Kind::kObject;
    case '[':
      return Kind::kArray;
    case '"':
      return Kind::kString;
    case 't':
    case 'f':
      return Kind::kBool;
    case 'n':
      return Kind::kNull;
    default:
      return text_[pos_] == '-' || IsDigit(text_[pos_]) ? Kind::kNumber : Kind::kInvalid;
  }
}

bool JsonReader::ReadLiteral(std::string_view literal) {
  if (text_.substr(pos_, literal.size()) != literal) return Fail("invalid literal");
  pos_ += literal.size();
  return true;
}

bool JsonReader::ReadNull() {
  if (Peek() != Kind::kNull) return Fail("expected null");
  return ReadLiteral("null");
}

bool JsonReader::ReadBool(bool* value) {
  if (Peek() != Kind::kBool) return Fail("expected true or false");
  *value = text_[pos_] == 't';
  return ReadLiteral(*value ? "true" : "false");
}

bool JsonReader::ReadNumber(std::string_view* text) {
  if (Peek() != Kind::kNumber) return Fail("expected a number");
  const size_t start = pos_;
  const size_t n = text_.size();
  if (text_[pos_] == '-') ++pos_;
  if (pos_ < n && text_[pos_] == '0') {
    ++pos_;
  } else if (pos_ < n && IsDigit(text_[pos_])) {
    while (pos_ < n && IsDigit(text_[pos_])) ++pos_;
  } else {
    return Fail("invalid number");
  }
  if (pos_ < n && text_[pos_] == '.') {
    ++pos_;
    if (pos_ >= n || !IsDigit(text_[pos_])) return Fail("invalid number");
    while (pos_ < n && IsDigit(text_[pos_])) ++pos_;
  }
  if (pos_ < n && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < n && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (pos_ >= n || !IsDigit(text_[pos_])) return Fail("invalid number");
    while (pos_ < n && IsDigit(text_[pos_])) ++pos_;
  }
  *text = text_.substr(start, pos_ - start);
  return true;
}

bool JsonReader::TryReadUint(uint64_t* value) {
  if (!ok()) return false;
  SkipWhitespace();
  const size_t n = text_.size();
  size_t p = pos_;
  if (p >= n || !IsDigit(text_[p])) return false;
  uint64_t v = 0;
  if (text_[p] == '0') {
    ++p;
  } else {
    for (; p < n && IsDigit(text_[p]); ++p) {
      const auto digit = static_cast<uint64_t>(text_[p] - '0');
      if (v > (UINT64_MAX - digit) / 10) return false;
      v = v * 10 + digit;
    }
  }
  if (p < n && (IsDigit(text_[p]) || text_[p] == '.' || text_[p] == 'e' || text_[p] == 'E')) {
    return false;
  }
  pos_ = p;
  *value = v;
  return true;
}

bool JsonReader::ReadString(std::string_view* value) {
  if (Peek() != Kind::kString) return Fail("expected a string");
  return ReadStringInto(value, &value_scratch_);
}

bool JsonReader::ReadStringInto(std::string_view* value, std::string* scratch) {
  ++pos_;  // opening quote, checked by the caller
  const size_t start = pos_;
  const size_t n = text_.size();
  // Fast path: no escapes, the value is a view into the input.
  const char* data = text_.data();
  const size_t i = FindStringSpecial(data, pos_, n);
  pos_ = i;
  if (i < n && data[i] == '"') {
    *value = text_.substr(start, i - start);
    ++pos_;
    return true;
  }
  if (i < n && data[i] != '\\') return Fail("control character in string");
  if (pos_ >= n) return Fail("unterminated string");
  scratch->assign(text_.data() + start, pos_ - start);
  while (pos_ < n) {
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      *value = *scratch;
      return true;
    }
    if (c == '\\') {
      if (!ReadEscape(scratch)) return false;
      continue;
    }
    if (c < 0x20) return Fail("control character in string");
    scratch->push_back(static_cast<char>(c));
    ++pos_;
  }
  return Fail("unterminated string");
}

bool JsonReader::ReadHex4(uint32_t* value) {
  if (text_.size() - pos_ < 4) return Fail("truncated \\u escape");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const int d = HexValue(text_[pos_ + i]);
    if (d < 0) return Fail("invalid \\u escape");
    v = v << 4 | static_cast<uint32_t>(d);
  }
  pos_ += 4;
  *value = v;
  return true;
}

bool JsonReader::ReadEscape(std::string* scratch) {
  ++pos_;  // backslash
  if (pos_ >= text_.size()) return Fail("unterminated string");
  const char c = text_[pos_++];
  switch (c) {
    case '"':
    case '\\':
    case '/':
      scratch->push_back(c);
      return true;
    case 'b':
      scratch->push_back('\b');
      return true;
    case 'f':
      scratch->push_back('\f');
      return true;
    case 'n':
      scratch->push_back('\n');
      return true;
    case 'r':
      scratch->push_back('\r');
      return true;
    case 't':
      scratch->push_back('\t');
      return true;
    case 'u':
      break;
    default:
      --pos_;
      return Fail("invalid escape");
  }
  uint32_t cp;
  if (!ReadHex4(&cp)) return false;
  if (cp >= 0xD800 && cp <= 0xDBFF && text_.substr(pos_, 2) == "\\u") {
    const size_t save = pos_;
    pos_ += 2;
    uint32_t low;
    if (!ReadHex4(&low)) return false;
    if (low >= 0xDC00 && low <= 0xDFFF) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    } else {
      pos_ = save;  // not a pair: the next escape stands on its own
    }
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // lone surrogate
  AppendUtf8(cp, scratch);
  return true;
}

bool JsonReader::Enter() {
  if (depth_ >= max_depth_) {
    return Fail("nesting deeper than " + std::to_string(max_depth_) + " levels");
  }
  ++depth_;
  first_[static_cast<size_t>(depth_)] = 1;
  return true;
}

bool JsonReader::BeginObject() {
  if (Peek() != Kind::kObject) return Fail("expected an object");
  if (!Enter()) return false;
  ++pos_;
  return true;
}

bool JsonReader::BeginArray() {
  if (Peek() != Kind::kArray) return Fail("expected an array");
  if (!Enter()) return false;
  ++pos_;
  return true;
}

bool JsonReader::NextMember(std::string_view* key) {
  if (!ok()) return false;
  SkipWhitespace();
  if (pos_ >= text_.size()) return Fail("unterminated object");
  char& first = first_[static_cast<size_t>(depth_)];
  if (text_[pos_] == '}' && first) {
    ++pos_;
    --depth_;
    return false;
  }
  if (!first) {
    if (text_[pos_] == '}') {
      ++pos_;
      --depth_;
      return false;
    }
    if (text_[pos_] != ',') return Fail("expected ',' or '}'");
    ++pos_;
    SkipWhitespace();
  }
  first = 0;
  if (pos_ >= text_.size() || text_[pos_] != '"') return Fail("expected a member name");
  if (!ReadStringInto(key, &key_scratch_)) return false;
  return Expect(':');
}

bool JsonReader::NextElement() {
  if (!ok()) return false;
  SkipWhitespace();
  if (pos_ >= text_.size()) return Fail("unterminated array");
  char& first = first_[static_cast<size_t>(depth_)];
  if (text_[pos_] == ']') {
    ++pos_;
    --depth_;
    return false;
  }
  if (!first) {
    if (text_[pos_] != ',') return Fail("expected ',' or ']'");
    ++pos_;
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == ']') return Fail("trailing comma");
  }
  first = 0;
  return true;
}

bool JsonReader::Skip() {
  std::string_view ignored;
  bool b = false;
  switch (Peek()) {
    case Kind::kNull:
      return ReadNull();
    case Kind::kBool:
      return ReadBool(&b);
    case Kind::kNumber:
      return ReadNumber(&ignored);
    case Kind::kString:
      return ReadString(&ignored);
    case Kind::kArray:
      if (!BeginArray()) return false;
      while (NextElement()) {
        if (!Skip()) return false;
      }
      return ok();
    case Kind::kObject:
      if (!BeginObject()) return false;
      while (NextMember(&ignored)) {
        if (!Skip()) return false;
      }
      return ok();
    case Kind::kInvalid:
      break;
  }
  return Fail(pos_ >= text_.size() ? "unexpected end, expected a value" : "expected a value");
}

bool JsonReader::Copy(std::string* out) {
  std::string_view text;
  bool b = false;
  switch (Peek()) {
    case Kind::kNull:
      if (!ReadNull()) return false;
      out->append("null");
      return true;
    case Kind::kBool:
      if (!ReadBool(&b)) return false;
      AppendBool(b, out);
      return true;
    case Kind::kNumber:
      if (!ReadNumber(&text)) return false;
      out->append(text);
      return true;
    case Kind::kString:
      if (!ReadString(&text)) return false;
      AppendString(text, out);
      return true;
    case Kind::kArray: {
      if (!BeginArray()) return false;
      out->push_back('[');
      bool first = true;
      while (NextElement()) {
        if (!first) out->push_back(',');
        first = false;
        if (!Copy(out)) return false;
      }
      out->push_back(']');
      return ok();
    }
    case Kind::kObject: {
      if (!BeginObject()) return false;
      out->push_back('{');
      bool first = true;
      while (NextMember(&text)) {
        if (!first) out->push_back(',');
        first = false;
        AppendString(text, out);
        out->push_back(':');
        if (!Copy(out)) return false;
      }
      out->push_back('}');
      return ok();
    }
    case Kind::kInvalid:
      break;
  }
  return Fail(pos_ >= text_.size() ? "unexpected end, expected a value" : "expected a value");
}

bool JsonReader::AtEnd() {
  SkipWhitespace();
  return pos_ >= text_.size();
}

}  // namespace jitsym::proto::json
