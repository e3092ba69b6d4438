// dwz's alt file: the .gnu_debugaltlink parse, where the file is looked for, and the stand-in
// libdw gets when the file is missing (which must open, or libdw would look on its own).
#include <elfutils/libdw.h>
#include <gtest/gtest.h>
#include <libelf.h>

#include <string>

#include "daemon/native/alt_file.h"

namespace jitsym::native {
namespace {

TEST(NativeAltLink, ParsesNameAndBuildId) {
  const std::string section = std::string("/usr/lib/debug/.dwz/x86_64-linux-gnu/libc6.debug") +
                              '\0' + std::string("\x01\xab\xff\x10", 4);
  const std::optional<AltLink> link = ParseAltLink(section);
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ(link->name, "/usr/lib/debug/.dwz/x86_64-linux-gnu/libc6.debug");
  EXPECT_EQ(link->build_id, "01abff10");
}

TEST(NativeAltLink, RefusesMalformedSections) {
  EXPECT_FALSE(ParseAltLink("no terminator"));
  EXPECT_FALSE(ParseAltLink(std::string("\0abcd", 5)));                      // empty name
  EXPECT_FALSE(ParseAltLink(std::string("x\0ab", 4)));                       // 2-byte id
  EXPECT_FALSE(ParseAltLink(std::string("x\0", 2) + std::string(65, 'a')));  // 65-byte id
  EXPECT_TRUE(ParseAltLink(std::string("x\0", 2) + std::string(64, 'a')));
}

TEST(NativeAltLink, LooksWhereLibdwLooks) {
  AltLink link{"../.dwz/common.debug", "abcdef12"};
  EXPECT_EQ(AltCandidates(link, "/usr/lib/debug", "/usr/lib/debug/.build-id/12"),
            (std::vector<std::string>{"/usr/lib/debug/.build-id/ab/cdef12.debug",
                                      "/usr/lib/debug/.build-id/12/../.dwz/common.debug"}));
  link.name = "/opt/x/common.debug";
  EXPECT_EQ(AltCandidates(link, "/usr/lib/debug", "/ignored"),
            (std::vector<std::string>{"/usr/lib/debug/.build-id/ab/cdef12.debug",
                                      "/opt/x/common.debug"}));
}

// The stand-in libdw gets when the dwz file is missing must open as DWARF (else libdw would look
// for the file on its own: integration_native_dwz puts a FIFO there), and hold nothing.
TEST(NativeAltFile, StandInOpensAndHoldsNothing) {
  std::string image = AltStandInImage();
  Elf* elf = elf_memory(image.data(), image.size());
  ASSERT_NE(elf, nullptr);
  Dwarf* dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  ASSERT_NE(dwarf, nullptr) << dwarf_errmsg(-1);
  Dwarf_Off next = 0;
  size_t header = 0;
  EXPECT_NE(dwarf_nextcu(dwarf, 0, &next, &header, nullptr, nullptr, nullptr), 0);
  dwarf_end(dwarf);
  elf_end(elf);
}

}  // namespace
}  // namespace jitsym::native
