// dwz's alt file: the .gnu_debugaltlink parse, and where the file is looked for.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace jitsym::native
