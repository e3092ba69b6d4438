#include "daemon/native/string_pool.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace jitsym::native {

void StringPool::InternAll(const std::vector<std::string_view>& texts,
                           std::vector<std::string_view>* out) {
  out->clear();
  out->reserve(texts.size());
  std::lock_guard lock(mu_);
  for (std::string_view text : texts) out->push_back(InternLocked(text));
}

std::string_view StringPool::Intern(std::string_view text) {
  std::lock_guard lock(mu_);
  return InternLocked(text);
}

size_t StringPool::Bytes() const {
  std::lock_guard lock(mu_);
  return bytes_ + slots_.capacity() * sizeof(Slot);
}

void StringPool::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(4096, 2 * old.size()), Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.data == nullptr) continue;
    size_t i = slot.hash & mask;
    while (slots_[i].data != nullptr) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

std::string_view StringPool::InternLocked(std::string_view text) {
  if (2 * (count_ + 1) > slots_.size()) Grow();
  const uint64_t hash = std::hash<std::string_view>{}(text);
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  for (; slots_[i].data != nullptr; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.hash == hash && std::string_view(slot.data, slot.size) == text) {
      return {slot.data, slot.size};
    }
  }
  char* at;
  if (text.size() > kChunkBytes / 8) {  // a long text gets a block of its own
    at = long_texts_.emplace_back(std::make_unique_for_overwrite<char[]>(text.size())).get();
    bytes_ += text.size();
  } else {
    if (text.size() > chunk_left_) {
      chunk_next_ = chunks_.emplace_back(std::make_unique_for_overwrite<char[]>(kChunkBytes)).get();
      chunk_left_ = kChunkBytes;
      bytes_ += kChunkBytes;
    }
    at = chunk_next_;
    chunk_next_ += text.size();
    chunk_left_ -= text.size();
  }
  if (!text.empty()) std::memcpy(at, text.data(), text.size());
  // An empty text still needs a non-null address: the slot's mark of being taken.
  static constexpr char kEmpty[] = "";
  slots_[i] = {hash, text.empty() ? kEmpty : at, text.size()};
  ++count_;
  return {slots_[i].data, text.size()};
}

}  // namespace jitsym::native
