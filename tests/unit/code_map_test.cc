#include "daemon/index/code_map.h"

#include <gtest/gtest.h>

namespace jitsym::index {
namespace {

TEST(CodeMapTest, LineTableGivesThePositionOfTheAddress) {
  CodeMap map;
  const uint32_t file = map.Intern("app.js");
  const LineEntry lines[] = {{0, 10, 1, file}, {16, 11, 5, file}, {40, 12, 9, file}};
  map.Add(0x1000, 64, 100, map.Intern("JS:*f"), lines);
  map.Add(0x2000, 64, 100, map.Intern("JS:*g"));
  auto snap = map.Publish();
  auto at = [&](uint64_t addr) { return snap->Find(addr, std::nullopt); };
  EXPECT_EQ(at(0x1000)->line, 10u);
  EXPECT_EQ(at(0x100f)->line, 10u);
  EXPECT_EQ(at(0x1010)->line, 11u);
  EXPECT_EQ(at(0x1010)->column, 5u);
  EXPECT_EQ(at(0x103f)->line, 12u);
  EXPECT_EQ(at(0x103f)->file, "app.js");
  EXPECT_EQ(at(0x103f)->name, "JS:*f");
  EXPECT_EQ(at(0x103f)->start, 0x1000u);
  EXPECT_EQ(at(0x2000)->line, 0u);  // no line table
  EXPECT_TRUE(at(0x2000)->file.empty());
  EXPECT_FALSE(at(0x1040).has_value());
}

TEST(CodeMapTest, NamesAreStoredOnce) {
  CodeMap map;
  EXPECT_EQ(map.Intern("same"), map.Intern("same"));
  EXPECT_NE(map.Intern("same"), map.Intern("other"));
  EXPECT_EQ(map.name_bytes(), 9u);
}

TEST(CodeMapTest, RemovedCodeIsUnknownFromThenOn) {
  CodeMap map;
  map.Add(0x1000, 16, 10, map.Intern("f"));
  map.Remove(0x1000, 16, 20);
  auto snap = map.Publish();
  EXPECT_EQ(snap->Find(0x1008, 15)->name, "f");
  EXPECT_FALSE(snap->Find(0x1008, 25).has_value());
  EXPECT_FALSE(snap->Find(0x1008, std::nullopt).has_value());
}

}  // namespace
}  // namespace jitsym::index
