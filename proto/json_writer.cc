#include "proto/json_writer.h"

#include <array>
#include <charconv>
#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace jitsym::proto::json {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// ASCII bytes that can be copied into a JSON string as they are.
constexpr auto kPlain = [] {
  std::array<bool, 256> table{};
  for (int c = 0x20; c < 0x80; ++c) table[c] = true;
  table['"'] = false;
  table['\\'] = false;
  return table;
}();

void AppendEscape(unsigned char c, std::string* out) {
  switch (c) {
    case '"':
      out->append("\\\"");
      return;
    case '\\':
      out->append("\\\\");
      return;
    case '\b':
      out->append("\\b");
      return;
    case '\f':
      out->append("\\f");
      return;
    case '\n':
      out->append("\\n");
      return;
    case '\r':
      out->append("\\r");
      return;
    case '\t':
      out->append("\\t");
      return;
    default:
      char buf[6] = {'\\', 'u', '0', '0', kHexDigits[c >> 4], kHexDigits[c & 0xF]};
      out->append(buf, sizeof(buf));
  }
}

// The first byte in [p, end) that is not kPlain, or end. 16 bytes at a time with SSE2.
const unsigned char* SkipPlain(const unsigned char* p, const unsigned char* end) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i control_max = _mm_set1_epi8(0x1f);
  while (end - p >= 16) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i special =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
                     _mm_cmpeq_epi8(_mm_min_epu8(chunk, control_max), chunk));
    // movemask also has the top bit of every byte >= 0x80.
    const int mask = _mm_movemask_epi8(special) | _mm_movemask_epi8(chunk);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p < end && kPlain[*p]) ++p;
  return p;
}

}  // namespace

size_t Utf8SequenceLength(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = p[0];
  const size_t avail = static_cast<size_t>(end - p);
  if (c >= 0xC2 && c <= 0xDF) {
    return avail >= 2 && IsContinuation(p[1]) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (avail < 3 || !IsContinuation(p[1]) || !IsContinuation(p[2])) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;  // overlong
    if (c == 0xED && p[1] > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (avail < 4 || !IsContinuation(p[1]) || !IsContinuation(p[2]) || !IsContinuation(p[3])) {
      return 0;
    }
    if (c == 0xF0 && p[1] < 0x90) return 0;  // overlong
    if (c == 0xF4 && p[1] > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;  // stray continuation byte, C0/C1 (overlong) or F5..FF
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void AppendString(std::string_view value, std::string* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(value.data());
  const auto* end = p + value.size();
  const auto* run = p;  // start of the bytes that can be copied unchanged
  out->push_back('"');
  while (p < end) {
    p = SkipPlain(p, end);
    if (p == end) break;
    const unsigned char c = *p;
    if (c >= 0x80) {
      if (size_t n = Utf8SequenceLength(p, end); n != 0) {
        p += n;
        continue;
      }
    }
    out->append(reinterpret_cast<const char*>(run), p - run);
    if (c >= 0x80) {
      out->append(kReplacementChar);
    } else {
      AppendEscape(c, out);
    }
    run = ++p;
  }
  out->append(reinterpret_cast<const char*>(run), p - run);
  out->push_back('"');
}

bool IsWellFormedUtf8(std::string_view value) {
  const auto* p = reinterpret_cast<const unsigned char*>(value.data());
  const auto* end = p + value.size();
  while (p < end) {
    // Names and paths are mostly ASCII: 32 bytes at a time, then eight.
#ifdef __SSE2__
    while (end - p >= 32) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
      if (_mm_movemask_epi8(_mm_or_si128(a, b)) != 0) break;
      p += 32;
    }
#endif
    while (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, sizeof(word));
      if (word & 0x8080808080808080ull) break;
      p += 8;
    }
    if (p == end) break;
    if (*p < 0x80) {
      ++p;
      continue;
    }
    const size_t n = Utf8SequenceLength(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

void AppendWellFormedUtf8(std::string_view value, std::string* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(value.data());
  const auto* end = p + value.size();
  const auto* run = p;
  while (p < end) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    if (size_t n = Utf8SequenceLength(p, end); n != 0) {
      p += n;
      continue;
    }
    out->append(reinterpret_cast<const char*>(run), p - run);
    out->append(kReplacementChar);
    run = ++p;
  }
  out->append(reinterpret_cast<const char*>(run), p - run);
}

void AppendUint(uint64_t value, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, end);
}

void AppendInt(int64_t value, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, end);
}

void AppendHexString(uint64_t value, std::string* out) {
  char buf[20];
  char* p = buf + sizeof(buf);
  *--p = '"';
  do {
    *--p = kHexDigits[value & 0xF];
    value >>= 4;
  } while (value != 0);
  *--p = 'x';
  *--p = '0';
  *--p = '"';
  out->append(p, buf + sizeof(buf) - p);
}

}  // namespace jitsym::proto::json
