// The pure parts of split DWARF: where a skeleton unit's .dwo is looked for (DwoCandidates: beside
// the binary, beside the skeletons' file, under comp_dir), the .dwp index and string tables, the
// names a copy may be placed at, and the trust rule for files libdw opens itself (file_trust.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "daemon/native/dwp_package.h"
#include "daemon/native/file_trust.h"
#include "daemon/native/split_units.h"

namespace jitsym::native {
namespace {

using Paths = std::vector<std::string>;

TEST(DwoCandidates, BesideTheSkeletonFileThenUnderCompDir) {
  EXPECT_EQ(DwoCandidates("", "/opt/app/bin/", "/home/u/build", "obj/a.dwo"),
            (Paths{"/opt/app/bin/obj/a.dwo", "/home/u/build/obj/a.dwo"}));
}

TEST(DwoCandidates, DirectoriesWithoutTrailingSlash) {
  EXPECT_EQ(DwoCandidates("", "/opt/app/bin", "/home/u/build/", "a.dwo"),
            (Paths{"/opt/app/bin/a.dwo", "/home/u/build/a.dwo"}));
}

TEST(DwoCandidates, AnAbsoluteNameIsTheOnlyPlace) {
  EXPECT_EQ(DwoCandidates("", "/opt/app/bin/", "/home/u/build", "/abs/a.dwo"),
            (Paths{"/abs/a.dwo"}));
}

TEST(DwoCandidates, ARelativeCompDirIsUnderTheSkeletonFilesDirectory) {
  EXPECT_EQ(DwoCandidates("", "/opt/app/bin/", "build", "a.dwo"),
            (Paths{"/opt/app/bin/a.dwo", "/opt/app/bin/build/a.dwo"}));
}

TEST(DwoCandidates, NoCompDir) {
  EXPECT_EQ(DwoCandidates("", "/opt/app/bin/", "", "a.dwo"), (Paths{"/opt/app/bin/a.dwo"}));
}

TEST(DwoCandidates, UnknownSkeletonDirectory) {
  EXPECT_EQ(DwoCandidates("", "", "/home/u/build", "a.dwo"), (Paths{"/home/u/build/a.dwo"}));
  EXPECT_EQ(DwoCandidates("", "", "build", "a.dwo"), Paths{});
}

TEST(DwoCandidates, TheSamePlaceOnce) {
  EXPECT_EQ(DwoCandidates("", "/home/u/build/", "/home/u/build", "a.dwo"),
            (Paths{"/home/u/build/a.dwo"}));
}

TEST(DwoCandidates, NoNameNoPlace) { EXPECT_EQ(DwoCandidates("", "/a/", "/b", ""), Paths{}); }

TEST(DwoCandidates, BesideTheBinaryBeforeBesideItsDebugFile) {
  EXPECT_EQ(
      DwoCandidates("/opt/app/bin/", "/usr/lib/debug/opt/app/bin/", "/home/u/build", "a.dwo"),
      (Paths{"/opt/app/bin/a.dwo", "/usr/lib/debug/opt/app/bin/a.dwo", "/home/u/build/a.dwo"}));
  EXPECT_EQ(DwoCandidates("/opt/app/bin/", "/opt/app/bin/", "", "a.dwo"),
            (Paths{"/opt/app/bin/a.dwo"}));
}

TEST(OwnerCannotChange, RootsAloneOffFuse) {
  constexpr int64_t kExt4 = 0xEF53, kFuse = 0x65735546;
  EXPECT_TRUE(OwnerCannotChange({0, S_IFREG | 0644, kExt4}));
  EXPECT_TRUE(OwnerCannotChange({0, S_IFDIR | 0755, kExt4}));
  std::string why;
  EXPECT_FALSE(OwnerCannotChange({1000, S_IFREG | 0644, kExt4}, &why));
  EXPECT_EQ(why, "owned by uid 1000");
  EXPECT_FALSE(OwnerCannotChange({0, S_IFREG | 0664, kExt4}, &why));
  EXPECT_EQ(why, "writable by group or others");
  EXPECT_FALSE(OwnerCannotChange({0, S_IFDIR | 01777, kExt4}, &why));  // /tmp: anyone's files
  EXPECT_TRUE(OwnerCannotChange({0, S_IFLNK | 0777, kExt4}));          // /lib -> usr/lib
  EXPECT_FALSE(OwnerCannotChange({1000, S_IFLNK | 0777, kExt4}));
  EXPECT_FALSE(OwnerCannotChange({0, S_IFREG | 0644, kFuse}, &why));
  EXPECT_EQ(why, "on a FUSE file system");
}

TEST(PathOwnerCannotChange, EveryDirectoryOnTheWay) {
  std::string why;
  // /usr/bin/env and its directories are root's on any system these tests run on.
  EXPECT_TRUE(PathOwnerCannotChange("/usr/bin/env", &why)) << why;
  EXPECT_TRUE(PathOwnerCannotChange("/bin/sh", &why)) << why;  // through root's links
  char dir[] = "/tmp/jitsym-trust-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  // It leads to root's file, through a directory its owner can replace with a link.
  EXPECT_FALSE(PathOwnerCannotChange(std::string(dir) + "/../../usr/bin/env", &why));
  EXPECT_FALSE(PathOwnerCannotChange(dir, &why));  // /tmp is writable by others
  EXPECT_NE(why.find("/tmp"), std::string::npos) << why;
  EXPECT_FALSE(PathOwnerCannotChange(std::string(dir) + "/absent.dwo", &why));
  EXPECT_NE(why.find("absent.dwo"), std::string::npos) << why;
  rmdir(dir);
}

TEST(DirectoryOfFd, TheResolvedDirectoryWithATrailingSlash) {
  char dir[] = "/tmp/jitsym-split-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/f";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  char real[4096];
  ASSERT_NE(realpath(dir, real), nullptr);
  EXPECT_EQ(DirectoryOfFd(fileno(f)), std::string(real) + "/");
  std::fclose(f);
  unlink(file.c_str());
  rmdir(dir);
  EXPECT_EQ(DirectoryOfFd(-1), "");
}

// A .debug_cu_index, little-endian: header, hash table, row numbers, column ids, offsets, sizes.
struct IndexBuilder {
  std::string bytes;
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>(v >> (8 * i)));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(v >> (8 * i)));
  }
};

