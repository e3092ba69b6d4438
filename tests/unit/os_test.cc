// The /proc and small-file readers of daemon/os, against this test's own process and files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "daemon/os/proc.h"
#include "daemon/os/process_maps.h"
#include "daemon/os/process_table_cache.h"
#include "daemon/os/small_file.h"

namespace jitsym::os {
namespace {

SmallFileOptions CharDevice() {
  SmallFileOptions o;
  o.allow_char_device = true;
  return o;
}
SmallFileOptions NoFollow() {
  SmallFileOptions o;
  o.no_follow = true;
  return o;
}
SmallFileOptions MaxBytes(size_t n) {
  SmallFileOptions o;
  o.max_bytes = n;
  return o;
}

TEST(ProcessMaps, ParsesLinesAndGroupsFilesIntoImages) {
  const std::string text =
      "55d0c0000000-55d0c0001000 r--p 00000000 08:01 1234   /usr/bin/python3.11\n"
      "7f0000000000-7f0000001000 r--p 00000000 08:01 77 /opt/app/Foo.dll\n"
      "7f0000001000-7f0000003000 r-xp 00001000 08:01 77 /opt/app/Foo.dll\n"
      "7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
      "7f0000004000-7f0000005000 r--p 00003000 08:01 77 /opt/app/Foo.dll\n"
      "7f0000010000-7f0000011000 r--p 00000000 08:01 78 /tmp/Bar Baz.DLL (deleted)\n"
      "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\n"
      "garbage line\n"
      "7f0000020000-7f0000021000 r--p 00002000 08:01 79 /opt/app/NoBase.dll";
  const std::vector<Mapping> maps = ParseProcessMaps(text);
  ASSERT_EQ(maps.size(), 8u);  // all but the garbage line
  EXPECT_EQ(maps[1].start, 0x7f0000000000u);
  EXPECT_EQ(maps[1].perms, "r--p");
  EXPECT_EQ(maps[2].file_offset, 0x1000u);
  EXPECT_EQ(maps[1].inode, 77u);
  EXPECT_EQ(maps[3].path, "");
  EXPECT_EQ(maps[4].path, "/opt/app/Foo.dll");
  EXPECT_EQ(maps[5].path, "/tmp/Bar Baz.DLL");
  EXPECT_TRUE(maps[5].deleted);
  const std::vector<MappedFile> files = MappedFiles(maps);
  ASSERT_EQ(files.size(), 3u);  // python, Foo.dll, Bar Baz.DLL (NoBase has no offset-0 mapping)
  EXPECT_EQ(files[1].path, "/opt/app/Foo.dll");
  EXPECT_EQ(files[1].base, 0x7f0000000000u);
  EXPECT_EQ(files[1].end, 0x7f0000005000u);
  EXPECT_EQ(files[2].path, "/tmp/Bar Baz.DLL");
}

TEST(ProcessMaps, ReadsOwnProcess) {
  auto maps = ReadProcessMaps(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(maps);
  EXPECT_FALSE(maps->empty());
  EXPECT_FALSE(ReadProcessMaps(0x7ffffff0u));
}

TEST(ProcessMaps, MappedFilePathFindsTheMappedInode) {
  const uint32_t pid = static_cast<uint32_t>(::getpid());
  auto maps = ReadProcessMaps(pid);
  ASSERT_TRUE(maps);
  const Mapping* exe = nullptr;
  for (const Mapping& m : *maps) {
    if (!m.path.empty() && m.path.front() == '/' && m.inode != 0 && !m.deleted) {
      exe = &m;
      break;
    }
  }
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(MappedFilePath(pid, exe->path, exe->dev, exe->inode, exe->start, exe->end), exe->path);
  // A path that names no file now: the mapping itself, through map_files (when this process
  // may read it), else none.
  struct stat st {};
  const std::string found =
      MappedFilePath(pid, "/proc/self/exe/../nowhere", exe->dev, exe->inode, exe->start, exe->end);
  if (!found.empty()) {
    ASSERT_EQ(::stat(found.c_str(), &st), 0);
    EXPECT_EQ(st.st_ino, exe->inode);
  }
  // A device that is not the path's (as on btrfs subvolumes, or another user's file with the
  // same inode number): the path is taken only when map_files shows it is the very file mapped.
  const std::string other =
      MappedFilePath(pid, exe->path, exe->dev + 1, exe->inode, exe->start, exe->end);
  char files[96];
  std::snprintf(files, sizeof(files), "/proc/%u/map_files/%llx-%llx", pid,
                static_cast<unsigned long long>(exe->start),
                static_cast<unsigned long long>(exe->end));
  struct stat mapped {};
  EXPECT_EQ(other, ::stat(files, &mapped) == 0 ? exe->path : "");
}

TEST(ProcessIdentity, OwnProcess) {
  const auto me = ReadProcessIdentity(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(me);
  EXPECT_EQ(me->uid, ::getuid());
  EXPECT_GT(me->start_ticks, 0u);
  EXPECT_FALSE(ReadProcessIdentity(0x7ffffff0u));
}

TEST(ProcessIdentity, OutOfDescriptorsIsNotGone) {
  // With no descriptor to spare, /proc/<pid>/stat cannot be opened: that says nothing about the
  // process, and must not read as "no such process".
  const uint32_t me = static_cast<uint32_t>(::getpid());
  EXPECT_TRUE(DescriptorsFree(2));
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  struct rlimit none = saved;
  none.rlim_cur = 0;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &none), 0);
  const ProcessLookup mine = LookUpProcess(me);
  const ProcessLookup nobodys = LookUpProcess(0x7ffffff0u);
  const bool free = DescriptorsFree(1);
  const int free_errno = errno;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_FALSE(mine.identity);
  EXPECT_EQ(mine.error, EMFILE);
  EXPECT_EQ(nobodys.error, EMFILE);  // nothing can be told of any pid
  EXPECT_FALSE(free);
  EXPECT_EQ(free_errno, EMFILE);
  // Descriptors back: the process is there again, and an absent pid is absent.
  EXPECT_TRUE(LookUpProcess(me).identity);
  EXPECT_EQ(LookUpProcess(me).error, 0);
  EXPECT_FALSE(LookUpProcess(0x7ffffff0u).identity);
  EXPECT_EQ(LookUpProcess(0x7ffffff0u).error, 0);
}

class SmallFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/jitsym-small-file-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    return path;
  }
  std::string dir_;
};

