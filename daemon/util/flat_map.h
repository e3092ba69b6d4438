// FlatMap32: keys to 32-bit values in one open-addressed array (linear probing, at most half
// full), for the hot tables of the native readers, where a node-based map allocated an entry
// per key and a pointer chase per probe. Insert and find only: no erase.
#ifndef JITSYM_DAEMON_UTIL_FLAT_MAP_H_
#define JITSYM_DAEMON_UTIL_FLAT_MAP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

namespace jitsym {

// Spreads a 64-bit value over all bits (Fibonacci hashing's multiplier, folded).
inline size_t MixBits(uint64_t x) {
  const uint64_t h = x * 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(h ^ (h >> 32));
}

// The hash of an integer or pointer key: MixBits of its value.
struct MixHash {
  template <typename T>
  size_t operator()(T key) const {
    if constexpr (std::is_pointer_v<T>) {
      return MixBits(reinterpret_cast<uintptr_t>(key));
    } else {
      return MixBits(static_cast<uint64_t>(key));
    }
  }
};

template <typename Key, typename Hash = MixHash, typename Eq = std::equal_to<Key>>
class FlatMap32 {
 public:
  // Room for `expected` keys before the first growth.
  explicit FlatMap32(size_t expected = 0) { Resize(expected); }

  // The value of `key`, or null. Valid until the next Insert.
  const uint32_t* Find(const Key& key) const {
    for (size_t i = Hash()(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (Eq()(s.key, key)) return &s.value;
    }
  }
  // Adds `key`, which is not in the map, with `value`.
  void Insert(const Key& key, uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) Resize(2 * (size_ + 1));
    Place(key, value);
    ++size_;
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    Key key{};
    uint32_t value = 0;
    bool used = false;
  };
  void Place(const Key& key, uint32_t value) {
    size_t i = Hash()(key) & mask_;
    while (slots_[i].used) i = (i + 1) & mask_;
    slots_[i] = {key, value, true};
  }
  void Resize(size_t keys) {
    size_t n = 16;
    while (n < 2 * keys) n <<= 1;
    if (n <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    for (const Slot& s : old) {
      if (s.used) Place(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_FLAT_MAP_H_
