// Connection and memory admission (daemon/server/admission.h) and the descriptor budget
// (daemon/config/descriptor_budget.h): pure policy, tested with made-up counts.
#include "daemon/server/admission.h"

#include <gtest/gtest.h>

#include <string>

#include "daemon/config/descriptor_budget.h"
#include "proto/protocol.h"

namespace jitsym {
namespace {

using config::ComputeDescriptorBudget;
using config::DescriptorWishes;
using server::Admission;
using server::AdmitConnection;
using server::ConnectionLimits;
using server::MemoryBudget;

TEST(AdmitConnectionTest, UserBelowBothLimits) {
  EXPECT_EQ(AdmitConnection({100, 10, 5}, false, 50, 9), Admission::kAdmit);
}

TEST(AdmitConnectionTest, UserAtItsShare) {
  EXPECT_EQ(AdmitConnection({100, 10, 5}, false, 50, 10), Admission::kUserFull);
}

TEST(AdmitConnectionTest, UserCannotTakeRootsReserve) {
  EXPECT_EQ(AdmitConnection({100, 10, 5}, false, 94, 0), Admission::kAdmit);
  EXPECT_EQ(AdmitConnection({100, 10, 5}, false, 95, 0), Admission::kTotalFull);
}

TEST(AdmitConnectionTest, RootHasNoShareAndUsesTheReserve) {
  EXPECT_EQ(AdmitConnection({100, 10, 5}, true, 99, 500), Admission::kAdmit);
  EXPECT_EQ(AdmitConnection({100, 10, 5}, true, 100, 0), Admission::kTotalFull);
}

TEST(AdmitConnectionTest, ReserveLargerThanTotal) {
  EXPECT_EQ(AdmitConnection({4, 10, 16}, false, 0, 0), Admission::kTotalFull);
  EXPECT_EQ(AdmitConnection({4, 10, 16}, true, 3, 0), Admission::kAdmit);
}

TEST(AdmitConnectionTest, MessagesNameTheLimit) {
  const ConnectionLimits limits{100, 10, 5};
  EXPECT_NE(server::ConnectionBusyMessage(Admission::kUserFull, limits, 1001, 1001)
                .find("uid 1001 already has 10 connections"),
            std::string::npos);
  EXPECT_NE(server::ConnectionBusyMessage(Admission::kTotalFull, limits, 1001, 1001)
                .find("total connection limit"),
            std::string::npos);
}

TEST(MemoryBudgetTest, PerUserShareThenTotal) {
  MemoryBudget budget(100, 60);
  EXPECT_EQ(budget.TryCharge(1000, 50), MemoryBudget::Result::kOk);
  EXPECT_EQ(budget.TryCharge(1000, 20), MemoryBudget::Result::kUserFull);
  EXPECT_EQ(budget.TryCharge(1001, 51), MemoryBudget::Result::kTotalFull);
  EXPECT_EQ(budget.TryCharge(1001, 40), MemoryBudget::Result::kOk);
  EXPECT_EQ(budget.used(), 90u);
  EXPECT_EQ(budget.used_by(1000), 50u);
  budget.Release(1000, 50);
  EXPECT_EQ(budget.used_by(1000), 0u);
  EXPECT_EQ(budget.TryCharge(1000, 60), MemoryBudget::Result::kOk);
}

TEST(MemoryBudgetTest, RootHasNoShareButTheTotalHolds) {
  MemoryBudget budget(100, 10);
  EXPECT_EQ(budget.TryCharge(0, 90), MemoryBudget::Result::kOk);
  EXPECT_EQ(budget.TryCharge(0, 20), MemoryBudget::Result::kTotalFull);
}

TEST(MemoryBudgetTest, ReleasingMoreThanChargedDoesNotUnderflow) {
  MemoryBudget budget(100, 100);
  EXPECT_EQ(budget.TryCharge(7, 10), MemoryBudget::Result::kOk);
  budget.Release(7, 50);
  budget.Release(8, 50);
  EXPECT_EQ(budget.used(), 0u);
}

TEST(DecodedRequestBoundTest, GrowsWithTheEntriesAndStopsAtTheBatchLimit) {
  const std::string one = R"({"op":"lookup","pid":1,"addrs":["0x1"]})";
  // Every ',' may separate entries: 3 here, rounded up to a power of two as a vector grows.
  EXPECT_EQ(server::DecodedRequestBound(one), 4 * sizeof(proto::AddressQuery) + one.size());
  std::string many = R"({"op":"lookup","pid":1,"addrs":[)";
  for (int i = 0; i < 1000; ++i) many += "1,";
  many += "1]}";
  EXPECT_GE(server::DecodedRequestBound(many), 1001 * sizeof(proto::AddressQuery));
  std::string huge(3 << 20, ',');
  EXPECT_EQ(server::DecodedRequestBound(huge),
            proto::kMaxBatch * sizeof(proto::AddressQuery) + huge.size());
}

TEST(DescriptorBudgetTest, DefaultSoftLimitKeepsAReserveAndShares) {
  const auto b = ComputeDescriptorBudget(1024, DescriptorWishes{});
  EXPECT_EQ(b.reserve, config::kDescriptorReserve);
  EXPECT_EQ(b.connections, 192u);  // a quarter of 768
  EXPECT_EQ(b.total_files, 576u);
  EXPECT_EQ(b.user_connections, 64u);
  EXPECT_EQ(b.user_files, 288u);  // half of the files, below the wished 1024
  EXPECT_LE(b.reserve + b.connections + b.total_files, b.nofile);
}

TEST(DescriptorBudgetTest, LargeLimitGrantsTheWishes) {
  const auto b = ComputeDescriptorBudget(524288, DescriptorWishes{});
  EXPECT_EQ(b.connections, 1024u);
  EXPECT_EQ(b.user_connections, 64u);
  EXPECT_EQ(b.total_files, 8192u);
  EXPECT_EQ(b.user_files, 1024u);
}

TEST(DescriptorBudgetTest, LoweredLimitsAreNamedWithBothNumbers) {
  const DescriptorWishes wishes;
  EXPECT_TRUE(
      config::DescribeLoweredLimits(wishes, ComputeDescriptorBudget(524288, wishes)).empty());
  const auto lowered = config::DescribeLoweredLimits(wishes, ComputeDescriptorBudget(1024, wishes));
  ASSERT_EQ(lowered.size(), 3u);  // user connections (64) fit
  EXPECT_EQ(lowered[0],
            "max-connections lowered from 1024 to 192 to fit 1024 descriptors (raise "
            "LimitNOFILE= or ulimit -n)");
  EXPECT_EQ(lowered[1],
            "limit-total-files lowered from 8192 to 576 to fit 1024 descriptors (raise "
            "LimitNOFILE= or ulimit -n)");
  EXPECT_EQ(lowered[2],
            "limit-user-files lowered from 1024 to 288 to fit 1024 descriptors (raise "
            "LimitNOFILE= or ulimit -n)");
  DescriptorWishes halves;
  halves.total_files = 100;
  halves.user_files = 1000;
  const auto by_half =
      config::DescribeLoweredLimits(halves, ComputeDescriptorBudget(524288, halves));
  ASSERT_EQ(by_half.size(), 1u);
  EXPECT_EQ(by_half[0],
            "limit-user-files lowered from 1000 to 50 (at most half of limit-total-files)");
}

TEST(DescriptorBudgetTest, UserShareIsAtMostHalf) {
  DescriptorWishes wishes;
  wishes.connections = 100;
  wishes.user_connections = 1000;
  wishes.total_files = 100;
  wishes.user_files = 1000;
  const auto b = ComputeDescriptorBudget(524288, wishes);
  EXPECT_EQ(b.user_connections, 50u);
  EXPECT_EQ(b.user_files, 50u);
}

TEST(DescriptorBudgetTest, TinyLimitStillGivesEachSomething) {
  for (uint64_t nofile : {0u, 1u, 2u, 3u, 8u, 64u}) {
    const auto b = ComputeDescriptorBudget(nofile, DescriptorWishes{});
    EXPECT_GE(b.connections, 1u) << nofile;
    EXPECT_GE(b.total_files, 1u) << nofile;
    EXPECT_GE(b.user_connections, 1u) << nofile;
    EXPECT_GE(b.user_files, 1u) << nofile;
    EXPECT_LE(b.reserve, nofile / 2) << nofile;
  }
}

TEST(DescriptorBudgetTest, NeverMoreThanTheLimit) {
  for (uint64_t nofile = 256; nofile < 100000; nofile = nofile * 3 / 2) {
    const auto b =
        ComputeDescriptorBudget(nofile, DescriptorWishes{1u << 30, 1u << 30, 1u << 30, 1u << 30});
    EXPECT_LE(b.reserve + b.connections + b.total_files, nofile) << nofile;
    EXPECT_GE(b.reserve, std::min<uint64_t>(config::kDescriptorReserve, nofile / 2));
  }
}

TEST(DescriptorBudgetTest, Formats) {
  EXPECT_EQ(config::FormatDescriptorBudget(ComputeDescriptorBudget(524288, DescriptorWishes{})),
            "nofile 524288 (reserve 256): 1024 connections (64 per user), 8192 files (1024 per "
            "user)");
}

TEST(ThreadShare, OnePersonAtMostItsShareOthersAndRootUnaffected) {
  server::ThreadShare share(2);
  EXPECT_TRUE(share.TryTake(1000, false));
  EXPECT_TRUE(share.TryTake(1000, false));
  EXPECT_FALSE(share.TryTake(1000, false));  // his share is in use
  EXPECT_TRUE(share.TryTake(1001, false));   // another's is not
  EXPECT_TRUE(share.TryTake(0, true));       // root has none
  share.Release(1000, false);
  EXPECT_TRUE(share.TryTake(1000, false));
  server::ThreadShare none(0);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(none.TryTake(1000, false));
}

}  // namespace
}  // namespace jitsym
