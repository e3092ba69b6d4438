#include "daemon/index/name_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace jitsym::index {

namespace {

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// 64x64 -> 128-bit multiply, folded: the mixing step of wyhash-style hashes.
uint64_t Mix(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

}  // namespace

// Names are interned by the million (one per perf map line): a hash that takes 16 bytes per
// step with one multiply is a third of the cost of std::hash's byte-oriented Murmur here.
// The table keeps 32 bits of it and probes linearly, so it needs good low bits, which the
// folded multiply gives.
uint32_t NameTable::Hash(std::string_view name) {
  if (name.size() > kMaxNameLength) name = name.substr(0, kMaxNameLength);
  constexpr uint64_t k0 = 0xa0761d6478bd642fULL, k1 = 0xe7037ed1a0b428dbULL;
  const char* p = name.data();
  size_t n = name.size();
  uint64_t h = k0 ^ Mix(n ^ k1, k0);
  for (; n >= 16; p += 16, n -= 16) h = Mix(Load64(p) ^ k1, Load64(p + 8) ^ h);
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = Load64(p);
    b = Load64(p + n - 8);
  } else if (n > 0) {
    std::memcpy(&a, p, n);  // zero-padded; the length is mixed in above
  }
  h = Mix(a ^ k1, b ^ h);
  h = Mix(h ^ k0, k1);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

void NameTable::Grow() { Rehash(slots_.empty() ? 1024 : slots_.size() * 2); }

void NameTable::Reserve(size_t names) {
  // At most half full, as Intern keeps it; capped so that a wrong hint costs little.
  constexpr size_t kMaxReserved = size_t{1} << 24;
  const size_t want = std::bit_ceil(std::min(2 * names + 2, kMaxReserved));
  if (want > slots_.size()) Rehash(want);
}

void NameTable::Rehash(size_t slots) {
  HugeVector<Slot> old = std::move(slots_);
  slots_ = HugeVector<Slot>();  // moved-from: valid but unspecified
  slots_.assign(slots, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.handle == kEmpty) continue;
    size_t i = s.hash & mask;
    while (slots_[i].handle != kEmpty) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

uint32_t NameTable::Intern(std::string_view name, uint32_t hash) {
  if (name.size() > kMaxNameLength) name = name.substr(0, kMaxNameLength);
  if (2 * (count_ + 1) > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  for (; slots_[i].handle != kEmpty; i = (i + 1) & mask) {
    if (slots_[i].hash == hash && Get(slots_[i].handle) == name) return slots_[i].handle;
  }
  const size_t need = name.size() + 2;
  if (block_count_ == 0 || block_size_ - block_used_ < need) {
    if (block_count_ == max_blocks_) {
      throw std::length_error("name table full (over 1 GiB of symbol names in one file)");
    }
    // A block grows geometrically but always holds at least the name being stored: a name
    // longer than the block it would start (one over 4 KiB in the first block) must not be
    // written past its end.
    block_size_ = std::max(std::min<size_t>(size_t{4096} << block_count_, kMaxBlockSize), need);
    // Not zeroed: every byte is written before a handle to it exists, and the pages of a
    // 64 MiB block are faulted in as names fill it, not all at once.
    blocks_[block_count_++] = std::unique_ptr<char[]>(new char[block_size_]);
    block_used_ = 0;
    arena_bytes_ += block_size_;
  }
  char* dst = blocks_[block_count_ - 1].get() + block_used_;
  const auto len = static_cast<uint16_t>(name.size());
  std::memcpy(dst, &len, 2);
  if (!name.empty()) std::memcpy(dst + 2, name.data(), name.size());
  const uint32_t handle =
      (static_cast<uint32_t>(block_count_ - 1) << kOffsetBits) | static_cast<uint32_t>(block_used_);
  block_used_ += need;
  name_bytes_ += name.size();
  slots_[i] = Slot{hash, handle};
  ++count_;
  return handle;
}

size_t NameTable::memory_bytes() const { return arena_bytes_ + slots_.capacity() * sizeof(Slot); }

}  // namespace jitsym::index
