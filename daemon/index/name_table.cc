#include "daemon/index/name_table.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace jitsym::index {

uint32_t NameTable::Hash(std::string_view name) {
  if (name.size() > kMaxNameLength) name = name.substr(0, kMaxNameLength);
  const uint64_t h = std::hash<std::string_view>{}(name);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

void NameTable::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
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
    if (block_count_ == kMaxBlocks) throw std::length_error("name table full");
    block_size_ = std::min<size_t>(size_t{4096} << block_count_, size_t{64} << 20);
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
