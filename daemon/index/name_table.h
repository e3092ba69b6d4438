// Interned names: each distinct name is stored once per table and referred to by a 32-bit id.
// Intern() is for the single writer; Get() may be called by readers for ids published to them.
#ifndef JITSYM_DAEMON_INDEX_NAME_TABLE_H_
#define JITSYM_DAEMON_INDEX_NAME_TABLE_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/index/append_store.h"

namespace jitsym::index {

class NameTable {
 public:
  // Names longer than this are cut (a hostile file must not make one name cost megabytes).
  static constexpr size_t kMaxNameLength = 16 * 1024;

  uint32_t Intern(std::string_view name);
  std::string_view Get(uint32_t id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  size_t name_bytes() const { return name_bytes_; }
  // Name bytes plus the table's own overhead (views, hash map).
  size_t memory_bytes() const;

 private:
  AppendStore<std::string_view> views_;
  std::vector<std::unique_ptr<char[]>> blocks_;  // arena; blocks never move or shrink
  size_t block_used_ = 0;
  size_t block_size_ = 0;
  size_t arena_bytes_ = 0;
  size_t name_bytes_ = 0;
  std::unordered_map<std::string_view, uint32_t> ids_;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_NAME_TABLE_H_
