// Perfinfo maps followed as they grow, charged to their owner's quota, and the placed images a
// snapshot derives from them.
#include "daemon/query/perfinfo_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "daemon/query/process_snapshots.h"
#include "daemon/security/limits.h"

namespace jitsym::query {
namespace {

class PerfinfoFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/perfinfo-files-test-XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(uint32_t pid) const {
    return dir_ + "/perfinfo-" + std::to_string(pid) + ".map";
  }
  void Append(uint32_t pid, const std::string& text) {
    std::ofstream(Path(pid), std::ios::app) << text;
  }
  static std::string Line(const std::string& name, uint64_t base) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(base));
    return "ImageLoad;/app/" + name + ".dll;{m};" + hex + ";\n";
  }
  os::ProcessIdentity Me(uint64_t start = 1) const { return {start, ::getuid()}; }

  std::string dir_;
};

TEST_F(PerfinfoFilesTest, ReadsOnlyWhatWasAppendedAndKeepsOneImagePerBase) {
  PerfinfoFiles files({dir_, nullptr});
  EXPECT_EQ(files.Read(7, Me()), nullptr);  // no file
  Append(7, "RuntimeVersion;8.0.0;\n" + Line("B", 0x20000) + Line("A", 0x10000));
  auto first = files.Read(7, Me());
  ASSERT_TRUE(first);
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].name, "A");
  EXPECT_EQ((*first)[1].name, "B");
  EXPECT_EQ(files.Read(7, Me()), first);  // nothing new: the same table, not read again

  // A line being written is not taken in part; a later line for a base replaces the earlier.
  Append(7, Line("C", 0x30000) + "ImageLoad;/app/B2.dll;{m};0x2");
  auto second = files.Read(7, Me());
  ASSERT_EQ(second->size(), 3u);
  EXPECT_EQ((*second)[1].name, "B");
  Append(7, "0000;\n");
  auto third = files.Read(7, Me());
  ASSERT_EQ(third->size(), 3u);
  EXPECT_EQ((*third)[1].name, "B2");
  EXPECT_EQ((*third)[1].base, 0x20000u);
  EXPECT_EQ((*first)[1].name, "B");  // tables already handed out never change
}

TEST_F(PerfinfoFilesTest, AnotherProcessOrAnotherFileIsReadAfresh) {
  PerfinfoFiles files({dir_, nullptr});
  Append(8, Line("Old", 0x10000));
  ASSERT_EQ(files.Read(8, Me(1))->size(), 1u);
  // The pid names another process now: its file is read from the start.
  std::filesystem::remove(Path(8));
  Append(8, Line("New", 0x50000));
  auto fresh = files.Read(8, Me(2));
  ASSERT_EQ(fresh->size(), 1u);
  EXPECT_EQ((*fresh)[0].name, "New");
  // Rewritten shorter in place: read from the start as well.
  { std::ofstream(Path(8), std::ios::trunc) << Line("X", 0x60000); }
  auto rewritten = files.Read(8, Me(2));
  ASSERT_EQ(rewritten->size(), 1u);
  EXPECT_EQ((*rewritten)[0].name, "X");
  // A symlink is never followed.
  std::filesystem::remove(Path(8));
  std::filesystem::create_symlink(dir_ + "/elsewhere", Path(8));
  Append(9, Line("Elsewhere", 0x70000));
  std::filesystem::rename(Path(9), dir_ + "/elsewhere");
  EXPECT_EQ(files.Read(8, Me(3)), nullptr);
}

TEST_F(PerfinfoFilesTest, NotBelievedForAnotherOwner) {
  PerfinfoFiles files({dir_, nullptr});
  Append(10, Line("A", 0x10000));
  const uint32_t someone_else = ::getuid() == 0 ? 4242 : ::getuid() + 1;
  if (::getuid() != 0) {
    EXPECT_EQ(files.Read(10, {1, someone_else}), nullptr);
  } else {
    ASSERT_EQ(::chown(Path(10).c_str(), 4243, 4243), 0);
    EXPECT_EQ(files.Read(10, {1, someone_else}), nullptr);  // neither root's nor the owner's
    EXPECT_NE(files.Read(10, {1, 4243}), nullptr);
  }
}

