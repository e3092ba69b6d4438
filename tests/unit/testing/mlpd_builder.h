// Builds Mono log profiler files (*.mlpd) for tests and benchmarks: a header, then buffers of
// events written field by field with the same LEB128 encodings as mono's log.c.
#ifndef JITSYM_TESTS_UNIT_TESTING_MLPD_BUILDER_H_
#define JITSYM_TESTS_UNIT_TESTING_MLPD_BUILDER_H_

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::testing {

inline void PutUleb(std::vector<uint8_t>& out, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    out.push_back(b);
  } while (v != 0);
}

inline void PutSleb(std::vector<uint8_t>& out, int64_t v) {
  for (;;) {
    const uint8_t b = v & 0x7f;
    v >>= 7;  // arithmetic
    if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
      out.push_back(b);
      return;
    }
    out.push_back(b | 0x80);
  }
}

inline void PutLe(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// One buffer's events. Pointers are written relative to ptr_base, methods relative to the
// previous method (starting at method_base), times relative to the previous time.
class MlpdBuffer {
 public:
  MlpdBuffer(uint64_t time_base, uint64_t ptr_base, uint64_t method_base = 0x5000000,
             uint64_t thread_id = 0x7001)
      : time_base_(time_base),
        ptr_base_(ptr_base),
        method_base_(method_base),
        last_method_(method_base),
        thread_id_(thread_id),
        last_time_(time_base) {}

  // Event byte and time delta.
  MlpdBuffer& Event(uint8_t type, uint8_t ext, uint64_t time) {
    events_.push_back(static_cast<uint8_t>(ext | type));
    PutUleb(events_, time - last_time_);  // wraps like mono's writer
    last_time_ = time;
    return *this;
  }
  MlpdBuffer& Byte(uint8_t b) {
    events_.push_back(b);
    return *this;
  }
  MlpdBuffer& Uleb(uint64_t v) {
    PutUleb(events_, v);
    return *this;
  }
  MlpdBuffer& Sleb(int64_t v) {
    PutSleb(events_, v);
    return *this;
  }
  MlpdBuffer& Ptr(uint64_t p) { return Sleb(static_cast<int64_t>(p - ptr_base_)); }
  MlpdBuffer& Method(uint64_t m) {
    Sleb(static_cast<int64_t>(m - last_method_));
    last_method_ = m;
    return *this;
  }
  MlpdBuffer& Str(std::string_view s) {
    events_.insert(events_.end(), s.begin(), s.end());
    events_.push_back(0);
    return *this;
  }
  MlpdBuffer& Raw(std::vector<uint8_t> bytes) {
    events_.insert(events_.end(), bytes.begin(), bytes.end());
    return *this;
  }

  // Common events.
  MlpdBuffer& Jit(uint64_t time, uint64_t method, uint64_t code, uint64_t size,
                  std::string_view name) {
    return Event(3, 0x40, time).Method(method).Ptr(code).Uleb(size).Str(name);
  }
  // `name` is written for specific trampolines only (type 5 from data version 14, 6 before).
  MlpdBuffer& Helper(uint64_t time, uint8_t type, uint64_t code, uint64_t size,
                     std::optional<std::string_view> name = std::nullopt) {
    Event(8, 0x10, time).Byte(type).Ptr(code).Uleb(size);
    if (name) Str(*name);
    return *this;
  }
  MlpdBuffer& Usym(uint64_t time, uint64_t addr, uint64_t size, std::string_view name) {
    return Event(7, 0x10, time).Ptr(addr).Uleb(size).Str(name);
  }
  MlpdBuffer& ImageLoad(uint64_t time, uint64_t image, std::string_view name,
                        std::string_view mvid) {
    return Event(2, 0x20, time).Byte(2).Ptr(image).Str(name).Str(mvid);
  }

  size_t size() const { return events_.size(); }
  void AppendTo(std::vector<uint8_t>& out, uint32_t id = 0x4D504C01) const {
    PutLe(out, id, 4);
    PutLe(out, events_.size(), 4);
    PutLe(out, time_base_, 8);
    PutLe(out, ptr_base_, 8);
    PutLe(out, 0x1000, 8);  // obj_base
    PutLe(out, thread_id_, 8);
    PutLe(out, method_base_, 8);
    out.insert(out.end(), events_.begin(), events_.end());
  }

 private:
  uint64_t time_base_, ptr_base_, method_base_, last_method_, thread_id_, last_time_;
  std::vector<uint8_t> events_;
};

class MlpdBuilder {
 public:
  static constexpr uint64_t kStartupNs = 1000000;

  explicit MlpdBuilder(uint8_t data_version = 17, uint32_t pid = 4242, uint8_t major = 3,
                       uint8_t ptr_size = 8) {
    PutLe(bytes_, 0x4D505A01, 4);
    bytes_.push_back(major);
    bytes_.push_back(0);
    bytes_.push_back(data_version);
    bytes_.push_back(ptr_size);
    PutLe(bytes_, 1700000000000ull, 8);  // startup, ms since the epoch
    if (major >= 3) PutLe(bytes_, kStartupNs, 8);
    PutLe(bytes_, 32, 4);  // timer overhead
    PutLe(bytes_, 0, 4);   // flags
    PutLe(bytes_, pid, 4);
    PutLe(bytes_, 0, 2);  // port
    for (std::string_view s : {"log:output=x.mlpd", "x86-64", "linux"}) {
      PutLe(bytes_, s.size() + 1, 4);
      bytes_.insert(bytes_.end(), s.begin(), s.end());
      bytes_.push_back(0);
    }
  }

  MlpdBuilder& Add(const MlpdBuffer& buffer, uint32_t id = 0x4D504C01) {
    buffer.AppendTo(bytes_, id);
    return *this;
  }
  // A buffer header claiming `len` event bytes, with nothing after it.
  MlpdBuilder& BufferHeaderOnly(uint32_t len) {
    PutLe(bytes_, 0x4D504C01, 4);
    PutLe(bytes_, len, 4);
    for (int i = 0; i < 5; ++i) PutLe(bytes_, 0, 8);
    return *this;
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// The bytes as one gzip member (what mono's `zip` option and `|gzip` write).
inline std::vector<uint8_t> Gzip(const std::vector<uint8_t>& in, int level = 6) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::vector<uint8_t> out(deflateBound(&zs, in.size()) + 64);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace jitsym::testing

#endif  // JITSYM_TESTS_UNIT_TESTING_MLPD_BUILDER_H_
