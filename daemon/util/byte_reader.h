// The one bounds-checked reader every binary parser uses (jitdump, mlpd, the gperftools CPU
// profile), modelled on LLVM's DataExtractor with a Cursor:
//
//  - byte order is decided once, when the reader is made (from the format's magic), and every
//    value comes back in host order;
//  - every read is bounds-checked; a read that does not fit fails the reader for good (sticky):
//    ok() turns false, the cursor moves to the end and every later read returns 0 / empty. A
//    parser reads a group of fields and checks ok() once, and no read can run past the end
//    whatever the input says;
//  - values are copied with memcpy, never cast in place; lengths from the input are compared
//    with what is left, never added to a position (no overflow).
//
// Header-only and in proto/ because proto/ is the only code the daemon and the client share
// (the client parses gperftools profiles); it depends on nothing but the standard library.
// The LEB128 reads (mlpd) and the fixed-width reads are on parsers' hot paths: keep them inline
// and free of per-byte bounds checks where the length is known to fit.
#ifndef JITSYM_DAEMON_UTIL_BYTE_READER_H_
#define JITSYM_DAEMON_UTIL_BYTE_READER_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

namespace jitsym {

template <typename T>
constexpr T ByteSwap(T v) {
  if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(static_cast<uint16_t>(v)));
  if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(static_cast<uint32_t>(v)));
  if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)));
  return v;
}

// a + b, or nullopt on overflow: for offsets and sizes computed from input.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
// a * b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

enum class ByteOrder { kLittle, kBig };

inline constexpr ByteOrder kHostByteOrder =
    std::endian::native == std::endian::big ? ByteOrder::kBig : ByteOrder::kLittle;

class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> data, ByteOrder order)
      : begin_(data.data()),
        p_(begin_),
        end_(begin_ + data.size()),
        swap_(order != kHostByteOrder) {}
  ByteReader(std::string_view data, ByteOrder order)
      : ByteReader(std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()), order) {}

  bool ok() const { return ok_; }
  bool at_end() const { return p_ >= end_; }
  // Bytes read from the start (the input's size once failed).
  size_t pos() const { return static_cast<size_t>(p_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* cursor() const { return p_; }
  bool swaps() const { return swap_; }

  uint8_t U8() {
    if (p_ < end_) return *p_++;
    return static_cast<uint8_t>(Fail());
  }
  uint16_t U16() { return Read<uint16_t>(); }
  uint32_t U32() { return Read<uint32_t>(); }
  uint64_t U64() { return Read<uint64_t>(); }

  // An integer of sizeof(T) bytes in the reader's byte order.
  template <typename T>
  T Read() {
    static_assert(std::is_integral_v<T>);
    if (sizeof(T) > remaining()) return static_cast<T>(Fail());
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return swap_ ? ByteSwap(v) : v;
  }

  // An unsigned value of `bytes` bytes (4 or 8: a machine word of the process that wrote the
  // file; other sizes 1 to 8 work too), in the reader's byte order.
  uint64_t Word(size_t bytes) {
    if (bytes == 8) return U64();
    if (bytes == 4) return U32();
    if (bytes == 0 || bytes > 8 || bytes > remaining()) return Fail();
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) {
      v = (v << 8) | p_[swap_ == (kHostByteOrder == ByteOrder::kLittle) ? i : bytes - 1 - i];
    }
    p_ += bytes;
    return v;
  }

  // Unsigned and signed LEB128 (DWARF; mono's encoders in log.c). A value longer than ten
  // bytes (the longest 64-bit one) is an error. With ten bytes or more left, no bounds check
  // per byte; near the end, byte by byte.
  uint64_t Uleb() {
    if (end_ - p_ >= kMaxLeb) {
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
      return Fail();
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
      return static_cast<int64_t>(Fail());
    }
    return SlebSlow();
  }

  // A NUL-terminated string within the remaining bytes (the NUL is consumed, not returned);
  // fails if there is no NUL.
  std::string_view CString() {
    const void* nul = p_ < end_ ? std::memchr(p_, 0, static_cast<size_t>(end_ - p_)) : nullptr;
    if (nul == nullptr) {
      Fail();
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p_), static_cast<const uint8_t*>(nul) - p_);
    p_ = static_cast<const uint8_t*>(nul) + 1;
    return s;
  }

  // The next n bytes as they are.
  std::span<const uint8_t> Bytes(size_t n) {
    if (n > remaining()) {
      Fail();
      return {};
    }
    std::span<const uint8_t> s(p_, n);
    p_ += n;
    return s;
  }

  void Skip(size_t n) {
    if (n > remaining()) {
      Fail();
      return;
    }
    p_ += n;
  }

  // Fails the reader (for a parser that finds a value it cannot accept); returns 0.
  uint64_t Fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }

 private:
  static constexpr unsigned kMaxLeb = 10;  // a 64-bit value takes at most 10 bytes

  uint64_t UlebSlow() {
    uint64_t v = 0;
    for (unsigned shift = 0; p_ < end_ && shift < 64; shift += 7) {
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return Fail();
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
    return static_cast<int64_t>(Fail());
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  bool swap_;
  bool ok_ = true;
};

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_BYTE_READER_H_
