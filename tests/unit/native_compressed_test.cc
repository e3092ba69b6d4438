// The bounds on compressed debug sections that libdw would inflate (daemon/native/elf_file.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "daemon/native/elf_file.h"
#include "daemon/native/native_module.h"
#include "tests/unit/testing/dwarf_files.h"

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

// The owner's quota bounds what a file may inflate to, below the fixed bound; it never raises it.
TEST(CompressedDebug, TheOwnersQuotaIsTheBound) {
  EXPECT_EQ(CompressedDebugRefusal(Claim(16 << 20, 512 << 20), 256 << 20),
            "compressed debug sections claim 512 MiB inflated (.debug_info: 512 MiB), more than "
            "256 MiB (its owner's quota)");
  EXPECT_EQ(CompressedDebugRefusal(Claim(16 << 20, 200 << 20), 256 << 20), "");
  EXPECT_NE(CompressedDebugRefusal(Claim(64 << 20, uint64_t{2} << 30), uint64_t{8} << 30), "");
}

// A module whose compressed DWARF would inflate past its owner's quota is read without it: its
// symbols answer, and why not names the quota.
TEST(CompressedDebug, AModuleOverItsOwnersQuotaAnswersFromItsSymbols) {
  testing::TestPrograms programs;
  const std::string gz = programs.Build("g++", "-O0 -g -gz=zlib");
  ASSERT_FALSE(gz.empty());
  DebugSearch roomy;
  std::string error;
  auto full = NativeModule::Open(gz, roomy, &error);
  ASSERT_TRUE(full) << error;
  ASSERT_TRUE(full->has_dwarf());
  DebugSearch tight;
  tight.inflate_bytes = 1024;  // less than any real DWARF inflates to
  auto bounded = NativeModule::Open(gz, tight, &error);
  ASSERT_TRUE(bounded) << error;
  EXPECT_FALSE(bounded->has_dwarf());
  EXPECT_NE(bounded->dwarf_refusal().find("its owner's quota"), std::string::npos)
      << bounded->dwarf_refusal();
  uint64_t main_addr = 0;
  if (FILE* nm = ::popen(("nm " + gz).c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof(line), nm) != nullptr) {
      unsigned long long addr = 0;
      char type = 0;
      char name[400];
      if (std::sscanf(line, "%llx %c %399s", &addr, &type, name) == 3 &&
          std::string(name) == "main") {
        main_addr = addr;
      }
    }
    ::pclose(nm);
  }
  ASSERT_NE(main_addr, 0u);
  NativeAnswer a;
  bounded->Symbolize(main_addr, &a);
  EXPECT_TRUE(a.found);
  EXPECT_EQ(a.name, "main");
}

}  // namespace
}  // namespace jitsym::native
