// NameTable: names of every size class, above and below each arena block size, intern and read
// back intact (a name longer than the block it starts once overflowed the first 4 KiB block).
#include "daemon/index/name_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace jitsym::index {
namespace {

TEST(NameTableTest, NameLongerThanTheFirstBlockIsStoredWhole) {
  NameTable names;
  const std::string name(5000, 'P');
  const uint32_t handle = names.Intern(name);
  EXPECT_EQ(names.Get(handle), name);
  EXPECT_EQ(names.Intern(name), handle);
}

TEST(NameTableTest, LongNameAfterShortOnesGetsABlockOfItsOwnSize) {
  NameTable names;
  std::vector<uint32_t> shorts;
  for (int i = 0; i < 100; ++i) shorts.push_back(names.Intern("s" + std::to_string(i)));
  const std::string long_name(NameTable::kMaxNameLength, 'L');
  const uint32_t handle = names.Intern(long_name);
  EXPECT_EQ(names.Get(handle), long_name);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(names.Get(shorts[i]), "s" + std::to_string(i));
  // The blocks after it still take ordinary names.
  EXPECT_EQ(names.Get(names.Intern("after")), "after");
}

TEST(NameTableTest, NamesOverTheMaximumAreCutToIt) {
  NameTable names;
  for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
    std::string name(size, 'x');
    name[size - 1] = 'y';  // distinct from the cut prefix only past the maximum
    const uint32_t handle = names.Intern(name);
    EXPECT_EQ(names.Get(handle).size(), NameTable::kMaxNameLength);
    EXPECT_EQ(names.Get(handle), std::string_view(name).substr(0, NameTable::kMaxNameLength));
  }
  EXPECT_EQ(names.size(), 1u);  // both cut to the same name
}

// Every length around every block size the arena goes through, interleaved with short names
// so that each long name lands at a different offset of a partly used block.
TEST(NameTableTest, EveryLengthAroundBlockSizesRoundTrips) {
  NameTable names;
  std::vector<std::pair<uint32_t, std::string>> stored;
  int n = 0;
  for (size_t base : {size_t{4096}, size_t{8192}, size_t{16384}}) {
    for (size_t len = base - 4; len <= std::min(base + 4, NameTable::kMaxNameLength); ++len) {
      std::string name(len, static_cast<char>('a' + n % 26));
      name += std::to_string(n++);
      if (name.size() > NameTable::kMaxNameLength) name.resize(NameTable::kMaxNameLength);
      stored.emplace_back(names.Intern(name), name);
      std::string small = "short_" + std::to_string(n);
      stored.emplace_back(names.Intern(small), small);
    }
  }
  for (const auto& [handle, name] : stored) ASSERT_EQ(names.Get(handle), name);
}

}  // namespace
}  // namespace jitsym::index
