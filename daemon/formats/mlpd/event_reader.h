// The bounds-checked reader for the events of one mlpd buffer: bytes, LEB128 values (mono's
// encoders in log.c), NUL-terminated strings.
#ifndef JITSYM_DAEMON_FORMATS_MLPD_EVENT_READER_H_
#define JITSYM_DAEMON_FORMATS_MLPD_EVENT_READER_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace jitsym::mlpd {

// Every read is bounds-checked; a failed read makes ok() false and moves the cursor to the end,
// so every later read fails too, and fast paths need no error flag. With at least ten bytes left
// (the longest 64-bit LEB128), a value is read without a bounds check per byte; near the end of
// the buffer, byte by byte. A LEB128 value longer than ten bytes is an error.
class EventReader {
 public:
  explicit EventReader(std::span<const uint8_t> data) : p_(data.data()), end_(p_ + data.size()) {}

  bool ok() const { return ok_; }
  bool at_end() const { return p_ >= end_; }
  const uint8_t* cursor() const { return p_; }

  uint8_t Byte() {
    if (p_ < end_) return *p_++;
    return static_cast<uint8_t>(Bad());
  }
  uint64_t Uleb() {
    if (end_ - p_ >= kMaxLeb) {
      // At least 10 bytes left: no bounds check per byte.
      const uint8_t* p = p_;
      uint64_t v = 0;
      for (unsigned i = 0; i < kMaxLeb; ++i) {
        const uint8_t b = p[i];
        v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
          p_ = p + i + 1;
          return v;
        }
      }
      return Bad();
    }
    return UlebSlow();
  }
  int64_t Sleb() {
    if (end_ - p_ >= kMaxLeb) {
      const uint8_t* p = p_;
      uint64_t v = 0;
      for (unsigned i = 0; i < kMaxLeb; ++i) {
        const uint8_t b = p[i];
        v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
          p_ = p + i + 1;
          const unsigned bits = 7 * (i + 1);
          if ((b & 0x40) && bits < 64) v |= ~uint64_t{0} << bits;
          return static_cast<int64_t>(v);
        }
      }
      return static_cast<int64_t>(Bad());
    }
    return SlebSlow();
  }
  std::string_view String() {
    const void* nul = p_ < end_ ? std::memchr(p_, 0, end_ - p_) : nullptr;
    if (nul == nullptr) {
      Bad();
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p_), static_cast<const uint8_t*>(nul) - p_);
    p_ = static_cast<const uint8_t*>(nul) + 1;
    return s;
  }
  void Skip(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) {
      Bad();
      return;
    }
    p_ += n;
  }

 private:
  static constexpr unsigned kMaxLeb = 10;  // a 64-bit value takes at most 10 bytes

  uint64_t Bad() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  uint64_t UlebSlow() {
    uint64_t v = 0;
    for (unsigned shift = 0; p_ < end_ && shift < 64; shift += 7) {
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return Bad();
  }
  int64_t SlebSlow() {
    uint64_t v = 0;
    for (unsigned shift = 0; p_ < end_ && shift < 64; shift += 7) {
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        if ((b & 0x40) && shift + 7 < 64) v |= ~uint64_t{0} << (shift + 7);
        return static_cast<int64_t>(v);
      }
    }
    return static_cast<int64_t>(Bad());
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace jitsym::mlpd

#endif  // JITSYM_DAEMON_FORMATS_MLPD_EVENT_READER_H_
