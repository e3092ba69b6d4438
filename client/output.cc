#include "client/output.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace jitsym::client {
namespace {

bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20; }

// Whether text holds a byte below 0x20; 16 bytes at a time (names are long and rarely dirty).
bool HasControl(std::string_view text) {
  const char* p = text.data();
  const char* end = p + text.size();
#ifdef __SSE2__
  const __m128i limit = _mm_set1_epi8(0x1f);
  for (; end - p >= 16; p += 16) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // chunk <= 0x1f (unsigned) exactly when min(chunk, 0x1f) == chunk.
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(chunk, limit), chunk)) != 0) return true;
  }
#endif
  for (; p < end; ++p) {
    if (IsControl(*p)) return true;
  }
  return false;
}

}  // namespace

void AppendClean(std::string_view text, std::string* out) {
  const size_t start = out->size();
  out->append(text);
  if (!HasControl(text)) return;
  for (size_t i = start; i < out->size(); ++i) {
    if (IsControl((*out)[i])) (*out)[i] = ' ';
  }
}

Output::Output(std::FILE* file) : file_(file) { buffer_.reserve(kFlushBytes + 64 * 1024); }

Output::~Output() { Flush(); }

bool Output::Flush() {
  bool ok = true;
  if (!buffer_.empty()) {
    ok = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size();
    buffer_.clear();
  }
  return std::fflush(file_) == 0 && ok;
}

}  // namespace jitsym::client
