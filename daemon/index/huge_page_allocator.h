// An allocator for the index's large arrays: allocations of at least kThreshold bytes are mapped
// 2 MiB-aligned and advised for transparent huge pages. Random lookups over millions of ranges
// otherwise pay a TLB miss (a page walk) on top of each cache miss. Smaller allocations use
// operator new. Works whether THP is "always" or "madvise"; harmless when it is "never".
#ifndef JITSYM_DAEMON_INDEX_HUGE_PAGE_ALLOCATOR_H_
#define JITSYM_DAEMON_INDEX_HUGE_PAGE_ALLOCATOR_H_

#include <cstddef>
#include <new>
#include <vector>

namespace jitsym::index {

void* AllocateLarge(size_t bytes);
void FreeLarge(void* p, size_t bytes);
inline constexpr size_t kHugePageThreshold = 8u << 20;

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kHugePageThreshold) return static_cast<T*>(AllocateLarge(bytes));
    return static_cast<T*>(::operator new(bytes));
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kHugePageThreshold) {
      FreeLarge(p, bytes);
    } else {
      ::operator delete(p);
    }
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_HUGE_PAGE_ALLOCATOR_H_
