// The bounds on compressed debug sections that libdw would inflate (daemon/native/elf_file.h).
#include <gtest/gtest.h>

#include "daemon/native/elf_file.h"

namespace jitsym::native {
namespace {

CompressedDebug Claim(uint64_t compressed, uint64_t claimed) {
  CompressedDebug c;
  c.compressed = compressed;
  c.claimed = claimed;
  c.largest = ".debug_info";
  c.largest_claim = claimed;
  return c;
}

TEST(CompressedDebug, RealRatiosAreRead) {
  EXPECT_EQ(CompressedDebugRefusal(CompressedDebug{}), "");
  EXPECT_EQ(CompressedDebugRefusal(Claim(10 << 20, 80 << 20)), "");           // 8 to 1
  EXPECT_EQ(CompressedDebugRefusal(Claim(16 << 20, uint64_t{1} << 30)), "");  // 64 to 1, 1 GiB
}

TEST(CompressedDebug, BombsAreRefusedNamingTheBound) {
  EXPECT_EQ(CompressedDebugRefusal(Claim(4 << 20, uint64_t{4} << 30)),
            "compressed debug sections claim 4096 MiB inflated (.debug_info: 4096 MiB), more "
            "than 1024 MiB");
  EXPECT_EQ(CompressedDebugRefusal(Claim(1000, 1 << 20)),
            "compressed debug sections claim 1 MiB inflated from 1000 bytes (.debug_info), more "
            "than 64 times their size");
}

}  // namespace
}  // namespace jitsym::native
