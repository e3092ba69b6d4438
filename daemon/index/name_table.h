// Interned names: each distinct name is stored once per table and referred to by a 32-bit
// handle that locates its bytes directly (arena block and offset), so reading a name costs one
// memory access and no lookup table. Intern() is for the single writer; Get() may be called by
// readers for handles published to them (arena blocks never move or shrink).
#ifndef JITSYM_DAEMON_INDEX_NAME_TABLE_H_
#define JITSYM_DAEMON_INDEX_NAME_TABLE_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "daemon/index/huge_page_allocator.h"

namespace jitsym::index {

class NameTable {
 public:
  // Names longer than this are cut (a hostile file must not make one name cost megabytes).
  static constexpr size_t kMaxNameLength = 16 * 1024;

  // Returns the name's handle. Throws std::length_error when the table is full (31 blocks,
  // about 1.1 GiB of names): a Source turns that into its file's error.
  uint32_t Intern(std::string_view name) { return Intern(name, Hash(name)); }
  // The same, split so that a caller interning a stream of names can prefetch the table slot of
  // a name a few names ahead of interning it (the slot is a cache miss for most new names).
  static uint32_t Hash(std::string_view name);
  void PrefetchSlot(uint32_t hash) const {
    if (slots_.empty()) return;
    const Slot* slot = &slots_[hash & (slots_.size() - 1)];
#if defined(__x86_64__) || defined(__i386__)
    // GCC drops a __builtin_prefetch whose result nothing in the function goes on to read.
    asm volatile("prefetcht0 %0" : : "m"(*slot));
#else
    __builtin_prefetch(slot);
#endif
  }
  uint32_t Intern(std::string_view name, uint32_t hash);  // hash: Hash(name)
  // Sizes the index for `names` distinct names up front (a hint: more still fit), so that a
  // source that knows roughly how many are coming does not rehash the index as it doubles.
  void Reserve(size_t names);

  std::string_view Get(uint32_t handle) const {
    const char* p = blocks_[handle >> kOffsetBits].get() + (handle & kOffsetMask);
    uint16_t len;
    std::memcpy(&len, p, 2);
    return {p + 2, len};
  }
  void Prefetch(uint32_t handle) const {
    __builtin_prefetch(blocks_[handle >> kOffsetBits].get() + (handle & kOffsetMask));
  }

  // Fewer arena blocks than kMaxBlocks, so that a test fills the table with a few names.
  void set_max_blocks_for_testing(int blocks) { max_blocks_ = blocks; }

  size_t size() const { return count_; }
  size_t name_bytes() const { return name_bytes_; }
  // Arena plus the writer's hash index.
  size_t memory_bytes() const;

 private:
  // Handle: 5 bits of block number, 27 bits of offset. Block k holds 4 KiB << k bytes, capped
  // at 64 MiB, so 31 blocks hold over a gigabyte of names.
  static constexpr int kOffsetBits = 27;
  static constexpr uint32_t kOffsetMask = (1u << kOffsetBits) - 1;
  static constexpr int kMaxBlocks = 31;  // block 31 would make handles collide with 0xffffffff
  static constexpr size_t kMaxBlockSize = size_t{64} << 20;
  // Every offset into a block must fit the handle, and every name (with its length prefix) a
  // block; the length prefix is 16 bits.
  static_assert(kMaxBlockSize <= (size_t{1} << kOffsetBits));
  static_assert(kMaxNameLength + 2 <= kMaxBlockSize);
  static_assert(kMaxNameLength <= 0xffff);

  std::array<std::unique_ptr<char[]>, kMaxBlocks> blocks_{};
  int block_count_ = 0;
  int max_blocks_ = kMaxBlocks;
  size_t block_used_ = 0;
  size_t block_size_ = 0;
  size_t arena_bytes_ = 0;
  size_t name_bytes_ = 0;
  // The writer's index from name to handle: open addressing with linear probing, at most half
  // full. A slot keeps 32 bits of the name's hash beside the handle, so probing compares names
  // (a cache miss into the arena) only when the hashes agree, and growing never rehashes names.
  struct Slot {
    uint32_t hash = 0;
    uint32_t handle = kEmpty;
  };
  static constexpr uint32_t kEmpty = 0xffffffff;  // never a handle (block 31 is not used)
  void Grow();
  void Rehash(size_t slots);
  // Huge pages: every Intern and prefetch lands on a random slot of an index of tens of MiB.
  HugeVector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_NAME_TABLE_H_
