#include "daemon/native/table_arena.h"

#include <cstdint>
#include <new>

#include "daemon/index/huge_page_allocator.h"

namespace jitsym::native {

TableArena::~TableArena() {
  for (const Block& b : blocks_) {
    if (b.large) {
      index::FreeLarge(b.p, b.size);
    } else {
      ::operator delete (b.p, std::align_val_t{64});
    }
  }
}

void* TableArena::Allocate(size_t bytes, size_t align) {
  std::lock_guard lock(mu_);
  return AllocateLocked(bytes, align);
}

size_t TableArena::Bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

void* TableArena::AllocateLocked(size_t bytes, size_t align) {
  auto aligned = [align](char* p) {
    return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + align - 1) & ~(align - 1));
  };
  if (bytes > kHugeChunkBytes / 2) {  // an array of its own, rounded to huge pages
    const size_t size = (bytes + kHugeChunkBytes - 1) & ~(kHugeChunkBytes - 1);
    char* p = static_cast<char*>(index::AllocateLarge(size));
    blocks_.push_back({p, size, true});
    bytes_ += size;
    return p;
  }
  if (next_ != nullptr) {
    char* p = aligned(next_);
    if (p <= end_ && static_cast<size_t>(end_ - p) >= bytes) {
      next_ = p + bytes;
      bytes_ += bytes;
      return p;
    }
  }
  Block b;
  if (blocks_.empty() && bytes + align <= kFirstChunkBytes) {
    b = {static_cast<char*>(::operator new (kFirstChunkBytes, std::align_val_t{64})),
         kFirstChunkBytes, false};
  } else {
    b = {static_cast<char*>(index::AllocateLarge(kHugeChunkBytes)), kHugeChunkBytes, true};
  }
  blocks_.push_back(b);
  bytes_ += bytes;
  next_ = b.p;
  end_ = b.p + b.size;
  char* p = aligned(next_);
  next_ = p + bytes;
  return p;
}

}  // namespace jitsym::native
