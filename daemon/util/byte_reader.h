// A bounds-checked reader over a byte span with a byte order chosen once.
// Every read either succeeds or leaves the reader failed (sticky), so a parser checks ok() once
// after a group of reads instead of after each. Values are copied with memcpy, never cast in place.
#ifndef JITSYM_DAEMON_UTIL_BYTE_READER_H_
#define JITSYM_DAEMON_UTIL_BYTE_READER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

namespace jitsym {

template <typename T>
constexpr T ByteSwap(T v) {
  if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(static_cast<uint16_t>(v)));
  if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(static_cast<uint32_t>(v)));
  if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)));
  return v;
}

// a + b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> data, bool swap) : data_(data), swap_(swap) {}

  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return ok_ ? data_.size() - pos_ : 0; }

  uint32_t U32() { return Read<uint32_t>(); }
  uint64_t U64() { return Read<uint64_t>(); }

  void Skip(size_t n) {
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return;
    }
    pos_ += n;
  }

  // A NUL-terminated string within the remaining bytes; fails if there is no NUL.
  std::string_view CString() {
    if (!ok_) return {};
    const void* nul = std::memchr(data_.data() + pos_, 0, data_.size() - pos_);
    if (nul == nullptr) {
      ok_ = false;
      return {};
    }
    size_t len = static_cast<const uint8_t*>(nul) - (data_.data() + pos_);
    std::string_view s(reinterpret_cast<const char*>(data_.data() + pos_), len);
    pos_ += len + 1;
    return s;
  }

  template <typename T>
  T Read() {
    if (!ok_ || sizeof(T) > data_.size() - pos_) {
      ok_ = false;
      return T{};
    }
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return swap_ ? ByteSwap(v) : v;
  }

 private:
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool swap_;
  bool ok_ = true;
};

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_BYTE_READER_H_
