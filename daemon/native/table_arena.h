// Where a module's lookup tables live once built: the CUs' intervals, nodes and line rows, their
// key indexes and the pooled names and paths (string_pool.h). Each lookup touches a few of
// these arrays at random, across megabytes; scattered over the heap in 4 KiB pages, a warm
// lookup paid a TLB miss (a page walk) on top of each cache miss. Here they are packed into
// chunks of 2 MiB advised for transparent huge pages once a module's tables outgrow a first,
// ordinary chunk (a small library keeps a small footprint).
//
// Append-only and thread-safe (CUs are built on several threads at once); everything is freed
// with the arena, that is with the module.
#ifndef JITSYM_DAEMON_NATIVE_TABLE_ARENA_H_
#define JITSYM_DAEMON_NATIVE_TABLE_ARENA_H_

#include <cstddef>
#include <cstring>
#include <mutex>
#include <span>
#include <type_traits>
#include <vector>

namespace jitsym::native {

class TableArena {
 public:
  TableArena() = default;
  TableArena(const TableArena&) = delete;
  TableArena& operator=(const TableArena&) = delete;
  ~TableArena();

  // `bytes` of uninitialized memory aligned to `align` (at most 64).
  void* Allocate(size_t bytes, size_t align);
  // A copy of `items` in the arena.
  template <typename T>
  std::span<const T> Copy(const std::vector<T>& items) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 64);
    if (items.empty()) return {};
    void* p = Allocate(items.size() * sizeof(T), alignof(T));
    std::memcpy(p, items.data(), items.size() * sizeof(T));
    return {static_cast<const T*>(p), items.size()};
  }
  // Bytes handed out, an array of its own counted whole: the same whichever thread built which
  // CU first. The chunk being filled holds at most kHugeChunkBytes more.
  size_t Bytes() const;

  static constexpr size_t kFirstChunkBytes = 256u << 10;
  static constexpr size_t kHugeChunkBytes = 2u << 20;

 private:
  struct Block {
    char* p;
    size_t size;
    bool large;  // from index::AllocateLarge (else operator new)
  };
  void* AllocateLocked(size_t bytes, size_t align);

  mutable std::mutex mu_;
  std::vector<Block> blocks_;
  char* next_ = nullptr;  // free space of the current chunk: [next_, end_)
  char* end_ = nullptr;
  size_t bytes_ = 0;  // Bytes()
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_TABLE_ARENA_H_
