// Parsers of /proc namespace and mapping facts, and the readers on the test's own process.
#include "daemon/os/namespaces.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace jitsym::os {
namespace {

TEST(ParseStatus, ContainerProcessHasItsNamespacePidLast) {
  const auto s = ParseStatus(
      "Name:\tnode\nTgid:\t51234\nPid:\t51240\nUid:\t100000\t100000\t100000\t100000\n"
      "NStgid:\t51234\t1\nNSpid:\t51240\t7\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->tgid, 51234u);
  EXPECT_EQ(s->uid, 100000u);
  EXPECT_EQ(s->nstgid, (std::vector<uint32_t>{51234, 1}));
  EXPECT_EQ(s->nspid, (std::vector<uint32_t>{51240, 7}));
}

TEST(ParseStatus, MissingOrMalformedIdentityIsRefused) {
  EXPECT_FALSE(ParseStatus("Name:\tx\nUid:\t0\t0\t0\t0\n"));
  EXPECT_FALSE(ParseStatus("Tgid:\tabc\nUid:\t0\n"));
  EXPECT_FALSE(ParseStatus(""));
  const auto s = ParseStatus("Tgid:\t5\nUid:\t7 7 7 7\nNSpid:\t5 x\n");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->nspid.empty());
}

TEST(ParseCgroupV2, TakesTheUnifiedLine) {
  EXPECT_EQ(ParseCgroupV2("12:cpu:/a\n0::/system.slice/docker-abc.scope\n"),
            "/system.slice/docker-abc.scope");
  EXPECT_EQ(ParseCgroupV2("1:name=systemd:/x\n"), "");
}

TEST(JitdumpMappings, FindsMarkersOnceEach) {
  const std::string maps =
      "7f0000000000-7f0000001000 r-xp 00000000 08:01 1234 /home/u/jit-77.dump\n"
      "7f0000002000-7f0000003000 r-xp 00000000 08:01 1234 /home/u/jit-77.dump\n"
      "7f0000004000-7f0000005000 r-xp 00000000 00:2a 99 /tmp/jit-1.dump (deleted)\n"
      "7f0000006000-7f0000007000 r-xp 00000000 08:01 55 /tmp/jit-x.dump\n"
      "7f0000008000-7f0000009000 r-xp 00000000 08:01 56 /usr/lib/libc.so.6\n"
      "7f000000a000-7f000000b000 r-xp 00000000 08:01 57 /tmp/notjit-1.dump\n";
  const auto m = JitdumpMappings(maps);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].path, "/home/u/jit-77.dump");
  EXPECT_EQ(m[0].dev, makedev(8, 1));
  EXPECT_EQ(m[0].ino, 1234u);
  EXPECT_EQ(m[0].start, 0x7f0000000000u);
  EXPECT_EQ(m[1].path, "/tmp/jit-1.dump");
  EXPECT_EQ(m[1].dev, makedev(0, 0x2a));
}

TEST(Readers, OwnProcessMapsAndHoldsItsFile) {
  char path[] = "/tmp/jitsym-ns-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  const uint32_t self = static_cast<uint32_t>(::getpid());
  EXPECT_TRUE(HoldsOpen(self, st.st_dev, st.st_ino));
  EXPECT_FALSE(MapsFile(self, st.st_dev, st.st_ino));
  void* map = ::mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  EXPECT_TRUE(MapsFile(self, st.st_dev, st.st_ino));
  ::munmap(map, 4096);
  ::close(fd);
  EXPECT_FALSE(HoldsOpen(self, st.st_dev, st.st_ino));
  ::unlink(path);

  const auto facts = ReadNamespaceFacts(self);
  ASSERT_TRUE(facts);
  EXPECT_EQ(facts->tgid, self);
  EXPECT_NE(facts->pid_ns, 0u);
  EXPECT_EQ(facts->pid_ns, SelfNamespaces().pid_ns);
  EXPECT_EQ(ThreadGroupOf(self), self);
  EXPECT_FALSE(ListThreads(self).empty());
}

}  // namespace
}  // namespace jitsym::os
