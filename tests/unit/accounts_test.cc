// Persons from /etc/subuid, and the quotas that count per person.
#include "daemon/security/accounts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "daemon/security/limits.h"
#include "daemon/server/admission.h"

namespace jitsym::security {
namespace {

std::optional<uint32_t> Users(std::string_view name) {
  static const std::map<std::string, uint32_t, std::less<>> kUsers = {
      {"alice", 1000}, {"bob", 1001}, {"carol", 1002}};
  auto it = kUsers.find(name);
  if (it == kUsers.end()) return std::nullopt;
  return it->second;
}

TEST(SubordinateIds, ParsesNamesAndUidsAndReportsBadLines) {
  const SubordinateIds ids = ParseSubordinateIds(
      "alice:100000:65536\n"
      "# a comment\n"
      "\n"
      "1001:165536:65536\r\n"
      "nobody-here:231072:65536\n"
      "carol:1:2:3\n"
      "carol:x:10\n"
      "carol:4294967295:2\n"
      "carol:300000:0\n"
      "carol:296608",
      Users);
  ASSERT_EQ(ids.ranges.size(), 2u);
  EXPECT_EQ(ids.ranges[0].first, 100000u);
  EXPECT_EQ(ids.ranges[0].count, 65536u);
  EXPECT_EQ(ids.ranges[0].owner, 1000u);
  EXPECT_EQ(ids.ranges[1].owner, 1001u);
  EXPECT_EQ(ids.ranges[1].first, 165536u);
  ASSERT_EQ(ids.problems.size(), 6u);
  EXPECT_EQ(ids.problems[0], "line 5: no user 'nobody-here'");
  EXPECT_EQ(ids.problems[1].rfind("line 6:", 0), 0u);
}

TEST(PersonMap, UidsOfARangeAreItsOwner) {
  const PersonMap map({{100000, 65536, 1000}, {165536, 65536, 1001}});
  EXPECT_EQ(map.PersonOf(1000), 1000u);
  EXPECT_EQ(map.PersonOf(99999), 99999u);  // AddrTooLow
  EXPECT_EQ(map.PersonOf(100000), 1000u);
  EXPECT_EQ(map.PersonOf(165535), 1000u);
  EXPECT_EQ(map.PersonOf(165536), 1001u);
  EXPECT_EQ(map.PersonOf(231071), 1001u);
  EXPECT_EQ(map.PersonOf(231072), 231072u);  // AddrTooHigh
  EXPECT_EQ(map.PersonOf(0), 0u);
}

TEST(PersonMap, RootAndOwnUidAreNeverSubordinate) {
  // A range holding uid 0, a range holding its owner's own uid, and root's own ranges: dropped.
  const PersonMap map({{0, 10, 1000}, {1000, 1, 1001}, {990, 20, 990}, {500000, 10, 0}});
  EXPECT_EQ(map.ranges(), 1u);
  EXPECT_EQ(map.PersonOf(0), 0u);
  EXPECT_EQ(map.PersonOf(1000), 1001u);  // alice's login uid in bob's range: still bob's range
  EXPECT_EQ(map.PersonOf(995), 995u);
  EXPECT_EQ(map.PersonOf(500005), 500005u);  // root's containers get no exemption
}

TEST(PersonMap, OverlapsGoToTheRangeListedFirst) {
  // bob lists a range over the middle of alice's: the earlier line keeps its uids.
  const PersonMap map({{100, 100, 1000}, {150, 100, 1001}, {50, 300, 1002}});
  EXPECT_EQ(map.PersonOf(49), 49u);
  EXPECT_EQ(map.PersonOf(50), 1002u);
  EXPECT_EQ(map.PersonOf(99), 1002u);
  EXPECT_EQ(map.PersonOf(100), 1000u);
  EXPECT_EQ(map.PersonOf(199), 1000u);
  EXPECT_EQ(map.PersonOf(200), 1001u);
  EXPECT_EQ(map.PersonOf(249), 1001u);
  EXPECT_EQ(map.PersonOf(250), 1002u);
  EXPECT_EQ(map.PersonOf(349), 1002u);
  EXPECT_EQ(map.PersonOf(350), 350u);
}

TEST(PersonMap, BruteForceAgreesOnRandomRanges) {
  std::srand(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<SubordinateRange> ranges;
    for (int i = 0; i < 6; ++i) {
      ranges.push_back({static_cast<uint32_t>(1 + std::rand() % 200),
                        static_cast<uint64_t>(1 + std::rand() % 60),
                        static_cast<uint32_t>(1000 + std::rand() % 4)});
    }
    const PersonMap map(ranges);
    for (uint32_t uid = 0; uid < 300; ++uid) {
      uint32_t expected = uid;
      for (const SubordinateRange& r : ranges) {
        const bool kept = r.owner != 0 && !(r.first <= r.owner && r.owner < r.first + r.count);
        if (kept && r.first <= uid && uid < r.first + r.count) {
          expected = r.owner;
          break;
        }
      }
      ASSERT_EQ(map.PersonOf(uid), expected) << "round " << round << " uid " << uid;
    }
  }
}

TEST(Accounts, ReadsTheFileAndFollowsItsChanges) {
  char tmpl[] = "/tmp/accounts_test_XXXXXX";
  const int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const std::string path = tmpl;
  std::ofstream(path) << "bob:200000:10\n";
  Accounts accounts({path, /*recheck_ms=*/0, Users});
  if (::geteuid() == 0) {
    EXPECT_EQ(accounts.PersonOf(200003), 1001u);
    std::ofstream(path) << "bob:200000:10\nalice:300000:10000\n";
    EXPECT_EQ(accounts.PersonOf(300003), 1000u);
    ASSERT_EQ(::chown(path.c_str(), 1001, 1001), 0);  // bob's own file says nothing
    EXPECT_EQ(accounts.PersonOf(200003), 200003u);
  } else {
    EXPECT_EQ(accounts.PersonOf(200003), 200003u);  // not root's: ignored
  }
  ::unlink(path.c_str());
  EXPECT_EQ(accounts.PersonOf(200003), 200003u);
  EXPECT_EQ(accounts.PersonOf(0), 0u);
}

TEST(LimitLedgerPersons, SubordinateUidsShareTheirOwnersQuota) {
  Limits limits;
  limits.user_files = 2;
  limits.total_files = 100;
  limits.user_bytes = 100;
  const PersonMap map({{100000, 65536, 1001}});
  LimitLedger ledger(limits, [&map](uint32_t uid) { return map.PersonOf(uid); });
  EXPECT_TRUE(ledger.AdmitFile(1001).ok());
  EXPECT_TRUE(ledger.AdmitFile(100001).ok());
  const Status refused = ledger.AdmitFile(100002);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(
      refused.error().message.find("for uid 1001 and its subordinate uids, counting uid 100002"),
      std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(ledger.HasRoom(100003));
  EXPECT_TRUE(ledger.AdmitFile(1000).ok());  // another person
  ledger.ReleaseFile(100001);
  EXPECT_TRUE(ledger.HasRoom(100003));

  std::string which;
  ledger.ChargeBytes(100005, 60);
  EXPECT_EQ(ledger.ByteAllowance(1001, 0, &which), 40u);
  EXPECT_NE(which.find("per-user"), std::string::npos);
  EXPECT_EQ(ledger.ByteAllowance(1000, 0, &which), 100u);
  ledger.ReleaseBytes(100005, 60);
  EXPECT_EQ(ledger.ByteAllowance(1001, 0, &which), 100u);
}

TEST(LimitLedgerPersons, ReleasedToThePersonChargedEvenIfTheMapChanges) {
  Limits limits;
  limits.user_files = 1;
  uint32_t owner = 1001;  // what /etc/subuid says now
  LimitLedger ledger(limits, [&owner](uint32_t uid) { return uid >= 100000 ? owner : uid; });
  EXPECT_TRUE(ledger.AdmitFile(100001).ok());
  owner = 1000;  // the range is given to alice while bob's file is followed
  EXPECT_EQ(ledger.PersonOf(100001), 1001u);
  EXPECT_FALSE(ledger.HasRoom(1001));
  EXPECT_TRUE(ledger.HasRoom(1000));
  ledger.ReleaseFile(100001);
  EXPECT_TRUE(ledger.HasRoom(1001));
  EXPECT_EQ(ledger.PersonOf(100001), 1000u);  // nothing held: the current map decides
}

TEST(AdmissionMessages, NameThePersonAndTheUid) {
  const server::ConnectionLimits limits{10, 2, 1};
  EXPECT_EQ(server::ConnectionBusyMessage(server::Admission::kUserFull, limits, 100007, 1001),
            "uid 1001 (with its subordinate uids; this is uid 100007) already has 2 connections "
            "open to jitsymd (the per-user connection limit)");
}

}  // namespace
}  // namespace jitsym::security
