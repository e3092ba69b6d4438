#include "daemon/index/name_table.h"

#include <algorithm>
#include <cstring>

namespace jitsym::index {

uint32_t NameTable::Intern(std::string_view name) {
  if (name.size() > kMaxNameLength) name = name.substr(0, kMaxNameLength);
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  if (blocks_.empty() || block_size_ - block_used_ < name.size()) {
    // Blocks double from 4 KiB to 1 MiB; a name larger than that gets a block of its own.
    size_t next = blocks_.empty() ? 4096 : std::min<size_t>(block_size_ * 2, 1 << 20);
    block_size_ = std::max(next, name.size());
    blocks_.push_back(std::make_unique<char[]>(block_size_));
    block_used_ = 0;
    arena_bytes_ += block_size_;
  }
  char* dst = blocks_.back().get() + block_used_;
  if (!name.empty()) std::memcpy(dst, name.data(), name.size());
  block_used_ += name.size();
  name_bytes_ += name.size();
  std::string_view stored(dst, name.size());
  const auto id = static_cast<uint32_t>(views_.Append(stored));
  ids_.emplace(stored, id);
  return id;
}

size_t NameTable::memory_bytes() const {
  // unordered_map: one node (key, value, next pointer, cached hash) per name plus the buckets.
  const size_t map_bytes = ids_.size() * (sizeof(std::string_view) + 4 + 2 * sizeof(void*)) +
                           ids_.bucket_count() * sizeof(void*);
  return arena_bytes_ + views_.memory_bytes() + map_bytes;
}

}  // namespace jitsym::index
