// The pure access rules (daemon/security/access_rules.h) with made-up facts, and the path walk
// that gathers the facts for files, with a symlink out of a readable directory.
#include "daemon/security/access_rules.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "daemon/security/path_walk.h"

namespace jitsym::security {
namespace {

constexpr uint32_t kAlice = 1001, kBob = 1002, kStaff = 50;

PeerFacts Bob(std::vector<uint32_t> groups = {}) { return PeerFacts{kBob, kBob, groups, false}; }
PeerFacts Root() { return PeerFacts{0, 0, {}, true}; }
InodeFacts Inode(uint32_t uid, uint32_t gid, mode_t mode) { return InodeFacts{uid, gid, mode}; }

TEST(ModeAllows, ExactlyOneClassApplies) {
  EXPECT_TRUE(ModeAllows(Bob(), Inode(kBob, kBob, 0400), 4));
  EXPECT_FALSE(ModeAllows(Bob(), Inode(kBob, kBob, 0044), 4));  // owner class, no owner bit
  EXPECT_TRUE(ModeAllows(Bob({kStaff}), Inode(kAlice, kStaff, 0640), 4));
  EXPECT_FALSE(ModeAllows(Bob({kStaff}), Inode(kAlice, kStaff, 0604), 4));  // group class
  EXPECT_FALSE(ModeAllows(Bob(), Inode(kAlice, kStaff, 0640), 4));
  EXPECT_TRUE(ModeAllows(Bob(), Inode(kAlice, kAlice, 0644), 4));
  EXPECT_TRUE(ModeAllows(Bob(), Inode(kAlice, kAlice, 0711), 1));
  EXPECT_FALSE(ModeAllows(Bob(), Inode(kAlice, kAlice, 0744), 1));
  EXPECT_TRUE(ModeAllows(Root(), Inode(kAlice, kAlice, 0000), 4));  // the trusted read as root
}

TEST(DecideFileRead, EveryDirectorySearchedAndTheFileRead) {
  const InodeFacts root_dir = Inode(0, 0, 0755);
  const InodeFacts alice_home = Inode(kAlice, kAlice, 0700);
  const InodeFacts bob_home = Inode(kBob, kBob, 0700);
  const InodeFacts binary = Inode(kAlice, kAlice, 0755);
  // /home/alice/prog: the 0700 home stops bob, not alice.
  PathFacts through_alice{{root_dir, root_dir, alice_home}, binary};
  EXPECT_EQ(DecideFileRead(Bob(), through_alice), FileAccess::kDenied);
  EXPECT_EQ(DecideFileRead(PeerFacts{kAlice, kAlice, {}, false}, through_alice),
            FileAccess::kAllowed);
  EXPECT_EQ(DecideFileRead(Root(), through_alice), FileAccess::kAllowed);
  // /home/bob/link -> /home/alice/prog: bob's own directories, then alice's home.
  PathFacts via_symlink{{root_dir, root_dir, bob_home, root_dir, root_dir, alice_home}, binary};
  EXPECT_EQ(DecideFileRead(Bob(), via_symlink), FileAccess::kDenied);
  // A file that does not exist behind a directory bob may not search: denied, as if it did.
  PathFacts missing_behind{{root_dir, root_dir, alice_home}, std::nullopt};
  EXPECT_EQ(DecideFileRead(Bob(), missing_behind), FileAccess::kDenied);
  // Where bob could look himself, "not found".
  PathFacts missing_open{{root_dir, root_dir, bob_home}, std::nullopt};
  EXPECT_EQ(DecideFileRead(Bob(), missing_open), FileAccess::kNotFound);
  // A readable directory chain and an unreadable file.
  PathFacts unreadable{{root_dir}, Inode(kAlice, kAlice, 0600)};
  EXPECT_EQ(DecideFileRead(Bob(), unreadable), FileAccess::kDenied);
}

TEST(DecideDescriptor, OnlyTheClientsOwnDescriptorOpenForReading) {
  using A = DescriptorAccess;
  EXPECT_EQ(DecideDescriptor(Bob(), {kBob, O_RDONLY}), A::kAllowed);
  EXPECT_EQ(DecideDescriptor(Bob(), {kBob, O_RDWR | O_CLOEXEC | O_NONBLOCK}), A::kAllowed);
  // O_PATH needs no read permission on the file (O_RDONLY's bits are 0 too).
  EXPECT_EQ(DecideDescriptor(Bob(), {kBob, O_PATH}), A::kNotOpenForReading);
  EXPECT_EQ(DecideDescriptor(Bob(), {kBob, O_PATH | O_RDONLY | O_CLOEXEC}), A::kNotOpenForReading);
  EXPECT_EQ(DecideDescriptor(Bob(), {kBob, O_WRONLY}), A::kNotOpenForReading);
  // A process of someone else's (a pid taken over, a setuid program: /proc shows it as root's).
  EXPECT_EQ(DecideDescriptor(Bob(), {kAlice, O_RDONLY}), A::kNotTheClients);
  EXPECT_EQ(DecideDescriptor(Bob(), {0, O_RDONLY}), A::kNotTheClients);
  // Root reads every file: any of its descriptors, but still only its own process's.
  EXPECT_EQ(DecideDescriptor(Root(), {0, O_PATH}), A::kAllowed);
  EXPECT_EQ(DecideDescriptor(Root(), {kBob, O_RDONLY}), A::kNotTheClients);
}

TEST(DecideProcess, SameAnswerForIndexedAndUnknownDeadPids) {
  // Bob's own incarnation, whoever holds the pid now.
  EXPECT_EQ(DecideProcess(Bob(), kBob, std::nullopt), ProcessAccess::kAllowed);
  EXPECT_EQ(DecideProcess(Bob(), kBob, kAlice), ProcessAccess::kAllowed);
  // Alice's exited process: as if never indexed, also while bob holds the pid.
  EXPECT_EQ(DecideProcess(Bob(), kAlice, std::nullopt), ProcessAccess::kUnknown);
  EXPECT_EQ(DecideProcess(Bob(), kAlice, kBob), ProcessAccess::kUnknown);
  EXPECT_EQ(DecideProcess(Bob(), std::nullopt, std::nullopt), ProcessAccess::kUnknown);
  // A live process of someone else: ps shows it to anyone, so "permission denied".
  EXPECT_EQ(DecideProcess(Bob(), kAlice, kAlice), ProcessAccess::kDenied);
  EXPECT_EQ(DecideProcess(Bob(), std::nullopt, 0), ProcessAccess::kDenied);
  EXPECT_EQ(DecideProcess(Root(), kAlice, kAlice), ProcessAccess::kAllowed);
  EXPECT_EQ(DecideProcess(Root(), std::nullopt, std::nullopt), ProcessAccess::kAllowed);
}

TEST(ImageMaps, PlantedMapsNeverShadowBelievedOnes) {
  constexpr uint32_t kDaemon = 0;
  // The operator's --r2rmap-dir map: believed for everyone, first.
  EXPECT_TRUE(BelieveImageMap(true, std::nullopt, kAlice, kDaemon));
  EXPECT_EQ(ImageMapRank(true, std::nullopt, kDaemon), 0);
  // Root's map in /tmp: believed, after the operator's.
  EXPECT_TRUE(BelieveImageMap(false, 0, kAlice, kDaemon));
  EXPECT_EQ(ImageMapRank(false, 0, kDaemon), 1);
  // Bob's map in /tmp: believed for bob only, and last.
  EXPECT_TRUE(BelieveImageMap(false, kBob, kBob, kDaemon));
  EXPECT_FALSE(BelieveImageMap(false, kBob, kAlice, kDaemon));
  EXPECT_FALSE(BelieveImageMap(false, kBob, 0, kDaemon));
  EXPECT_EQ(ImageMapRank(false, kBob, kDaemon), 2);
  // A daemon running as its own user believes its own maps.
  EXPECT_TRUE(BelieveImageMap(false, 999, kAlice, 999));
  EXPECT_EQ(ImageMapRank(false, 999, 999), 1);
  EXPECT_FALSE(BelieveImageMap(false, std::nullopt, kAlice, kDaemon));  // gone
}

TEST(WalkPath, FollowsSymlinksAndRecordsEveryDirectorySearched) {
  namespace fs = std::filesystem;
  const std::string base = ::testing::TempDir() + "/jitsym-walk-" + std::to_string(::getpid());
  fs::remove_all(base);
  fs::create_directories(base + "/private/sub");
  fs::create_directories(base + "/open");
  {
    std::FILE* f = std::fopen((base + "/private/sub/file").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  ::chmod((base + "/private").c_str(), 0700);
  fs::create_symlink(base + "/private/sub/file", base + "/open/abs");
  fs::create_symlink("../private/./sub/file", base + "/open/rel");
  fs::create_symlink("loop", base + "/open/loop");
  struct stat st {};
  ASSERT_EQ(::stat((base + "/private/sub/file").c_str(), &st), 0);
  const std::string real = fs::canonical(base + "/private/sub/file").string();
  for (const char* name : {"/open/abs", "/open/rel", "/open/../private/sub/file"}) {
    WalkedPath w;
    ASSERT_TRUE(WalkPath(base + name, &w)) << name;
    ASSERT_TRUE(w.facts.file) << name;
    EXPECT_EQ(w.resolved, real) << name;
    EXPECT_EQ(w.ino, st.st_ino) << name;
    EXPECT_TRUE(w.regular);
    // The 0700 directory the link leads through was searched: another user is refused.
    const PeerFacts other{st.st_uid + 4242, st.st_gid + 4242, {}, false};
    EXPECT_EQ(DecideFileRead(other, w.facts), FileAccess::kDenied) << name;
    const PeerFacts owner{st.st_uid, st.st_gid, {}, false};
    EXPECT_EQ(DecideFileRead(owner, w.facts), FileAccess::kAllowed) << name;
  }
  WalkedPath w;
  ASSERT_TRUE(WalkPath(base + "/private/missing", &w));
  EXPECT_FALSE(w.facts.file);
  EXPECT_EQ(DecideFileRead(PeerFacts{st.st_uid + 4242, st.st_gid + 4242, {}, false}, w.facts),
            FileAccess::kDenied);
  EXPECT_FALSE(WalkPath(base + "/open/loop", &w));  // ELOOP: an error
  EXPECT_FALSE(WalkPath("relative/path", &w));
  fs::remove_all(base);
}

}  // namespace
}  // namespace jitsym::security
