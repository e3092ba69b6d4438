// Sizes the daemon reserves memory for before reading: a perf map found with a size sizes the
// range buffer and the name index for it. A sparse file can claim exabytes (a tmpfs /tmp takes
// `truncate -s 8E` from any user), so the hints are capped: the first line must not throw.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "daemon/index/range_set.h"
#include "daemon/ingest/perfmap_source.h"

namespace jitsym {
namespace {

TEST(SizeHintsTest, PerfmapFoundWithAnExabyteSizeReadsItsFirstLine) {
  for (uint64_t size : {uint64_t{1} << 40, uint64_t{1} << 50, uint64_t{1} << 62, ~uint64_t{0}}) {
    ingest::SourceContext context;
    context.initial_size = size;
    ingest::PerfmapSource source("/tmp/perf-1.map", context, [] { return uint64_t{1}; });
    const std::string line = "1000 10 first\n";
    ASSERT_NO_THROW(source.Feed({reinterpret_cast<const uint8_t*>(line.data()), line.size()}))
        << size;
    auto sym = source.code().Publish()->Find(0x1008, std::nullopt);
    ASSERT_TRUE(sym) << size;
    EXPECT_EQ(sym->name, "first");
  }
}

TEST(SizeHintsTest, SparsePerfmapIsSizedByWhatItStores) {
  // One 4 KiB block stored in a file of 4 GiB: the index is sized for the block, not the size.
  ingest::SourceContext sparse;
  sparse.initial_size = uint64_t{4} << 30;
  sparse.allocated_size = 4096;
  ingest::PerfmapSource source("/tmp/perf-1.map", sparse, [] { return uint64_t{1}; });
  EXPECT_LT(source.code().memory_bytes(), size_t{1} << 20);
  // The same size stored in full is sized for it.
  ingest::SourceContext dense = sparse;
  dense.allocated_size = dense.initial_size;
  ingest::PerfmapSource full("/tmp/perf-2.map", dense, [] { return uint64_t{1}; });
  EXPECT_GT(full.code().memory_bytes(), size_t{16} << 20);
}

TEST(SizeHintsTest, RangeSetReserveIsCapped) {
  index::RangeSet ranges;
  ranges.Reserve(~size_t{0});
  ASSERT_NO_THROW(ranges.Add(0x1000, 0x10, 1, 7));
  auto snapshot = ranges.Publish();
  EXPECT_TRUE(snapshot->Find(0x1000, std::nullopt));
}

}  // namespace
}  // namespace jitsym
