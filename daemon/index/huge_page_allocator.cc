#include "daemon/index/huge_page_allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <mutex>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define JITSYM_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define JITSYM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define JITSYM_POISON(p, n) ((void)(p), (void)(n))
#define JITSYM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace jitsym::index {
namespace {

constexpr size_t kHugePage = 2u << 20;

size_t RoundUp(size_t n) { return (n + kHugePage - 1) & ~(kHugePage - 1); }

void* MapAligned(size_t size, bool huge) {
  // Over-map by one huge page and trim, to get a 2 MiB-aligned start.
  void* raw = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > base) ::munmap(raw, aligned - base);
  const uintptr_t end = base + size + kHugePage;
  if (end > aligned + size) ::munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  if (huge) ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

// Freed blocks (whole mappings or 2 MiB-aligned parts of one), oldest first. Blocks are freed
// by whichever thread drops the last reference to a snapshot, so the cache has a lock; it is
// taken once per array of megabytes.
struct Block {
  char* p;
  size_t size;
  bool huge;            // advised for huge pages
  uint64_t generation;  // TrimLargeCache's count when the block was freed
};
struct Cache {
  std::mutex mu;
  std::vector<Block> blocks;
  size_t bytes = 0;
  uint64_t generation = 0;
};
Cache& TheCache() {
  static Cache* cache = new Cache;  // never destroyed: arrays may be freed during exit
  return *cache;
}

void Unmap(const Block& b) {
  JITSYM_UNPOISON(b.p, b.size);  // the addresses may be mapped again for something else
  ::munmap(b.p, b.size);
}

}  // namespace

void* AllocateLarge(size_t bytes, bool huge) {
  const size_t size = RoundUp(bytes);
  {
    Cache& c = TheCache();
    std::lock_guard lock(c.mu);
    // The smallest kept block of the same kind that fits; the rest of it stays kept (sizes are
    // multiples of 2 MiB, so the rest is still huge page aligned).
    auto best = c.blocks.end();
    for (auto it = c.blocks.begin(); it != c.blocks.end(); ++it) {
      if (it->huge == huge && it->size >= size &&
          (best == c.blocks.end() || it->size < best->size)) {
        best = it;
      }
    }
    if (best != c.blocks.end()) {
      char* p = best->p;
      c.bytes -= size;
      if (best->size == size) {
        c.blocks.erase(best);
      } else {
        best->p += size;
        best->size -= size;
      }
      JITSYM_UNPOISON(p, size);
      return p;
    }
  }
  return MapAligned(size, huge);
}

void FreeLarge(void* p, size_t bytes, bool huge) {
  const size_t size = RoundUp(bytes);
  if (size > kLargeCacheBytes) {
    ::munmap(p, size);
    return;
  }
  std::vector<Block> evicted;
  {
    Cache& c = TheCache();
    std::lock_guard lock(c.mu);
    JITSYM_POISON(p, size);
    c.blocks.push_back({static_cast<char*>(p), size, huge, c.generation});
    c.bytes += size;
    size_t drop = 0;  // the oldest blocks, as many as it takes to get back under the cap
    for (size_t over = c.bytes - std::min(c.bytes, kLargeCacheBytes); over > 0; ++drop) {
      over -= std::min(over, c.blocks[drop].size);
    }
    for (size_t i = 0; i < drop; ++i) {
      c.bytes -= c.blocks[i].size;
      evicted.push_back(c.blocks[i]);
    }
    c.blocks.erase(c.blocks.begin(), c.blocks.begin() + static_cast<ptrdiff_t>(drop));
  }
  for (const Block& b : evicted) Unmap(b);  // outside the lock: it can be slow
}

void TrimLargeCache() {
  std::vector<Block> evicted;
  {
    Cache& c = TheCache();
    std::lock_guard lock(c.mu);
    std::erase_if(c.blocks, [&](const Block& b) {
      if (b.generation >= c.generation) return false;
      c.bytes -= b.size;
      evicted.push_back(b);
      return true;
    });
    ++c.generation;
  }
  for (const Block& b : evicted) Unmap(b);
}

void ReleaseLargeCache() {
  std::vector<Block> evicted;
  {
    Cache& c = TheCache();
    std::lock_guard lock(c.mu);
    evicted.swap(c.blocks);
    c.bytes = 0;
  }
  for (const Block& b : evicted) Unmap(b);
}

size_t LargeCacheBytes() {
  Cache& c = TheCache();
  std::lock_guard lock(c.mu);
  return c.bytes;
}

}  // namespace jitsym::index
