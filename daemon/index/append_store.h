// Append-only storage whose elements never move, readable while one writer appends.
//
// Chunk k holds kFirst << k elements, so growth is geometric (a small process costs a few KiB)
// and element i is found with a bit scan, no directory lookup. The chunk table has a fixed size,
// so it is never reallocated under a reader. A reader may read element i only if i is below a
// size published to it after the element was written (the index publishes sizes inside
// immutable snapshots through an atomic pointer, which orders the writes before the reads).
#ifndef JITSYM_DAEMON_INDEX_APPEND_STORE_H_
#define JITSYM_DAEMON_INDEX_APPEND_STORE_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace jitsym::index {

template <typename T, int kFirstLog2 = 8>
class AppendStore {
 public:
  static constexpr int kMaxChunks = 40;

  AppendStore() = default;
  AppendStore(const AppendStore&) = delete;
  AppendStore& operator=(const AppendStore&) = delete;

  size_t Append(const T& value) {
    const size_t i = size_;
    auto [k, off] = Locate(i);
    if (!chunks_[k]) chunks_[k] = std::make_unique<T[]>(size_t{1} << (kFirstLog2 + k));
    chunks_[k][off] = value;
    ++size_;
    return i;
  }

  const T& operator[](size_t i) const {
    auto [k, off] = Locate(i);
    return chunks_[k][off];
  }

  size_t size() const { return size_; }  // writer's view
  size_t memory_bytes() const {
    size_t total = 0;
    for (int k = 0; k < kMaxChunks && chunks_[k]; ++k) {
      total += (size_t{1} << (kFirstLog2 + k)) * sizeof(T);
    }
    return total;
  }

 private:
  struct Position {
    int chunk;
    size_t offset;
  };
  static Position Locate(size_t i) {
    const size_t q = (i >> kFirstLog2) + 1;
    const int k = std::bit_width(q) - 1;
    const size_t base = ((size_t{1} << k) - 1) << kFirstLog2;
    return {k, i - base};
  }

  std::array<std::unique_ptr<T[]>, kMaxChunks> chunks_{};
  size_t size_ = 0;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_APPEND_STORE_H_