// Version 5, columns .debug_info.dwo (1) and .debug_abbrev.dwo (3), units 0xaa (row 2) and
// 0xbb (row 1) in 4 slots.
std::string TwoUnits(uint32_t version_word = 5, uint32_t second_row = 1) {
  IndexBuilder b;
  b.U32(version_word);
  b.U32(2);
  b.U32(2);
  b.U32(4);
  b.U64(0);
  b.U64(0xaa);
  b.U64(0xbb);
  b.U64(0);
  b.U32(0);
  b.U32(2);
  b.U32(second_row);
  b.U32(0);
  b.U32(1);  // column ids
  b.U32(3);
  b.U32(100);  // offsets: row 1
  b.U32(10);
  b.U32(0);  // row 2
  b.U32(0);
  b.U32(50);  // sizes: row 1
  b.U32(5);
  b.U32(100);  // row 2
  b.U32(10);
  return b.bytes;
}

TEST(DwpIndex, UnitsAndTheirContributions) {
  std::string error;
  auto index = ParseDwpIndex(TwoUnits(), false, &error);
  ASSERT_TRUE(index) << error;
  EXPECT_EQ(index->version, 5u);
  ASSERT_EQ(index->units.size(), 2u);
  EXPECT_EQ(index->units[0].id, 0xaau);
  ASSERT_EQ(index->units[0].parts.size(), 2u);
  EXPECT_EQ(index->units[0].parts[0].section, 1u);
  EXPECT_EQ(index->units[0].parts[0].offset, 0u);
  EXPECT_EQ(index->units[0].parts[0].size, 100u);
  EXPECT_EQ(index->units[1].id, 0xbbu);
  EXPECT_EQ(index->units[1].parts[1].section, 3u);
  EXPECT_EQ(index->units[1].parts[1].offset, 10u);
  EXPECT_EQ(index->units[1].parts[1].size, 5u);
  EXPECT_EQ(DwpSectionName(5, 8), ".debug_rnglists.dwo");
  EXPECT_EQ(DwpSectionName(2, 6), ".debug_str_offsets.dwo");
  EXPECT_EQ(DwpSectionName(2, 2), "");  // .debug_types: not read
}

TEST(DwpIndex, Version2) {
  std::string error;
  auto index = ParseDwpIndex(TwoUnits(2), false, &error);
  ASSERT_TRUE(index) << error;
  EXPECT_EQ(index->version, 2u);
}

