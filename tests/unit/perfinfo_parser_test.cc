// The perfinfo map parser: which ImageLoad lines place a ReadyToRun image.
#include "daemon/formats/perfinfo/perfinfo_parser.h"

#include <gtest/gtest.h>

namespace jitsym::perfinfo {
namespace {

TEST(PerfInfo, ImageLoadLinesWithABase) {
  const auto images = ParsePerfInfo(
      "ImageLoad;/usr/share/dotnet/System.Runtime.dll;{11111111-2222-3333-4444-555555555555};"
      "0x7f1234560000;\n"
      "ImageLoad;/app/jit-only.dll;{11111111-2222-3333-4444-555555555556};(nil);\r\n"
      "ImageLoad;/app/zero.dll;{x};0000000000000000;\n"
      "RuntimeVersion;8.0.0;\n"
      "ImageLoad;/app/NoPrefix.dll;{y};7F0000001000;\r\n"
      "ImageLoad;short\n");
  ASSERT_EQ(images.size(), 2u);
  EXPECT_EQ(images[0].path, "/usr/share/dotnet/System.Runtime.dll");
  EXPECT_EQ(images[0].mvid, "{11111111-2222-3333-4444-555555555555}");
  EXPECT_EQ(images[0].base, 0x7f1234560000u);
  EXPECT_EQ(images[1].base, 0x7f0000001000u);
}

TEST(PerfInfo, EmptyAndForeignTextHaveNoImages) {
  EXPECT_TRUE(ParsePerfInfo("").empty());
  EXPECT_TRUE(ParsePerfInfo("\n\r\nRuntimeVersion;8.0.0;\n").empty());
  // Wider than 64 bits, or not hex: not an address.
  EXPECT_TRUE(ParsePerfInfo("ImageLoad;/a.dll;{m};0x10000000000000000;\n"
                            "ImageLoad;/b.dll;{m};0x7f00zz;\n")
                  .empty());
}

}  // namespace
}  // namespace jitsym::perfinfo
