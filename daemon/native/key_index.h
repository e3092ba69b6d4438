// KeyIndex: the search structure under every native table (symbols, a CU's address intervals and
// line rows). Header-only: its two searches sit on the lookup path of every native frame.
#ifndef JITSYM_DAEMON_NATIVE_KEY_INDEX_H_
#define JITSYM_DAEMON_NATIVE_KEY_INDEX_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace jitsym::native {

// Sorted 64-bit keys searched for the last key <= x. A sparse copy of every 16th key (small
// enough to stay in cache) narrows the search to two cache lines of the dense keys.
class KeyIndex {
 public:
  void Build(std::vector<uint64_t> keys) {
    keys_ = std::move(keys);
    sparse_.clear();
    for (size_t i = 0; i < keys_.size(); i += kStride) sparse_.push_back(keys_[i]);
    keys_.shrink_to_fit();
    sparse_.shrink_to_fit();
  }
  // Index of the last key <= x; -1 if none.
  ptrdiff_t LastAtMost(uint64_t x) const {
    auto s = std::upper_bound(sparse_.begin(), sparse_.end(), x);
    if (s == sparse_.begin()) return -1;
    const size_t block = static_cast<size_t>(s - sparse_.begin() - 1) * kStride;
    const size_t end = std::min(keys_.size(), block + kStride);
    auto it = std::upper_bound(keys_.begin() + block, keys_.begin() + end, x);
    return (it - keys_.begin()) - 1;
  }
  size_t Bytes() const { return (keys_.capacity() + sparse_.capacity()) * sizeof(uint64_t); }

 private:
  static constexpr size_t kStride = 16;
  std::vector<uint64_t> keys_, sparse_;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_KEY_INDEX_H_
