#include "daemon/native/string_pool.h"

#include <cstring>

namespace jitsym::native {

void StringPool::InternAll(const std::vector<std::string>& texts,
                           std::vector<std::string_view>* out) {
  out->clear();
  out->reserve(texts.size());
  std::lock_guard lock(mu_);
  for (const std::string& text : texts) out->push_back(InternLocked(text));
}

std::string_view StringPool::Intern(std::string_view text) {
  std::lock_guard lock(mu_);
  return InternLocked(text);
}

size_t StringPool::Bytes() const {
  std::lock_guard lock(mu_);
  // The set's nodes (a view and a hash each, plus the allocator's header) and its buckets.
  return bytes_ + set_.size() * (sizeof(std::string_view) + 3 * sizeof(void*)) +
         set_.bucket_count() * sizeof(void*);
}

std::string_view StringPool::InternLocked(std::string_view text) {
  if (auto it = set_.find(text); it != set_.end()) return *it;
  char* at;
  if (text.size() > kChunkBytes / 8) {  // a long text gets a block of its own
    at = long_texts_.emplace_back(std::make_unique<char[]>(text.size())).get();
    bytes_ += text.size();
  } else {
    if (text.size() > chunk_left_) {
      chunk_next_ = chunks_.emplace_back(std::make_unique<char[]>(kChunkBytes)).get();
      chunk_left_ = kChunkBytes;
      bytes_ += kChunkBytes;
    }
    at = chunk_next_;
    chunk_next_ += text.size();
    chunk_left_ -= text.size();
  }
  if (!text.empty()) std::memcpy(at, text.data(), text.size());
  return *set_.insert(std::string_view(at, text.size())).first;
}

}  // namespace jitsym::native
