#include "daemon/index/name_table.h"

#include <algorithm>
#include <stdexcept>

namespace jitsym::index {

uint32_t NameTable::Intern(std::string_view name) {
  if (name.size() > kMaxNameLength) name = name.substr(0, kMaxNameLength);
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  const size_t need = name.size() + 2;
  if (block_count_ == 0 || block_size_ - block_used_ < need) {
    if (block_count_ == kMaxBlocks) throw std::length_error("name table full");
    block_size_ = std::min<size_t>(size_t{4096} << block_count_, size_t{64} << 20);
    blocks_[block_count_++] = std::make_unique<char[]>(block_size_);
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
  ids_.emplace(std::string_view(dst + 2, name.size()), handle);
  return handle;
}

size_t NameTable::memory_bytes() const {
  // unordered_map: one node (key, value, next pointer, cached hash) per name plus the buckets.
  const size_t map_bytes = ids_.size() * (sizeof(std::string_view) + 4 + 2 * sizeof(void*)) +
                           ids_.bucket_count() * sizeof(void*);
  return arena_bytes_ + map_bytes;
}

}  // namespace jitsym::index
