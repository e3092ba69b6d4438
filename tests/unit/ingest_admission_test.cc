// The ingest side's defences as pure decisions, without a filesystem or processes: which files
// naming a pid are believed (JudgeAdmission on made-up facts: owner, ctime, link count, the
// process's owner and start, the daemon's start), start-time conversion, the descriptor quota,
// the byte-limit defaults, and gzip inflation in bounded steps.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/config/descriptor_budget.h"
#include "daemon/formats/mlpd/mlpd_parser.h"
#include "daemon/ingest/mlpd_source.h"
#include "daemon/os/proc.h"
#include "daemon/security/file_trust.h"
#include "daemon/security/limits.h"
#include "tests/unit/testing/mlpd_builder.h"

namespace jitsym {
namespace {

using security::Admission;
using security::FileFacts;
using security::JudgeAdmission;
using security::ProcessFacts;

constexpr uint64_t kSec = 1000000000ull;
constexpr uint64_t kMs = 1000000ull;
constexpr uint64_t kDaemonStart = 1000 * kSec;
constexpr uint32_t kAlice = 1001;
constexpr uint32_t kBob = 1002;

FileFacts File(uint32_t uid, uint64_t ctime, bool at_startup, uint64_t nlink = 1) {
  FileFacts f;
  f.uid = uid;
  f.ctime_ns = ctime;
  f.found_at_startup = at_startup;
  f.nlink = nlink;
  return f;
}

std::optional<ProcessFacts> Process(uint32_t uid, uint64_t start) {
  return ProcessFacts{uid, start};
}

// Item: a jitdump of bob's for alice's live process, back-dated with touch -d and moved into the
// directory. The rename set its ctime to the time of the move; mtime is not a fact at all.
TEST(JudgeAdmission, BackdatedFileMovedInForAnotherUsersLiveProcessIsUntrusted) {
  const auto alice = Process(kAlice, kDaemonStart + 5 * kSec);
  EXPECT_EQ(JudgeAdmission(File(kBob, kDaemonStart + 60 * kSec, false), alice, kDaemonStart),
            Admission::kUntrusted);
  // Even if it had been there before the daemon started, but after alice's process: refused.
  const auto early_alice = Process(kAlice, kDaemonStart - 50 * kSec);
  EXPECT_EQ(JudgeAdmission(File(kBob, kDaemonStart - 10 * kSec, true), early_alice, kDaemonStart),
            Admission::kUntrusted);
}

TEST(JudgeAdmission, AnnouncedByInotifyIsNeverAnExitedProcess) {
  // An old ctime on a file announced after start-up (it cannot really happen: the event came
  // from a write, create or rename, which set the ctime): refused, not an exited process.
  const auto alice = Process(kAlice, kDaemonStart + 5 * kSec);
  EXPECT_EQ(JudgeAdmission(File(kBob, kDaemonStart - 100 * kSec, false), alice, kDaemonStart),
            Admission::kPredates);
  // No process: waits for one, as any new file does.
  EXPECT_EQ(
      JudgeAdmission(File(kBob, kDaemonStart - 100 * kSec, false), std::nullopt, kDaemonStart),
      Admission::kPending);
}

TEST(JudgeAdmission, LeftoverOfAnExitedProcessAtStartup) {
  // Bob's process wrote the file and exited; the daemon restarted; the pid is free or reused.
  EXPECT_EQ(JudgeAdmission(File(kBob, kDaemonStart - 10 * kSec, true), std::nullopt, kDaemonStart),
            Admission::kExited);
  EXPECT_EQ(JudgeAdmission(File(kBob, kDaemonStart - 10 * kSec, true),
                           Process(kAlice, kDaemonStart - 5 * kSec), kDaemonStart),
            Admission::kExited);
  // Written after the daemon started: never a leftover, whatever is found at start-up.
  EXPECT_EQ(JudgeAdmission(File(kBob, kDaemonStart + kMs, true), std::nullopt, kDaemonStart),
            Admission::kPending);
}

// Item: root's old perf-X.map and another user's new process at pid X.
TEST(JudgeAdmission, RootsFileOlderThanTheLiveProcessIsNeverItsFile) {
  const auto alice = Process(kAlice, kDaemonStart - 5 * kSec);
  EXPECT_EQ(JudgeAdmission(File(0, kDaemonStart - 10 * kSec, true), alice, kDaemonStart),
            Admission::kExited);
  EXPECT_EQ(JudgeAdmission(File(0, kDaemonStart - 10 * kSec, false), alice, kDaemonStart),
            Admission::kPredates);
  // The owner's own stale file is not the live process's either (an earlier process of hers).
  EXPECT_EQ(JudgeAdmission(File(kAlice, kDaemonStart - 10 * kSec, true), alice, kDaemonStart),
            Admission::kExited);
  // Root writing for the live process (e.g. jitsym perfmap run by root): believed.
  EXPECT_EQ(JudgeAdmission(File(0, kDaemonStart - 4 * kSec, true), alice, kDaemonStart),
            Admission::kLive);
  EXPECT_EQ(JudgeAdmission(File(0, kDaemonStart + 4 * kSec, false), alice, kDaemonStart),
            Admission::kLive);
}

TEST(JudgeAdmission, StartTimeTolerance) {
  // A process's first write can look older than its tick-rounded start by a coarse-clock jiffy.
  const uint64_t start = kDaemonStart + 10 * kSec;
  const auto alice = Process(kAlice, start);
  const uint64_t tol = security::kStartToleranceNs;
  EXPECT_EQ(JudgeAdmission(File(kAlice, start - tol, false), alice, kDaemonStart),
            Admission::kLive);
  EXPECT_EQ(JudgeAdmission(File(kAlice, start - 20 * kMs, false), alice, kDaemonStart),
            Admission::kLive);
  EXPECT_EQ(JudgeAdmission(File(kAlice, start - tol - 1, false), alice, kDaemonStart),
            Admission::kPredates);
  EXPECT_EQ(JudgeAdmission(File(0, start - tol - 1, false), alice, kDaemonStart),
            Admission::kPredates);
}

TEST(JudgeAdmission, OwnerRuleForCurrentFiles) {
  const auto alice = Process(kAlice, kDaemonStart + kSec);
  const uint64_t now = kDaemonStart + 2 * kSec;
  EXPECT_EQ(JudgeAdmission(File(kAlice, now, false), alice, kDaemonStart), Admission::kLive);
  EXPECT_EQ(JudgeAdmission(File(0, now, false), alice, kDaemonStart), Admission::kLive);
  EXPECT_EQ(JudgeAdmission(File(kBob, now, false), alice, kDaemonStart), Admission::kUntrusted);
  EXPECT_EQ(JudgeAdmission(File(kBob, now, false), std::nullopt, kDaemonStart),
            Admission::kPending);
  EXPECT_EQ(JudgeAdmission(File(0, now, false), std::nullopt, kDaemonStart), Admission::kLive);
}

TEST(JudgeAdmission, RootsFileWithSeveralLinks) {
  const uint64_t now = kDaemonStart + 2 * kSec;
  EXPECT_EQ(JudgeAdmission(File(0, now, false, 2), Process(kAlice, kDaemonStart), kDaemonStart),
            Admission::kRootLink);
  EXPECT_EQ(JudgeAdmission(File(0, now, false, 2), std::nullopt, kDaemonStart),
            Admission::kRootLink);
  EXPECT_EQ(JudgeAdmission(File(0, now, false, 2), Process(0, kDaemonStart), kDaemonStart),
            Admission::kLive);
}

TEST(StartTime, BootTicksToRealtime) {
  // Started 123.45 s after boot; now 200 s after boot and 5000 s after the epoch.
  EXPECT_EQ(os::BootTicksToRealtimeNs(12345, 100, 200 * kSec, 5000 * kSec),
            5000 * kSec - (200 * kSec - 123450 * kMs));
  // A tick rate that does not divide 1e9 stays exact to the nanosecond of the rounding.
  EXPECT_EQ(os::BootTicksToRealtimeNs(3, 3, 10 * kSec, 100 * kSec), 91 * kSec);
  EXPECT_EQ(os::BootTicksToRealtimeNs(1, 0, 10 * kSec, 100 * kSec), 0u);
}

TEST(Descriptors, FollowedFilesLeaveRoomForEverythingElseAndForOtherUsers) {
  // The limits the descriptor budget gives the ingester under the default soft limit.
  const config::DescriptorBudget budget = config::ComputeDescriptorBudget(1024, {});
  security::Limits small;
  small.total_files = budget.total_files;
  small.user_files = budget.user_files;
  EXPECT_LT(small.total_files + budget.connections + budget.reserve, 1024u + 1);
  // Bob at his quota: alice still gets files, and the reserved descriptors stay free.
  security::LimitLedger ledger(small);
  uint64_t bobs = 0;
  while (ledger.AdmitFile(kBob).ok()) ++bobs;
  EXPECT_EQ(bobs, small.user_files);
  EXPECT_FALSE(ledger.HasRoom(kBob));
  EXPECT_TRUE(ledger.HasRoom(kAlice));
  EXPECT_TRUE(ledger.AdmitFile(kAlice).ok());
  ledger.ReleaseFile(kBob);
  EXPECT_TRUE(ledger.HasRoom(kBob));
}

TEST(ByteLimits, DefaultsFollowPhysicalMemory) {
  EXPECT_EQ(security::DefaultUserBytes(16ull << 30), 4ull << 30);
  EXPECT_EQ(security::DefaultTotalBytes(16ull << 30), 8ull << 30);
  EXPECT_EQ(security::DefaultUserBytes(0), 256ull << 20);
  EXPECT_EQ(security::DefaultTotalBytes(0), 512ull << 20);
}

// A small gzip that inflates to many times its size: header, then buffers of bytes that are not
// an event (each buffer's rest is ignored), which deflate compresses ~1000:1.
std::vector<uint8_t> Bomb(uint32_t buffers, uint32_t buffer_bytes) {
  testing::MlpdBuilder file(17, 4242);
  std::vector<uint8_t> plain = file.bytes();
  for (uint32_t i = 0; i < buffers; ++i) {
    testing::MlpdBuilder b;  // only for its BufferHeaderOnly encoding
    std::vector<uint8_t> header = b.BufferHeaderOnly(buffer_bytes).bytes();
    plain.insert(plain.end(), header.end() - mlpd::kBufferHeaderSize, header.end());
    plain.insert(plain.end(), buffer_bytes, 0xFF);
  }
  return testing::Gzip(plain, 9);
}

struct NullSink : mlpd::Sink {};

TEST(MlpdInflate, OneFeedInflatesAtMostOneStep) {
  const std::vector<uint8_t> z = Bomb(8, 4u << 20);  // 32 MiB inflated
  ASSERT_LT(z.size(), 128u << 10);
  mlpd::Limits limits;
  limits.inflate_step = 1u << 20;
  mlpd::Parser p(limits);
  NullSink sink;
  p.Feed(z, sink);
  ASSERT_FALSE(p.failed()) << p.error();
  // A step stops after the inflate call that crosses it (256 KiB of output at most).
  EXPECT_LE(p.inflated(), (1u << 20) + (256u << 10));
  EXPECT_TRUE(p.backlog());
  int steps = 1;
  while (p.backlog()) {
    const uint64_t before = p.inflated();
    p.Continue(sink);
    EXPECT_LE(p.inflated() - before, (1u << 20) + (256u << 10));
    ++steps;
  }
  EXPECT_FALSE(p.failed()) << p.error();
  EXPECT_GE(p.inflated(), 32u << 20);
  EXPECT_GE(steps, 32);
  EXPECT_EQ(p.buffers(), 8u);
  EXPECT_EQ(p.bad_buffers(), 8u);
}

TEST(MlpdInflate, SourceReportsDecodedBytesAndFinishesTheStream) {
  // Fed in one piece: the rest of the stream, header included, arrives through Continue.
  const std::vector<uint8_t> z = Bomb(2, 1u << 20);
  mlpd::Limits limits;
  limits.inflate_step = 64u << 10;
  ingest::MlpdSource source("/tmp/bomb.mlpd", limits);
  source.Feed(z);
  EXPECT_TRUE(source.backlog());
  while (source.backlog()) source.Continue();
  EXPECT_FALSE(source.failed()) << source.error();
  EXPECT_GE(source.decoded_bytes(), 2u << 20);
  EXPECT_EQ(source.content_pid(), 4242u);
}

}  // namespace
}  // namespace jitsym