TEST_F(PerfinfoFilesTest, BytesAreChargedToTheOwnerAndReleasedWithTheTable) {
  security::Limits limits;
  limits.user_bytes = 4096;
  auto ledger = std::make_shared<security::LimitLedger>(limits);
  std::string text;
  for (int i = 0; i < 200; ++i) text += Line("I" + std::to_string(i), 0x10000 * (i + 1));
  ASSERT_GT(text.size(), 4096u);
  {
    PerfinfoFiles files({dir_, ledger});
    Append(11, text);
    auto images = files.Read(11, Me());
    ASSERT_TRUE(images);
    // Read up to the quota: the lines within it, and nothing more, now or later.
    EXPECT_GT(images->size(), 50u);
    EXPECT_LT(images->size(), 200u);
    std::string which;
    EXPECT_EQ(ledger->ByteAllowance(::getuid(), 0, &which), 0u);
    Append(11, Line("Late", 0x7000000));
    EXPECT_EQ(files.Read(11, Me())->size(), images->size());
  }
  std::string which;
  EXPECT_EQ(ledger->ByteAllowance(::getuid(), 0, &which), 4096u);  // released
}

TEST_F(PerfinfoFilesTest, MergeAgreesWithBruteForce) {
  std::mt19937 rng(3);
  PerfinfoFiles files({dir_, nullptr});
  std::map<uint64_t, std::string> expected;  // base -> the last line's name
  for (int round = 0; round < 30; ++round) {
    std::string text;
    for (int i = 0, n = static_cast<int>(rng() % 50); i < n; ++i) {
      const uint64_t base = 0x1000 * (1 + rng() % 300);
      const std::string name = "R" + std::to_string(round) + "_" + std::to_string(i);
      text += Line(name, base);
      expected[base] = name;
    }
    Append(12, text);
    auto images = files.Read(12, Me());
    if (expected.empty()) continue;
    ASSERT_TRUE(images);
    ASSERT_EQ(images->size(), expected.size());
    auto it = expected.begin();
    for (const PlacedImage& img : *images) {
      ASSERT_EQ(img.base, it->first);
      ASSERT_EQ(img.name, it->second);
      ++it;
    }
  }
}

TEST(ProcessSnapshotPlaced, MappedFilesBoundAndWinOverPerfinfoLines) {
  ProcessSnapshot s;
  s.images = {{"", 0x1000, 0x2000}, {"Mapped", 0x5000, 0x6000}};
  s.perfinfo = std::make_shared<const std::vector<PlacedImage>>(
      std::vector<PlacedImage>{{"Logged", 0x3000, 0}, {"Same", 0x5000, 0}, {"Far", 0x9000, 0}});
  EXPECT_EQ(s.PlacedAt(0x0fff), nullptr);
  EXPECT_EQ(s.PlacedAt(0x1800)->base, 0x1000u);  // a native library
  EXPECT_EQ(s.PlacedAt(0x3100)->name, "Logged");
  EXPECT_EQ(s.PlacedAt(0x5100)->name, "Mapped");  // same base: the mapping wins
  EXPECT_EQ(s.PlacedAt(0x7000)->name, "Mapped");  // past its end: the caller's miss
  EXPECT_EQ(s.PlacedAt(0x9000)->name, "Far");
  std::vector<std::string> all;
  s.ForEachPlaced([&](const PlacedImage& p) { all.push_back(p.name); });
  EXPECT_EQ(all, (std::vector<std::string>{"", "Mapped", "Logged", "Far"}));
}

}  // namespace
}  // namespace jitsym::query
