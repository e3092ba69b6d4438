// The process-wide budget of extra threads (daemon/util/thread_budget.h).
#include "daemon/util/thread_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace jitsym {
namespace {

TEST(ThreadBudget, GrantsWhatIsLeftAndTakesItBackWhenDone) {
  ThreadBudget budget(3);
  {
    ThreadBudget::Grant a = budget.Take(2);
    EXPECT_EQ(a.count(), 2u);
    ThreadBudget::Grant b = budget.Take(5);
    EXPECT_EQ(b.count(), 1u);  // only one left
    EXPECT_EQ(budget.Take(1).count(), 0u);
    EXPECT_EQ(budget.left(), 0u);
  }
  EXPECT_EQ(budget.left(), 3u);
  EXPECT_EQ(budget.Take(0).count(), 0u);
  ThreadBudget none(0);
  EXPECT_EQ(none.Take(4).count(), 0u);
}

TEST(ThreadBudget, ConcurrentRequestsNeverHoldMoreThanTheAllowance) {
  ThreadBudget budget(3);
  std::atomic<size_t> held{0}, most{0};
  std::vector<std::thread> requests;
  for (int t = 0; t < 8; ++t) {
    requests.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        ThreadBudget::Grant g = budget.Take(2);
        const size_t now = held.fetch_add(g.count()) + g.count();
        size_t seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        held.fetch_sub(g.count());
      }
    });
  }
  for (auto& r : requests) r.join();
  EXPECT_LE(most.load(), 3u);
  EXPECT_EQ(budget.left(), 3u);
}

TEST(ThreadBudget, TheProcessOnesIsAtMostThree) {
  EXPECT_LE(ThreadBudget::Process().allowance(), 3u);
}

}  // namespace
}  // namespace jitsym
