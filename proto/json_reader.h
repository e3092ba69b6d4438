// A pull parser over one JSON text, for the protocol decoders.
//
// Why not nlohmann::json: decoding a lookup response into a DOM costs several allocations per
// result and dominates the client's time at a million addresses per second. This reader walks
// the text in place: strings without escapes come back as views into the input, numbers as their
// text. It is strict RFC 8259 on structure, bounds nesting depth (no recursion blow-up on
// "[[[[..."), never throws (except std::bad_alloc), and keeps the first error, sticky.
//
//   JsonReader r(text);
//   if (!r.BeginObject()) ...;
//   std::string_view key;
//   while (r.NextMember(&key)) { if (key == "pid") r.ReadNumber(&n); else r.Skip(); }
//   if (!r.ok() || !r.AtEnd()) ... r.error() ...;
//
// Bytes >= 0x80 inside strings are passed through unchecked; the writer sanitizes on output.
#ifndef JITSYM_PROTO_JSON_READER_H_
#define JITSYM_PROTO_JSON_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::proto::json {

class JsonReader {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject, kInvalid };
  static constexpr int kDefaultMaxDepth = 64;

  explicit JsonReader(std::string_view text, int max_depth = kDefaultMaxDepth);

  // The kind of the next value, judged by its first character (kInvalid at the end of the
  // input or on a character no value starts with; that does not set an error by itself).
  Kind Peek();

  bool ReadNull();
  bool ReadBool(bool* value);
  // The number's text, checked against the JSON grammar ("-0.5e3"); conversion is the caller's.
  bool ReadNumber(std::string_view* text);
  // The common case in one pass: when the next value is a non-negative integer without fraction
  // or exponent that fits in 64 bits, reads it into *value. Otherwise returns false, consuming
  // nothing and setting no error (ReadNumber then tells what it is).
  bool TryReadUint(uint64_t* value);
  // The decoded string. Points into the input when the string has no escapes, else into a
  // buffer valid until the next ReadString.
  bool ReadString(std::string_view* value);

  bool BeginObject();
  // True with *key set when another member follows (its value must be read or skipped next);
  // false at the closing '}' or on error (check ok()). *key stays valid until the next key.
  bool NextMember(std::string_view* key);
  bool BeginArray();
  // True when another element follows; false at the closing ']' or on error.
  bool NextElement();

  bool Skip();
  // Re-encodes one value compactly (no whitespace; strings re-escaped and sanitized).
  bool Copy(std::string* out);

  // True when only whitespace remains.
  bool AtEnd();

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t position() const { return pos_; }
  int depth() const { return depth_; }

 private:
  bool Fail(std::string_view what);
  // Inline fast path: protocol JSON is compact, so there is usually nothing to skip.
  void SkipWhitespace() {
    if (pos_ < text_.size() && static_cast<unsigned char>(text_[pos_]) > ' ') return;
    SkipWhitespaceSlow();
  }
  void SkipWhitespaceSlow();
  bool Expect(char c);
  bool ReadLiteral(std::string_view literal);
  bool ReadStringInto(std::string_view* value, std::string* scratch);
  bool ReadEscape(std::string* scratch);
  bool ReadHex4(uint32_t* value);
  bool Enter();

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  int max_depth_;
  std::vector<char> first_;  // per depth: the next member/element is the first one
  std::string key_scratch_;
  std::string value_scratch_;
  std::string error_;
};

}  // namespace jitsym::proto::json

#endif  // JITSYM_PROTO_JSON_READER_H_
