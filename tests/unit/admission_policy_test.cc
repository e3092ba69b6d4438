// The ingester's admission policy on made-up facts, without a filesystem or processes: what
// JudgeAdmission's verdicts become over time (files waiting for their process, with a deadline
// and a per-owner bound; refusals remembered per inode; the owner's quota of followed files).
// The trust rule itself is tested in ingest_admission_test.cc.
#include "daemon/ingest/admission_policy.h"

#include <gtest/gtest.h>

namespace jitsym::ingest {
namespace {

using security::ProcessFacts;

constexpr uint64_t kSec = 1000000000ull;
constexpr uint64_t kDaemonStart = 1000 * kSec;
constexpr uint32_t kAlice = 1001;
constexpr uint32_t kBob = 1002;

FileIdentity File(uint32_t uid, ino_t ino, uint64_t ctime_ns = kDaemonStart + 10 * kSec,
                  bool at_startup = false) {
  FileIdentity f;
  f.dev = 1;
  f.ino = ino;
  f.facts.uid = uid;
  f.facts.ctime_ns = ctime_ns;
  f.facts.found_at_startup = at_startup;
  return f;
}

// A process started at the daemon's start + 5 s.
std::optional<ProcessFacts> Process(uint32_t uid) {
  return ProcessFacts{uid, kDaemonStart + 5 * kSec};
}

struct Policy {
  security::LimitLedger ledger;
  AdmissionPolicy policy;
  explicit Policy(security::Limits limits = {})
      : ledger(limits), policy(ledger, {/*pending_timeout_ms=*/5000, kDaemonStart}) {}
  Decision Admit(const std::string& name, const FileIdentity& f, std::optional<uint32_t> pid,
                 const std::optional<ProcessFacts>& process, uint64_t now = 0) {
    return policy.Admit("/tmp", name, "/tmp/" + name, f, pid, process, now);
  }
};

TEST(AdmissionPolicy, OwnersFileForItsLiveProcessIsFollowedAndCharged) {
  Policy p;
  const Decision d = p.Admit("jit-42.dump", File(kAlice, 1), 42, Process(kAlice));
  EXPECT_EQ(d.verdict, Verdict::kFollow);
  EXPECT_FALSE(d.untrusted);
  security::Limits one;
  one.user_files = 1;
  Policy q(one);
  EXPECT_EQ(q.Admit("jit-42.dump", File(kAlice, 1), 42, Process(kAlice)).verdict, Verdict::kFollow);
  EXPECT_FALSE(q.ledger.HasRoom(kAlice));  // charged to alice
  EXPECT_TRUE(q.ledger.HasRoom(kBob));
}

TEST(AdmissionPolicy, AnotherUsersFileIsRefusedOnceAndThenIgnoredSilently) {
  Policy p;
  Decision d = p.Admit("jit-42.dump", File(kBob, 7), 42, Process(kAlice));
  EXPECT_EQ(d.verdict, Verdict::kRefused);
  EXPECT_TRUE(d.untrusted);
  EXPECT_TRUE(d.publish);
  // Why, for explain's list of ignored files.
  EXPECT_NE(d.why.find("untrusted"), std::string::npos) << d.why;
  EXPECT_TRUE(p.policy.Ignored("/tmp/jit-42.dump", 1, 7));
  // Written again: the same inode is not judged (nor counted) again.
  d = p.Admit("jit-42.dump", File(kBob, 7), 42, Process(kAlice));
  EXPECT_EQ(d.verdict, Verdict::kRefused);
  EXPECT_FALSE(d.untrusted);
  EXPECT_FALSE(d.publish);
  // Another file at the path (a new inode) is judged afresh: alice's own is followed.
  EXPECT_EQ(p.Admit("jit-42.dump", File(kAlice, 8), 42, Process(kAlice)).verdict, Verdict::kFollow);
}

TEST(AdmissionPolicy, ForgetMakesTheSameInodeNumberANewFile) {
  Policy p;
  p.Admit("jit-42.dump", File(kBob, 7), 42, Process(kAlice));
  p.policy.Forget("/tmp/jit-42.dump");  // deleted; inode numbers are reused
  EXPECT_EQ(p.Admit("jit-42.dump", File(kAlice, 7), 42, Process(kAlice)).verdict, Verdict::kFollow);
}

TEST(AdmissionPolicy, FileForAPidNotThereYetWaitsUntilItsDeadline) {
  Policy p;
  Decision d = p.Admit("jit-42.dump", File(kAlice, 1), 42, std::nullopt, 0);
  EXPECT_EQ(d.verdict, Verdict::kWaiting);
  EXPECT_TRUE(d.publish);  // files_pending changed
  ASSERT_EQ(p.policy.pending().size(), 1u);
  EXPECT_EQ(p.policy.pending().at("/tmp/jit-42.dump").deadline_ns, 5 * kSec);
  // Asked again before the deadline: still waiting, nothing to publish.
  d = p.Admit("jit-42.dump", File(kAlice, 1), 42, std::nullopt, 1 * kSec);
  EXPECT_EQ(d.verdict, Verdict::kWaiting);
  EXPECT_FALSE(d.publish);
  // The process appeared: followed, no longer pending.
  d = p.Admit("jit-42.dump", File(kAlice, 1), 42, Process(kAlice), 2 * kSec);
  EXPECT_EQ(d.verdict, Verdict::kFollow);
  EXPECT_TRUE(d.publish);
  EXPECT_TRUE(p.policy.pending().empty());
}

TEST(AdmissionPolicy, PidThatNeverComesIsGivenUpAtTheDeadline) {
  Policy p;
  p.Admit("jit-42.dump", File(kAlice, 1), 42, std::nullopt, 0);
  const Decision d = p.Admit("jit-42.dump", File(kAlice, 1), 42, std::nullopt, 5 * kSec);
  EXPECT_EQ(d.verdict, Verdict::kRefused);
  EXPECT_TRUE(d.untrusted);
  EXPECT_NE(d.why.find("did not appear"), std::string::npos) << d.why;
  EXPECT_TRUE(p.policy.pending().empty());
  EXPECT_TRUE(p.policy.Ignored("/tmp/jit-42.dump", 1, 1));
}

TEST(AdmissionPolicy, OneOwnersWaitingFilesCannotTakeAnothersRoom) {
  security::Limits limits;
  limits.user_files = 2;
  limits.total_files = 4;
  Policy p(limits);
  EXPECT_EQ(p.Admit("jit-1.dump", File(kBob, 1), 1, std::nullopt).verdict, Verdict::kWaiting);
  EXPECT_EQ(p.Admit("jit-2.dump", File(kBob, 2), 2, std::nullopt).verdict, Verdict::kWaiting);
  const Decision d = p.Admit("jit-3.dump", File(kBob, 3), 3, std::nullopt);
  EXPECT_EQ(d.verdict, Verdict::kRefused);
  EXPECT_TRUE(d.over_limit);
  EXPECT_FALSE(d.untrusted);
  EXPECT_EQ(p.Admit("jit-4.dump", File(kAlice, 4), 4, std::nullopt).verdict, Verdict::kWaiting);
}

TEST(AdmissionPolicy, RootsFileForAPidNobodyHoldsIsFollowedAtOnce) {
  Policy p;
  EXPECT_EQ(p.Admit("jit-42.dump", File(0, 1), 42, std::nullopt).verdict, Verdict::kFollow);
}

TEST(AdmissionPolicy, LeftoverFoundAtStartupIsAnExitedProcess) {
  Policy p;
  const FileIdentity old = File(kAlice, 1, kDaemonStart - 60 * kSec, /*at_startup=*/true);
  EXPECT_EQ(p.Admit("jit-42.dump", old, 42, std::nullopt).verdict, Verdict::kFollowExited);
  EXPECT_EQ(
      p.Admit("perf-42.map", File(kAlice, 2, kDaemonStart - 60 * kSec, true), 42, Process(kBob))
          .verdict,
      Verdict::kFollowExited);
}

TEST(AdmissionPolicy, FileOlderThanItsProcessFoundLaterIsRefused) {
  Policy p;
  const Decision d =
      p.Admit("jit-42.dump", File(kAlice, 1, kDaemonStart + kSec), 42, Process(kAlice));
  EXPECT_EQ(d.verdict, Verdict::kRefused);
  EXPECT_TRUE(d.untrusted);
}

TEST(AdmissionPolicy, RootsFileWithSeveralLinksIsRefused) {
  Policy p;
  FileIdentity linked = File(0, 1);
  linked.facts.nlink = 2;
  EXPECT_EQ(p.Admit("jit-42.dump", linked, 42, Process(kAlice)).verdict, Verdict::kRefused);
}

TEST(AdmissionPolicy, OverTheOwnersQuotaIsNoRoomNotARefusal) {
  security::Limits limits;
  limits.user_files = 1;
  Policy p(limits);
  EXPECT_EQ(p.Admit("a.mlpd", File(kAlice, 1), std::nullopt, std::nullopt).verdict,
            Verdict::kFollow);
  const Decision d = p.Admit("b.mlpd", File(kAlice, 2), std::nullopt, std::nullopt);
  EXPECT_EQ(d.verdict, Verdict::kNoRoom);
  EXPECT_TRUE(d.over_limit);
  EXPECT_NE(d.no_room.find("per-user files limit"), std::string::npos) << d.no_room;
  EXPECT_FALSE(p.policy.Ignored("/tmp/b.mlpd", 1, 2));  // tried again later
  // Another user is not affected.
  EXPECT_EQ(p.Admit("c.mlpd", File(kBob, 3), std::nullopt, std::nullopt).verdict, Verdict::kFollow);
}

}  // namespace
}  // namespace jitsym::ingest