TEST_F(SmallFileTest, ReadsWholeFileAndItsOwner) {
  const std::string big(100000, 'x');  // more than one read
  auto file = ReadSmallFile(Write("a", big), {});
  ASSERT_TRUE(file);
  EXPECT_EQ(file->bytes, big);
  EXPECT_EQ(file->st.st_uid, ::getuid());
}

TEST_F(SmallFileTest, SaysWhyItRefuses) {
  SmallFileError error;
  EXPECT_FALSE(ReadSmallFile(dir_ + "/missing", {}, &error));
  EXPECT_EQ(error.kind, SmallFileError::kOpen);
  EXPECT_EQ(error.errno_value, ENOENT);

  EXPECT_FALSE(ReadSmallFile(Write("big", "0123456789"), MaxBytes(9), &error));
  EXPECT_EQ(error.kind, SmallFileError::kTooLarge);
  EXPECT_TRUE(ReadSmallFile(dir_ + "/big", MaxBytes(10)));

  EXPECT_FALSE(ReadSmallFile(dir_, {}, &error));
  EXPECT_EQ(error.kind, SmallFileError::kNotRegular);
  EXPECT_FALSE(ReadSmallFile("/dev/null", {}, &error));
  EXPECT_EQ(error.kind, SmallFileError::kNotRegular);
  EXPECT_TRUE(ReadSmallFile("/dev/null", CharDevice()));

  SmallFileOptions nobody;
  nobody.accept = [](const struct stat& st) { return st.st_uid == 0xfffffffeu; };
  EXPECT_FALSE(ReadSmallFile(Write("owned", "x"), nobody, &error));
  EXPECT_EQ(error.kind, SmallFileError::kRefused);
}

TEST_F(SmallFileTest, NoFollowRefusesSymlinks) {
  const std::string target = Write("target", "secret");
  const std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  EXPECT_TRUE(ReadSmallFile(link, {}));
  SmallFileError error;
  EXPECT_FALSE(ReadSmallFile(link, NoFollow(), &error));
  EXPECT_EQ(error.kind, SmallFileError::kOpen);
  EXPECT_EQ(error.errno_value, ELOOP);
}

TEST_F(SmallFileTest, ProcFilesWhoseSizeIsZeroAreReadWhole) {
  auto maps = ReadSmallFile("/proc/self/maps", {});
  ASSERT_TRUE(maps);
  EXPECT_NE(maps->bytes.find('\n'), std::string::npos);
  // st_size says 0: the bound applies to what is read.
  EXPECT_FALSE(ReadSmallFile("/proc/self/maps", MaxBytes(8)));
}

struct Table {
  uint64_t read_ns = 0;
  int value = 0;
};

TEST(ProcessTableCache, KeepsTheLastTableOfAnExitedProcessAndRereadsAtMostEvery100ms) {
  ProcessTableCache<Table> cache;
  int reads = 0;
  bool alive = true;
  auto read = [&](uint32_t) -> std::shared_ptr<const Table> {
    if (!alive) return nullptr;
    ++reads;
    return std::make_shared<Table>(Table{0, reads});
  };
  bool fresh = false;
  EXPECT_EQ(cache.Get(7, false, &fresh, 1000, read)->value, 1);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(cache.Get(7, true, &fresh, 1000 + 50000000, read)->value, 1);  // too soon
  EXPECT_FALSE(fresh);
  EXPECT_EQ(cache.Get(7, true, &fresh, 1000 + 200000000, read)->value, 2);
  EXPECT_TRUE(fresh);
  alive = false;
  EXPECT_EQ(cache.Get(7, true, &fresh, 1000 + 400000000, read)->value, 2);  // exited: kept
  EXPECT_FALSE(fresh);
  EXPECT_EQ(cache.Get(8, false, &fresh, 0, read), nullptr);
}

}  // namespace
}  // namespace jitsym::os
