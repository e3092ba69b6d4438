// Builds jitdump files in either byte order, record by record, for tests and benchmarks.
#ifndef JITSYM_TESTS_UNIT_TESTING_JITDUMP_BUILDER_H_
#define JITSYM_TESTS_UNIT_TESTING_JITDUMP_BUILDER_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::testing {

class JitdumpBuilder {
 public:
  struct Entry {
    uint64_t addr;
    uint32_t line;
    uint32_t discrim;
    std::string file;
  };

  explicit JitdumpBuilder(bool big_endian = false, uint32_t header_size = 40, uint32_t pid = 4242,
                          uint32_t pad1 = 0, uint64_t flags = 0)
      : swap_(big_endian != (std::endian::native == std::endian::big)) {
    U32(0x4A695444);
    U32(1);
    U32(header_size);
    U32(62);  // EM_X86_64
    U32(pad1);
    U32(pid);
    U64(123456789);
    U64(flags);
    for (uint32_t i = 40; i < header_size; ++i) bytes_.push_back(0xAB);
  }

  JitdumpBuilder& Load(uint64_t ts, uint64_t addr, uint64_t size, std::string_view name,
                       uint64_t index, uint32_t padding = 0) {
    const uint32_t total = 56 + name.size() + 1 + padding + size;
    Prefix(0, total, ts);
    U32(4242);
    U32(4243);
    U64(addr);
    U64(addr);
    U64(size);
    U64(index);
    Bytes(name);
    bytes_.push_back(0);
    for (uint32_t i = 0; i < padding; ++i) bytes_.push_back(0);
    for (uint64_t i = 0; i < size; ++i) bytes_.push_back(0xCC);
    return *this;
  }
  JitdumpBuilder& Move(uint64_t ts, uint64_t old_addr, uint64_t new_addr, uint64_t size,
                       uint64_t index) {
    Prefix(1, 64, ts);
    U32(4242);
    U32(4243);
    U64(new_addr);
    U64(old_addr);
    U64(new_addr);
    U64(size);
    U64(index);
    return *this;
  }
  JitdumpBuilder& Debug(uint64_t ts, uint64_t code_addr, const std::vector<Entry>& entries) {
    uint32_t total = 32;
    for (const Entry& e : entries) total += 16 + e.file.size() + 1;
    Prefix(2, total, ts);
    U64(code_addr);
    U64(entries.size());
    for (const Entry& e : entries) {
      U64(e.addr);
      U32(e.line);
      U32(e.discrim);
      Bytes(e.file);
      bytes_.push_back(0);
    }
    return *this;
  }
  JitdumpBuilder& Close(uint64_t ts) {
    Prefix(3, 16, ts);
    return *this;
  }
  JitdumpBuilder& Unwind(uint64_t ts, uint64_t data_size, uint64_t hdr_size) {
    Prefix(4, 40 + data_size, ts);
    U64(data_size);
    U64(hdr_size);
    U64(data_size);
    for (uint64_t i = 0; i < data_size; ++i) bytes_.push_back(0x11);
    return *this;
  }
  JitdumpBuilder& Unknown(uint32_t id, uint32_t payload, uint64_t ts) {
    Prefix(id, 16 + payload, ts);
    for (uint32_t i = 0; i < payload; ++i) bytes_.push_back(0x22);
    return *this;
  }
  JitdumpBuilder& Raw(std::string_view raw) {
    Bytes(raw);
    return *this;
  }
  JitdumpBuilder& Prefix(uint32_t id, uint32_t total, uint64_t ts) {
    U32(id);
    U32(total);
    U64(ts);
    return *this;
  }
  JitdumpBuilder& U32(uint32_t v) {
    if (swap_) v = __builtin_bswap32(v);
    Append(&v, 4);
    return *this;
  }
  JitdumpBuilder& U64(uint64_t v) {
    if (swap_) v = __builtin_bswap64(v);
    Append(&v, 8);
    return *this;
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  void Append(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void Bytes(std::string_view s) { bytes_.insert(bytes_.end(), s.begin(), s.end()); }

  bool swap_;
  std::vector<uint8_t> bytes_;
};

}  // namespace jitsym::testing

#endif  // JITSYM_TESTS_UNIT_TESTING_JITDUMP_BUILDER_H_
