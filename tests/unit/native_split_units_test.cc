// Split DWARF's file side: where a skeleton unit's .dwo is looked for (DwoCandidates: beside the
// binary, beside the skeletons' file, under comp_dir), and how a companion file is read
// (ReadCompanion: no FIFO, a bound, root's or the binary owner's files only).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

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

class Companion : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(mkdtemp(dir_), nullptr);
    path_ = std::string(dir_) + "/a.dwo";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_);
  }
  void Write(const std::string& bytes) {
    FILE* f = std::fopen(path_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  char dir_[32] = "/tmp/jitsym-companion-XXXXXX";
  std::string path_;
};

TEST_F(Companion, ReadsTheBytesOfItsOwnersFile) {
  Write(
      "\x7f"
      "ELF and the rest");
  std::string bytes, note;
  ASSERT_TRUE(ReadCompanion(path_, geteuid(), 1024, &bytes, &note)) << note;
  EXPECT_EQ(bytes,
            "\x7f"
            "ELF and the rest");
  EXPECT_EQ(note, "");
}

TEST_F(Companion, AnAbsentFileIsNoNote) {
  std::string bytes, note;
  EXPECT_FALSE(ReadCompanion(path_, geteuid(), 1024, &bytes, &note));
  EXPECT_EQ(note, "");
}

TEST_F(Companion, AFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  std::string bytes, note;
  EXPECT_FALSE(ReadCompanion(path_, geteuid(), 1024, &bytes, &note));
  EXPECT_EQ(note, path_ + " is not a regular file: not read");
}

TEST_F(Companion, PastTheBoundIsRefused) {
  Write(std::string(2000, 'x'));
  std::string bytes, note;
  EXPECT_FALSE(ReadCompanion(path_, geteuid(), 1024, &bytes, &note));
  EXPECT_EQ(note, path_ + ": 2000 bytes: not read (at most 1024)");
  EXPECT_EQ(bytes, "");
}

TEST_F(Companion, AnotherUsersFileIsNotReadForTheBinarysOwner) {
  Write("secret");
  std::string bytes, note;
  // The binary's owner is uid 4242; the file is this process's (root's files alone are read
  // for anyone, so as root the file is given away first).
  if (geteuid() == 0) {
    ASSERT_EQ(chown(path_.c_str(), 4343, 4343), 0);
    EXPECT_FALSE(ReadCompanion(path_, 4242, 1024, &bytes, &note));
    EXPECT_EQ(note, "");  // as absent: the asker is not told it is there
    EXPECT_EQ(bytes, "");
    EXPECT_TRUE(ReadCompanion(path_, 4343, 1024, &bytes, &note)) << note;
  } else {
    EXPECT_FALSE(ReadCompanion(path_, geteuid() + 1, 1024, &bytes, &note));
    EXPECT_EQ(note, "");
  }
}

}  // namespace
}  // namespace jitsym::native