TEST(DwpIndex, MalformedIsAnErrorWithItsOffset) {
  std::string error;
  EXPECT_FALSE(ParseDwpIndex(TwoUnits(7), false, &error));
  EXPECT_NE(error.find("offset 0"), std::string::npos) << error;
  EXPECT_FALSE(ParseDwpIndex(TwoUnits(5, 2), false, &error));  // row 2 twice
  EXPECT_NE(error.find("row 2"), std::string::npos) << error;
  EXPECT_FALSE(ParseDwpIndex(TwoUnits(5, 3), false, &error));  // row past the units
  std::string all = TwoUnits();
  for (size_t n = 0; n < all.size(); ++n) {
    EXPECT_FALSE(ParseDwpIndex(all.substr(0, n), false, &error)) << n;  // every truncation
  }
  EXPECT_FALSE(ParseDwpIndex("", false, &error));
}

TEST(DwpIndex, BigEndian) {
  std::string le = TwoUnits();
  std::string be;
  // Swap each field: the layout is 4 u32, 4 u64, then u32s.
  size_t pos = 0;
  auto swap = [&](size_t n) {
    be.append(std::string(le.rbegin() + static_cast<ptrdiff_t>(le.size() - pos - n),
                          le.rbegin() + static_cast<ptrdiff_t>(le.size() - pos)));
    pos += n;
  };
  for (int i = 0; i < 4; ++i) swap(4);
  for (int i = 0; i < 4; ++i) swap(8);
  while (pos < le.size()) swap(4);
  std::string error;
  // Version 5 big-endian is the u16 5 then u16 0: 0x00050000 as a u32.
  be[0] = 0, be[1] = 5, be[2] = 0, be[3] = 0;
  auto index = ParseDwpIndex(be, true, &error);
  ASSERT_TRUE(index) << error;
  ASSERT_EQ(index->units.size(), 2u);
  EXPECT_EQ(index->units[1].id, 0xbbu);
  EXPECT_EQ(index->units[1].parts[0].offset, 100u);
}

TEST(CompactStrings, OnlyTheUnitsStringsRenumbered) {
  const std::string strings("zero\0one\0two\0three\0", 19);
  IndexBuilder
      b;  // a DWARF 5 header (length, version 5, padding), then offsets of three, one, three
  b.U32(16);
  b.U32(5);
  b.U32(13);
  b.U32(5);
  b.U32(13);
  std::string offsets, out;
  ASSERT_TRUE(CompactStrings(b.bytes, strings, false, true, &offsets, &out));
  EXPECT_EQ(out, std::string("three\0one\0", 10));
  IndexBuilder want;
  want.U32(16);
  want.U32(5);
  want.U32(0);
  want.U32(6);
  want.U32(0);
  EXPECT_EQ(offsets, want.bytes);
  // GNU DWARF 4: no header.
  ASSERT_TRUE(CompactStrings(b.bytes.substr(8), strings, false, false, &offsets, &out));
  EXPECT_EQ(offsets, want.bytes.substr(8));
}

TEST(CompactStrings, MalformedIsRefused) {
  const std::string strings("zero\0one", 8);  // "one" not terminated
  std::string offsets, out;
  IndexBuilder past;
  past.U32(100);
  EXPECT_FALSE(CompactStrings(past.bytes, strings, false, false, &offsets, &out));
  IndexBuilder unterminated;
  unterminated.U32(5);
  EXPECT_FALSE(CompactStrings(unterminated.bytes, strings, false, false, &offsets, &out));
  EXPECT_FALSE(CompactStrings("abc", strings, false, false, &offsets, &out));  // not 4-byte entries
  IndexBuilder dwarf64;
  dwarf64.U32(0xffffffffu);
  dwarf64.U32(0);
  EXPECT_FALSE(CompactStrings(dwarf64.bytes, strings, false, true, &offsets, &out));
}

TEST(SafeRelativeName, OnlyNamesThatStayUnderTheDirectory) {
  EXPECT_TRUE(SafeRelativeName("a.dwo"));
  EXPECT_TRUE(SafeRelativeName("obj/x.dir/a.dwo"));
  EXPECT_FALSE(SafeRelativeName(""));
  EXPECT_FALSE(SafeRelativeName("/abs/a.dwo"));
  EXPECT_FALSE(SafeRelativeName("../a.dwo"));
  EXPECT_FALSE(SafeRelativeName("obj/../../a.dwo"));
  EXPECT_FALSE(SafeRelativeName("obj//a.dwo"));
  EXPECT_FALSE(SafeRelativeName("./a.dwo"));
  EXPECT_FALSE(SafeRelativeName("obj/"));
  EXPECT_FALSE(SafeRelativeName(std::string_view("a\0b", 3)));
  EXPECT_FALSE(SafeRelativeName(std::string(2000, 'a')));
}

}  // namespace
}  // namespace jitsym::native
