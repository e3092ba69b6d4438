#include "proto/daemon_socket.h"

#include <errno.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace jitsym::proto {
namespace {

using Paths = std::vector<std::string>;

TEST(DaemonSocketPathTest, RootListensOnTheSystemSocketWhateverItsRuntimeDir) {
  EXPECT_EQ(DaemonSocketPathFor(0, ""), "/run/jitsymd/jitsymd.sock");
  EXPECT_EQ(DaemonSocketPathFor(0, "/run/user/0"), "/run/jitsymd/jitsymd.sock");
}

TEST(DaemonSocketPathTest, OthersListenInTheirRuntimeDirElseInTmp) {
  EXPECT_EQ(DaemonSocketPathFor(1000, "/run/user/1000"), "/run/user/1000/jitsymd.sock");
  EXPECT_EQ(DaemonSocketPathFor(1000, ""), "/tmp/jitsymd-1000.sock");
}

TEST(ClientSocketCandidatesTest, RootTriesOnlyTheSystemSocket) {
  EXPECT_EQ(ClientSocketCandidates(0, ""), Paths{"/run/jitsymd/jitsymd.sock"});
  EXPECT_EQ(ClientSocketCandidates(0, "/run/user/0"), Paths{"/run/jitsymd/jitsymd.sock"});
}

TEST(ClientSocketCandidatesTest, AUserTriesItsOwnDaemonThenTheSystemSocket) {
  EXPECT_EQ(ClientSocketCandidates(1000, "/run/user/1000"),
            (Paths{"/run/user/1000/jitsymd.sock", "/run/jitsymd/jitsymd.sock"}));
  EXPECT_EQ(ClientSocketCandidates(1000, ""),
            (Paths{"/tmp/jitsymd-1000.sock", "/run/jitsymd/jitsymd.sock"}));
}

TEST(ClientSocketCandidatesTest, TheFirstIsWhereThatUsersDaemonListens) {
  for (uint32_t uid : {0u, 1u, 1000u, 65534u}) {
    for (const char* dir : {"", "/run/user/x"}) {
      EXPECT_EQ(ClientSocketCandidates(uid, dir).front(), DaemonSocketPathFor(uid, dir));
    }
  }
}

TEST(NobodyListensTest, OnlyAMissingPathOrAStaleSocketMovesOn) {
  EXPECT_TRUE(NobodyListens(ENOENT));
  EXPECT_TRUE(NobodyListens(ENOTDIR));       // $XDG_RUNTIME_DIR is a file
  EXPECT_TRUE(NobodyListens(ECONNREFUSED));  // a socket file whose daemon is gone
  EXPECT_FALSE(NobodyListens(EACCES));       // a daemon is there; the user may not reach it
  EXPECT_FALSE(NobodyListens(EPERM));
  EXPECT_FALSE(NobodyListens(EAGAIN));  // a daemon too busy to accept
  EXPECT_FALSE(NobodyListens(ENOTSOCK));
}

TEST(PermissionHintTest, ANonMemberIsToldTheGroupAndHowToJoinIt) {
  SocketPermissionFacts facts{"alice", "jitsym", false, false};
  EXPECT_EQ(PermissionHint(facts),
            " (the socket admits members of the group jitsym: as root, `usermod -aG jitsym "
            "alice`, then log in again)");
}

TEST(PermissionHintTest, AMemberAddedSinceTheLoginIsToldToLogInAgain) {
  SocketPermissionFacts facts{"alice", "jitsym", false, true};
  EXPECT_EQ(PermissionHint(facts),
            " (the socket admits members of the group jitsym; alice was added to it after this "
            "login: log in again, or run `newgrp jitsym`)");
}

TEST(PermissionHintTest, AMemberRefusedAnywayIsToldItIsADirectory) {
  SocketPermissionFacts facts{"alice", "jitsym", true, true};
  EXPECT_EQ(PermissionHint(facts),
            " (alice is in the socket's group jitsym: a directory on the path refuses it)");
}

TEST(PermissionHintTest, ASocketThatAdmitsNoGroupGetsTheGeneralHint) {
  SocketPermissionFacts facts{"alice", "", false, false};
  EXPECT_EQ(PermissionHint(facts), " (no permission on the socket or its directory)");
}

}  // namespace
}  // namespace jitsym::proto
