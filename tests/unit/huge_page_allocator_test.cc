#include "daemon/index/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstring>

#include "daemon/index/name_table.h"

namespace jitsym::index {
namespace {

constexpr size_t kMiB = 1u << 20;

class LargeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { ReleaseLargeCache(); }
  void TearDown() override { ReleaseLargeCache(); }
};

TEST_F(LargeCacheTest, FreedBlockIsReused) {
  void* p = AllocateLarge(10 * kMiB);
  std::memset(p, 1, 10 * kMiB);
  FreeLarge(p, 10 * kMiB);
  EXPECT_EQ(LargeCacheBytes(), 10 * kMiB);
  void* q = AllocateLarge(9 * kMiB + 1);  // rounded up to the same 10 MiB
  EXPECT_EQ(q, p);
  EXPECT_EQ(LargeCacheBytes(), 0u);
  static_cast<char*>(q)[10 * kMiB - 1] = 2;  // all of it is usable
  FreeLarge(q, 9 * kMiB + 1);
}

TEST_F(LargeCacheTest, LargerBlockIsSplitAndTheRestKept) {
  void* p = AllocateLarge(20 * kMiB);
  FreeLarge(p, 20 * kMiB);
  void* a = AllocateLarge(8 * kMiB);
  EXPECT_EQ(a, p);
  EXPECT_EQ(LargeCacheBytes(), 12 * kMiB);
  void* b = AllocateLarge(12 * kMiB);
  EXPECT_EQ(b, static_cast<char*>(p) + 8 * kMiB);
  EXPECT_EQ(LargeCacheBytes(), 0u);
  std::memset(a, 3, 8 * kMiB);
  std::memset(b, 4, 12 * kMiB);
  FreeLarge(a, 8 * kMiB);
  FreeLarge(b, 12 * kMiB);
  EXPECT_EQ(LargeCacheBytes(), 20 * kMiB);
}

TEST_F(LargeCacheTest, SmallestFittingBlockIsTaken) {
  void* big = AllocateLarge(30 * kMiB);
  void* small = AllocateLarge(10 * kMiB);
  FreeLarge(big, 30 * kMiB);
  FreeLarge(small, 10 * kMiB);
  EXPECT_EQ(AllocateLarge(10 * kMiB), small);
  EXPECT_EQ(AllocateLarge(30 * kMiB), big);
  FreeLarge(small, 10 * kMiB);
  FreeLarge(big, 30 * kMiB);
}

TEST_F(LargeCacheTest, HugePageAndPlainBlocksAreNotMixed) {
  void* huge = AllocateLarge(10 * kMiB, /*huge=*/true);
  FreeLarge(huge, 10 * kMiB, /*huge=*/true);
  void* plain = AllocateLarge(10 * kMiB, /*huge=*/false);
  EXPECT_NE(plain, huge);
  EXPECT_EQ(LargeCacheBytes(), 10 * kMiB);
  FreeLarge(plain, 10 * kMiB, /*huge=*/false);
  EXPECT_EQ(AllocateLarge(10 * kMiB, /*huge=*/true), huge);
  FreeLarge(huge, 10 * kMiB, /*huge=*/true);
}

TEST_F(LargeCacheTest, KeepsAtMostTheCapOldestFirst) {
  const size_t block = kLargeCacheBytes / 2;  // mapped, never touched: costs no memory
  void* first = AllocateLarge(block);
  void* second = AllocateLarge(block);
  void* third = AllocateLarge(block);
  FreeLarge(first, block);
  FreeLarge(second, block);
  EXPECT_EQ(LargeCacheBytes(), kLargeCacheBytes);
  FreeLarge(third, block);  // the first goes
  EXPECT_EQ(LargeCacheBytes(), kLargeCacheBytes);
  EXPECT_EQ(AllocateLarge(block), second);  // equal sizes: the first found, the oldest kept
  EXPECT_EQ(AllocateLarge(block), third);
  EXPECT_EQ(LargeCacheBytes(), 0u);
  FreeLarge(second, block);
  FreeLarge(third, block);
  // A block larger than the cap is not kept at all.
  void* huge = AllocateLarge(kLargeCacheBytes + 2 * kMiB);
  FreeLarge(huge, kLargeCacheBytes + 2 * kMiB);
  EXPECT_EQ(LargeCacheBytes(), kLargeCacheBytes);
}

TEST_F(LargeCacheTest, TrimUnmapsBlocksUnusedForAWholeTick) {
  void* p = AllocateLarge(10 * kMiB);
  FreeLarge(p, 10 * kMiB);
  TrimLargeCache();  // freed during this tick: kept
  EXPECT_EQ(LargeCacheBytes(), 10 * kMiB);
  void* q = AllocateLarge(10 * kMiB);
  FreeLarge(q, 10 * kMiB);  // reused and freed again: a new tick starts for it
  TrimLargeCache();
  EXPECT_EQ(LargeCacheBytes(), 10 * kMiB);
  TrimLargeCache();  // not reused since the last trim
  EXPECT_EQ(LargeCacheBytes(), 0u);
}

TEST_F(LargeCacheTest, VectorsReuseBlocksThroughTheAllocator) {
  const uint64_t* first;
  {
    HugeVector<uint64_t> v(2 * kMiB, 7);  // 16 MiB
    first = v.data();
  }
  EXPECT_EQ(LargeCacheBytes(), 16 * kMiB);
  HugeVector<uint64_t> w;
  w.reserve(2 * kMiB);
  EXPECT_EQ(w.data(), first);
  w.assign(2 * kMiB, 9);  // the stale contents are overwritten, as a fresh block would be
  EXPECT_EQ(w[12345], 9u);
  LargeVector<uint64_t> plain(2 * kMiB, 1);  // another kind: its own block
  EXPECT_NE(plain.data(), first);
}

TEST(NameTableTest, ReserveSizesTheIndexAndNamesStillIntern) {
  NameTable names;
  names.Reserve(100000);
  const size_t reserved = names.memory_bytes();
  std::vector<uint32_t> handles;
  for (int i = 0; i < 100000; ++i) handles.push_back(names.Intern("fn_" + std::to_string(i)));
  EXPECT_EQ(names.size(), 100000u);
  EXPECT_EQ(names.Intern("fn_77"), handles[77]);
  for (int i = 0; i < 100000; i += 997) EXPECT_EQ(names.Get(handles[i]), "fn_" + std::to_string(i));
  // The index did not grow (only the arena did).
  EXPECT_LE(names.memory_bytes() - reserved, names.name_bytes() + 2 * names.size() + (4 << 20));
  // More names than the hint still fit; a smaller hint later changes nothing.
  for (int i = 0; i < 300000; ++i) names.Intern("more_" + std::to_string(i));
  names.Reserve(10);
  EXPECT_EQ(names.size(), 400000u);
  EXPECT_EQ(names.Get(handles[99999]), "fn_99999");
}

}  // namespace
}  // namespace jitsym::index
