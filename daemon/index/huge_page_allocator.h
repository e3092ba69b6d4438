// An allocator for the index's large arrays: allocations of at least kThreshold bytes are mapped
// 2 MiB-aligned and advised for transparent huge pages. Random lookups over millions of ranges
// otherwise pay a TLB miss (a page walk) on top of each cache miss. Smaller allocations use
// operator new. Works whether THP is "always" or "madvise"; harmless when it is "never".
//
// Freed large blocks are kept for reuse, up to kLargeCacheBytes, rather than unmapped: ingest
// builds and merges runs over and over, and every fresh mapping costs page faults and the
// kernel's zeroing of each page (a fifth of perf map ingest before the cache). A reused block
// holds stale bytes: like operator new, AllocateLarge promises nothing about the contents.
// Blocks nobody took again are unmapped by TrimLargeCache, which the ingester calls on its
// maintenance tick, so an idle daemon does not keep them.
#ifndef JITSYM_DAEMON_INDEX_HUGE_PAGE_ALLOCATOR_H_
#define JITSYM_DAEMON_INDEX_HUGE_PAGE_ALLOCATOR_H_

#include <cstddef>
#include <new>
#include <vector>

namespace jitsym::index {

// A block of `bytes` (rounded up to 2 MiB), 2 MiB-aligned; `huge`: advised for huge pages.
void* AllocateLarge(size_t bytes, bool huge = true);
// Frees a block of AllocateLarge (the same `bytes` and `huge`).
void FreeLarge(void* p, size_t bytes, bool huge = true);
inline constexpr size_t kHugePageThreshold = 8u << 20;

// At most this many bytes of freed blocks are kept for reuse (the oldest go first).
inline constexpr size_t kLargeCacheBytes = 256u << 20;
// Unmaps the kept blocks that were kept already at the previous call and not reused since.
void TrimLargeCache();
// Unmaps every kept block.
void ReleaseLargeCache();
// Bytes of freed blocks kept for reuse.
size_t LargeCacheBytes();

// kHuge: advise huge pages, for arrays that lookups search. Without, for arrays written and read
// in order (a run's temporaries, the ranges waiting for a publication): on a virtual machine a
// fresh huge page can cost much more to fault in than the TLB misses it saves there, and those
// still get the reuse of freed blocks.
template <typename T, bool kHuge>
struct LargeAllocator {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = LargeAllocator<U, kHuge>;
  };
  LargeAllocator() = default;
  template <typename U>
  LargeAllocator(const LargeAllocator<U, kHuge>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kHugePageThreshold) return static_cast<T*>(AllocateLarge(bytes, kHuge));
    return static_cast<T*>(::operator new(bytes));
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kHugePageThreshold) {
      FreeLarge(p, bytes, kHuge);
    } else {
      ::operator delete(p);
    }
  }
  template <typename U>
  bool operator==(const LargeAllocator<U, kHuge>&) const {
    return true;
  }
};

template <typename T>
using HugePageAllocator = LargeAllocator<T, true>;
template <typename T>
using HugeVector = std::vector<T, LargeAllocator<T, true>>;
// Large, not advised for huge pages.
template <typename T>
using LargeVector = std::vector<T, LargeAllocator<T, false>>;

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_HUGE_PAGE_ALLOCATOR_H_
