#include "daemon/native/string_pool.h"

#include <cstring>

#include "daemon/native/table_arena.h"

namespace jitsym::native {

std::span<const std::string_view> StringPool::InternAll(const std::vector<std::string>& texts) {
  std::vector<std::string_view> views;
  views.reserve(texts.size());
  std::lock_guard lock(mu_);
  for (const std::string& text : texts) views.push_back(InternLocked(text));
  return arena_->Copy(views);
}

std::string_view StringPool::Intern(std::string_view text) {
  std::lock_guard lock(mu_);
  return InternLocked(text);
}

size_t StringPool::Bytes() const {
  std::lock_guard lock(mu_);
  // The set's nodes (a view and a hash each, plus the allocator's header) and its buckets.
  return set_.size() * (sizeof(std::string_view) + 3 * sizeof(void*)) +
         set_.bucket_count() * sizeof(void*);
}

std::string_view StringPool::InternLocked(std::string_view text) {
  if (auto it = set_.find(text); it != set_.end()) return *it;
  char* at = static_cast<char*>(arena_->Allocate(text.size(), 1));
  if (!text.empty()) std::memcpy(at, text.data(), text.size());
  return *set_.insert(std::string_view(at, text.size())).first;
}

}  // namespace jitsym::native
