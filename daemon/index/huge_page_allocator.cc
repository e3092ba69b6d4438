#include "daemon/index/huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdint>

namespace jitsym::index {
namespace {

constexpr size_t kHugePage = 2u << 20;

size_t RoundUp(size_t n) { return (n + kHugePage - 1) & ~(kHugePage - 1); }

}  // namespace

void* AllocateLarge(size_t bytes) {
  const size_t size = RoundUp(bytes);
  // Over-map by one huge page and trim, to get a 2 MiB-aligned start.
  void* raw = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > base) ::munmap(raw, aligned - base);
  const uintptr_t end = base + size + kHugePage;
  if (end > aligned + size) ::munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void FreeLarge(void* p, size_t bytes) { ::munmap(p, RoundUp(bytes)); }

}  // namespace jitsym::index
