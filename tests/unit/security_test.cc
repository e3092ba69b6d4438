#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "daemon/security/file_trust.h"
#include "daemon/security/limits.h"
#include "daemon/security/peer_access.h"

namespace jitsym::security {
namespace {

PeerCredentials Peer(unsigned uid, unsigned gid, std::vector<unsigned> groups = {}) {
  PeerCredentials p;
  p.pid = 1;
  p.uid = uid;
  p.gid = gid;
  p.groups = std::move(groups);
  return p;
}

TEST(PeerAccess, RootSeesEverything) {
  PeerAccess a(Peer(0, 0), {});
  EXPECT_TRUE(a.trusted());
  EXPECT_TRUE(a.MaySeeProcess(1000));
  EXPECT_TRUE(a.MaySeeProcess(std::nullopt));
}

TEST(PeerAccess, OwnerSeesOwnProcessOnly) {
  PeerAccess a(Peer(1000, 1000), {});
  EXPECT_FALSE(a.trusted());
  EXPECT_TRUE(a.MaySeeProcess(1000));
  EXPECT_FALSE(a.MaySeeProcess(0));
  EXPECT_FALSE(a.MaySeeProcess(1001));
  EXPECT_FALSE(a.MaySeeProcess(std::nullopt));  // unknown owner: root's files only
}

TEST(PeerAccess, TrustedGroupBySupplementaryOrPrimaryGroup) {
  AccessPolicy policy;
  policy.trusted_gid = 4242;
  EXPECT_TRUE(PeerAccess(Peer(1000, 1000, {10, 4242}), policy).MaySeeProcess(0));
  EXPECT_TRUE(PeerAccess(Peer(1000, 4242), policy).MaySeeProcess(0));
  // uid 1000 is unlikely to be listed in a group 4242 by the database here.
  EXPECT_FALSE(PeerAccess(Peer(1000, 1000, {10}), policy).MaySeeProcess(0));
  EXPECT_FALSE(PeerAccess(Peer(1000, 1000, {4242}), {}).MaySeeProcess(0));  // no policy
}

TEST(PeerAccess, ResolveGroupByNameOrNumber) {
  EXPECT_EQ(ResolveGroup("root"), 0u);
  EXPECT_EQ(ResolveGroup("4242"), 4242u);
  EXPECT_FALSE(ResolveGroup("no-such-group-here"));
  EXPECT_FALSE(ResolveGroup(""));
}

TEST(PeerAccess, MayReadByModeBits) {
  const std::string dir = ::testing::TempDir() + "/jitsym-sec-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  const std::string file = dir + "/f";
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  const unsigned owner = st.st_uid, group = st.st_gid;
  const unsigned other = owner == 12345 ? 12346 : 12345;

  ::chmod(file.c_str(), 0600);
  EXPECT_TRUE(PeerAccess(Peer(owner, group), {}).MayRead(file));
  EXPECT_FALSE(PeerAccess(Peer(other, 54321), {}).MayRead(file));
  EXPECT_FALSE(PeerAccess(Peer(other, group), {}).MayRead(file));
  ::chmod(file.c_str(), 0640);
  EXPECT_TRUE(PeerAccess(Peer(other, group), {}).MayRead(file));
  EXPECT_TRUE(PeerAccess(Peer(other, 54321, {group}), {}).MayRead(file));
  EXPECT_FALSE(PeerAccess(Peer(other, 54321), {}).MayRead(file));
  ::chmod(file.c_str(), 0644);
  EXPECT_TRUE(PeerAccess(Peer(other, 54321), {}).MayRead(file));
  ::chmod(dir.c_str(), 0700);  // a directory above it others cannot search
  EXPECT_FALSE(PeerAccess(Peer(other, 54321), {}).MayRead(file));
  EXPECT_FALSE(PeerAccess(Peer(other, 54321), {}).MayRead(dir + "/missing"));
  EXPECT_FALSE(PeerAccess(Peer(other, 54321), {}).MayRead("relative/path"));
  std::filesystem::remove_all(dir);
}

TEST(FileTrust, OwnerOrRootOnly) {
  EXPECT_EQ(JudgeProcessFile(0, 1000), FileVerdict::kTrusted);
  EXPECT_EQ(JudgeProcessFile(0, std::nullopt), FileVerdict::kTrusted);
  EXPECT_EQ(JudgeProcessFile(1000, 1000), FileVerdict::kTrusted);
  EXPECT_EQ(JudgeProcessFile(1000, 0), FileVerdict::kUntrusted);
  EXPECT_EQ(JudgeProcessFile(1000, 1001), FileVerdict::kUntrusted);
  EXPECT_EQ(JudgeProcessFile(1000, std::nullopt), FileVerdict::kPending);
  EXPECT_EQ(DescribeUid(0), "uid 0 (root)");
}

TEST(LimitLedger, FilesPerUserAndTotal) {
  Limits limits;
  limits.user_files = 2;
  limits.total_files = 3;
  LimitLedger ledger(limits);
  EXPECT_TRUE(ledger.AdmitFile(1).ok());
  EXPECT_TRUE(ledger.AdmitFile(1).ok());
  EXPECT_NE(ledger.AdmitFile(1).error().message.find("per-user files limit"), std::string::npos);
  EXPECT_TRUE(ledger.AdmitFile(2).ok());
  EXPECT_NE(ledger.AdmitFile(3).error().message.find("total files limit"), std::string::npos);
  ledger.ReleaseFile(1);
  EXPECT_TRUE(ledger.AdmitFile(1).ok());
}

TEST(LimitLedger, BytesTightestLimitWins) {
  Limits limits;
  limits.file_bytes = 100;
  limits.user_bytes = 150;
  limits.total_bytes = 1000;
  LimitLedger ledger(limits);
  std::string which;
  EXPECT_EQ(ledger.ByteAllowance(1, 0, &which), 100u);
  EXPECT_NE(which.find("per-file"), std::string::npos);
  ledger.ChargeBytes(1, 100);
  EXPECT_EQ(ledger.ByteAllowance(1, 100, &which), 0u);
  EXPECT_EQ(ledger.ByteAllowance(1, 0, &which), 50u);  // another file of the same user
  EXPECT_NE(which.find("per-user"), std::string::npos);
  EXPECT_EQ(ledger.ByteAllowance(2, 0, &which), 100u);  // another user
  ledger.ChargeBytes(2, 850);
  EXPECT_EQ(ledger.ByteAllowance(3, 0, &which), 50u);
  EXPECT_NE(which.find("total"), std::string::npos);
  EXPECT_TRUE(ledger.CheckRanges(limits.file_ranges).ok());
  EXPECT_EQ(ledger.CheckRanges(limits.file_ranges + 1).error().kind, ErrorKind::kLimit);
}

}  // namespace
}  // namespace jitsym::security
