// A hash table from byte-string keys to 64-bit values, for interning on hot paths (the pprof
// ProfileBuilder: every frame of every sample is looked up). std::unordered_map<std::string, ...>
// costs a node allocation per key and two dependent cache misses per lookup (bucket chain, then
// the key's heap buffer); here the keys live in one arena and the table is one flat array of
// slots (open addressing, linear probing, at most half full), so a lookup is one probe of the
// array and one compare against the arena. Keys are never removed.
#ifndef JITSYM_CLIENT_KEY_TABLE_H_
#define JITSYM_CLIENT_KEY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::client {

class KeyTable {
 public:
  static uint64_t Hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

  // The value of `key` (whose Hash is `hash`), or nullptr. Valid until the next Insert.
  const uint64_t* Find(std::string_view key, uint64_t hash) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.size == kEmpty) return nullptr;
      if (s.hash == hash && s.size == key.size() &&
          std::string_view(arena_.data() + s.offset, s.size) == key) {
        return &s.value;
      }
    }
  }
  const uint64_t* Find(std::string_view key) const { return Find(key, Hash(key)); }

  // Adds `key` (absent: Find returned nullptr) with `value`.
  void Insert(std::string_view key, uint64_t hash, uint64_t value) {
    if (key.size() >= kEmpty) throw std::length_error("KeyTable key over 4 GiB");
    if ((count_ + 1) * 2 > slots_.size()) Grow();
    Place(Slot{hash, arena_.size(), static_cast<uint32_t>(key.size()), value});
    arena_.append(key);
    ++count_;
  }
  void Insert(std::string_view key, uint64_t value) { Insert(key, Hash(key), value); }

  size_t size() const { return count_; }

 private:
  // Keys are at most 4 GiB - 2; kEmpty marks a free slot.
  static constexpr uint32_t kEmpty = ~uint32_t{0};
  struct Slot {
    uint64_t hash;
    uint64_t offset;  // of the key in arena_
    uint32_t size;
    uint64_t value;
  };

  void Place(const Slot& slot) {
    size_t i = slot.hash & mask_;
    while (slots_[i].size != kEmpty) i = (i + 1) & mask_;
    slots_[i] = slot;
  }
  void Grow() {
    std::vector<Slot> old(slots_.empty() ? 16 : slots_.size() * 2, Slot{0, 0, kEmpty, 0});
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.size != kEmpty) Place(s);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
  std::string arena_;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_KEY_TABLE_H_
