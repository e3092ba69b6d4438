// Small JSON output primitives for the protocol encoders. The encoders write punctuation and
// member names themselves (the schema is fixed), so only values need helpers. Everything here
// appends to a std::string and never throws except std::bad_alloc.
#ifndef JITSYM_PROTO_JSON_WRITER_H_
#define JITSYM_PROTO_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace jitsym::proto::json {

// Appends `value` as a quoted JSON string. Control characters are escaped and bytes that are
// not well-formed UTF-8 are replaced by U+FFFD, so the output is always valid JSON even when a
// JIT wrote garbage into a symbol name.
void AppendString(std::string_view value, std::string* out);
void AppendUint(uint64_t value, std::string* out);
void AppendInt(int64_t value, std::string* out);
// "0x7f00" with the quotes.
void AppendHexString(uint64_t value, std::string* out);
inline void AppendBool(bool value, std::string* out) { out->append(value ? "true" : "false"); }

// Number of bytes of the well-formed UTF-8 sequence at [p, end), 0 if it is not one (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF). p < end and *p >= 0x80.
size_t Utf8SequenceLength(const unsigned char* p, const unsigned char* end);
// True when every byte of value belongs to a well-formed UTF-8 sequence (AppendString copies
// such text unchanged, apart from escapes).
bool IsWellFormedUtf8(std::string_view value);
// Appends value unquoted and unescaped, with the bytes that are not well-formed UTF-8 replaced
// by U+FFFD exactly as AppendString replaces them: the binary answer encoding sends the same
// text JSON would.
void AppendWellFormedUtf8(std::string_view value, std::string* out);
// Appends the UTF-8 encoding of a code point (<= 0x10FFFF, not a surrogate).
void AppendUtf8(uint32_t code_point, std::string* out);

}  // namespace jitsym::proto::json

#endif  // JITSYM_PROTO_JSON_WRITER_H_
