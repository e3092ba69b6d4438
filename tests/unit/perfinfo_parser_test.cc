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

namespace jitsym::perfinfo {
namespace {

std::string Line(int i) {
  return "ImageLoad;/app/Image" + std::to_string(i) + ".dll;{m};0x" + std::to_string(7000 + i) +
         "0000;\n";
}

TEST(PerfInfoParser, AnySplitGivesTheWholeParse) {
  std::string text = "RuntimeVersion;8.0.0;\n";
  for (int i = 0; i < 40; ++i) text += Line(i);
  const std::vector<PerfInfoImage> whole = ParsePerfInfo(text);
  ASSERT_EQ(whole.size(), 40u);
  for (size_t step : {1u, 2u, 7u, 63u, 4096u}) {
    PerfInfoParser parser;
    std::vector<PerfInfoImage> got;
    for (size_t at = 0; at < text.size(); at += step) {
      parser.Feed(std::string_view(text).substr(at, step), &got);
    }
    ASSERT_EQ(got.size(), whole.size()) << "step " << step;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].path, whole[i].path);
      EXPECT_EQ(got[i].base, whole[i].base);
    }
    EXPECT_EQ(parser.consumed(), text.size());
    EXPECT_EQ(parser.lines(), 41u);
  }
}

TEST(PerfInfoParser, ALineIsTakenOnlyOnceItsNewlineCame) {
  PerfInfoParser parser;
  std::vector<PerfInfoImage> got;
  const std::string line = Line(1);
  parser.Feed(std::string_view(line).substr(0, line.size() - 1), &got);
  EXPECT_TRUE(got.empty());  // "...0x70010000;" may still be "...0x700100001;" once whole
  EXPECT_EQ(parser.consumed(), 0u);
  parser.Feed("\n", &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].base, 0x70010000u);
  EXPECT_EQ(parser.consumed(), line.size());
}

TEST(PerfInfoParser, OverlongLinesAreSkippedWithBoundedMemory) {
  PerfInfoParser parser;
  std::vector<PerfInfoImage> got;
  const std::string prefix = Line(1);
  parser.Feed(prefix, &got);
  // A "path" of 1 MiB, fed in pieces, then a good line.
  parser.Feed("ImageLoad;/", &got);
  const std::string junk(64 * 1024, 'x');
  for (int i = 0; i < 16; ++i) parser.Feed(junk, &got);
  parser.Feed(".dll;{m};0x10000;\n", &got);
  parser.Feed(Line(2), &got);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].path, "/app/Image2.dll");
  EXPECT_EQ(parser.long_lines(), 1u);
  EXPECT_EQ(parser.first_long_line(), prefix.size());
  // Exactly the bound still parses.
  std::string edge = "ImageLoad;/" + std::string(PerfInfoParser::kMaxLineBytes, 'y');
  edge.resize(PerfInfoParser::kMaxLineBytes - std::string(".dll;{m};0x20000;").size());
  edge += ".dll;{m};0x20000;";
  ASSERT_EQ(edge.size(), PerfInfoParser::kMaxLineBytes);
  parser.Feed(edge + "\n", &got);
  EXPECT_EQ(got.size(), 3u);
  parser.Feed("y" + edge + "\n", &got);
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(parser.long_lines(), 2u);
}

}  // namespace
}  // namespace jitsym::perfinfo
