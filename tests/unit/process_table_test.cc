// The ingester's process table without /proc or pidfds: a fake probe stands for the processes
// (made-up identities, exits signalled or not), and the table is checked for what a lookup
// relies on: one incarnation per process, a new one when the pid is reused (even within one
// start-time tick), earlier exited processes kept apart per owner, and which exited
// incarnations retention and the memory budget evict.
#include "daemon/ingest/process_table.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <set>

namespace jitsym::ingest {
namespace {

constexpr uint32_t kAlice = 1001;
constexpr uint32_t kBob = 1002;
constexpr uint64_t kMs = 1000000ull;

class FakeProbe : public ProcessTable::Probe {
 public:
  os::ProcessLookup Identity(uint32_t pid) override {
    os::ProcessLookup out;
    if (unreadable) {
      out.error = EMFILE;
    } else if (auto it = alive.find(pid); it != alive.end()) {
      out.identity = it->second;
    }
    return out;
  }
  uint64_t StartNs(uint64_t start_ticks) override { return start_ticks * 10 * kMs; }
  void Watch(Incarnation& inc) override {
    if (quota_full) return;
    watched.insert(&inc);
  }
  bool ExitSignalled(Incarnation& inc) override { return signalled.count(&inc) > 0; }
  void Unwatch(Incarnation& inc) override { watched.erase(&inc); }
  bool Watched(const Incarnation& inc) const override {
    return watched.count(const_cast<Incarnation*>(&inc)) > 0;
  }

  std::map<uint32_t, os::ProcessIdentity> alive;
  std::set<Incarnation*> watched;
  std::set<Incarnation*> signalled;
  bool quota_full = false;
  bool unreadable = false;  // /proc cannot be opened (EMFILE)
};

TEST(ProcessTable, OneIncarnationPerProcess) {
  FakeProbe probe;
  ProcessTable table(probe);
  probe.alive[42] = {100, kAlice};
  Incarnation* a = table.Live(42);
  EXPECT_EQ(table.Live(42), a);
  EXPECT_TRUE(a->alive);
  EXPECT_EQ(a->uid, kAlice);
  EXPECT_EQ(a->start_time, 1000 * kMs);
  EXPECT_TRUE(probe.Watched(*a));
  EXPECT_EQ(table.processes().at(42).size(), 1u);
}

TEST(ProcessTable, ReusedPidIsANewIncarnationAndEndsTheOldOne) {
  FakeProbe probe;
  ProcessTable table(probe);
  probe.alive[42] = {100, kAlice};
  Incarnation* a = table.Live(42);
  probe.alive[42] = {250, kBob};
  Incarnation* b = table.Live(42);
  ASSERT_NE(a, b);
  EXPECT_GT(b->id, a->id);
  EXPECT_FALSE(a->alive);
  EXPECT_TRUE(a->exit_time.has_value());
  EXPECT_TRUE(b->alive);
  EXPECT_EQ(b->uid, kBob);
  EXPECT_EQ(table.exited_count(), 1u);
}

TEST(ProcessTable, ReuseWithinOneTickIsToldByTheExitSignal) {
  FakeProbe probe;
  ProcessTable table(probe);
  probe.alive[42] = {100, kAlice};
  Incarnation* a = table.Live(42);
  // The same start tick, but the first process's exit was signalled (not handled yet).
  probe.alive[42] = {100, kBob};
  probe.signalled.insert(a);
  Incarnation* b = table.Live(42);
  ASSERT_NE(a, b);
  EXPECT_FALSE(a->alive);
  EXPECT_EQ(b->uid, kBob);
}

TEST(ProcessTable, NoProcessGivesAnIncarnationWithoutOwner) {
  FakeProbe probe;
  ProcessTable table(probe);
  Incarnation* a = table.Live(7);
  EXPECT_FALSE(a->alive);
  EXPECT_FALSE(a->uid.has_value());
  EXPECT_FALSE(a->start_time.has_value());
  EXPECT_FALSE(probe.Watched(*a));
}

TEST(ProcessTable, ExitedProcessesAreOldestAndOnePerOwner) {
  FakeProbe probe;
  ProcessTable table(probe);
  probe.alive[42] = {500, kBob};
  Incarnation* alices = table.Exited(42, probe.Identity(42).identity, kAlice);
  EXPECT_TRUE(alices->restored);
  EXPECT_FALSE(alices->alive);
  EXPECT_EQ(alices->uid, kAlice);
  // Its jitdump and its perf map share it; another owner's leftovers do not.
  EXPECT_EQ(table.Exited(42, probe.Identity(42).identity, kAlice), alices);
  Incarnation* bobs = table.Exited(42, probe.Identity(42).identity, kBob);
  EXPECT_NE(bobs, alices);
  // The live process got its own incarnation, the newest: the one answered without a time.
  const auto& incs = table.processes().at(42);
  ASSERT_EQ(incs.size(), 3u);
  EXPECT_TRUE(incs.back()->alive);
  EXPECT_EQ(incs.back()->uid, kBob);
  EXPECT_FALSE(incs.back()->restored);
}

TEST(ProcessTable, UnwatchedProcessesArePolled) {
  FakeProbe probe;
  ProcessTable table(probe);
  probe.quota_full = true;  // no pidfd for it
  probe.alive[42] = {100, kAlice};
  Incarnation* a = table.Live(42);
  EXPECT_FALSE(probe.Watched(*a));
  EXPECT_TRUE(table.ExitedUnwatched().empty());
  probe.alive.erase(42);
  ASSERT_EQ(table.ExitedUnwatched(), std::vector<Incarnation*>{a});
  table.MarkExited(*a);
  EXPECT_FALSE(a->alive);
  EXPECT_TRUE(a->exit_time.has_value());
  EXPECT_TRUE(table.ExitedUnwatched().empty());
}

TEST(ProcessTable, AProcessThatCannotBeReadIsNotTakenForGone) {
  FakeProbe probe;
  ProcessTable table(probe);
  probe.quota_full = true;
  probe.alive[42] = {100, kAlice};
  Incarnation* a = table.Live(42);
  probe.unreadable = true;  // out of descriptors: /proc/42/stat cannot be opened
  EXPECT_TRUE(table.ExitedUnwatched().empty());
  EXPECT_TRUE(a->alive);
  probe.unreadable = false;
  probe.alive.erase(42);
  EXPECT_EQ(table.ExitedUnwatched(), std::vector<Incarnation*>{a});
}

TEST(ProcessTable, MarkExitedStopsWatching) {
  FakeProbe probe;
  ProcessTable table(probe);
  probe.alive[42] = {100, kAlice};
  Incarnation* a = table.Live(42);
  a->changed = false;
  table.MarkExited(*a);
  EXPECT_FALSE(a->alive);
  EXPECT_TRUE(a->changed);
  EXPECT_FALSE(probe.Watched(*a));
  // Twice (an exit noticed by the poll, then by the pidfd) keeps the first exit time.
  const uint64_t first = *a->exit_time;
  table.MarkExited(*a);
  EXPECT_EQ(*a->exit_time, first);
}

// Three exited incarnations (exits at 1 s, 2 s and 3 s) and a live one.
struct Exits {
  FakeProbe probe;
  ProcessTable table{probe};
  Incarnation* e1;
  Incarnation* e2;
  Incarnation* e3;
  Incarnation* live;
  Exits() {
    for (uint32_t pid : {1u, 2u, 3u, 4u}) {
      probe.alive[pid] = {pid, kAlice};
      Incarnation* inc = table.Live(pid);
      if (pid < 4) {
        table.MarkExited(*inc);
        inc->exit_time = pid * 1000 * kMs;
      }
    }
    e1 = table.processes().at(1).front().get();
    e2 = table.processes().at(2).front().get();
    e3 = table.processes().at(3).front().get();
    live = table.processes().at(4).front().get();
  }
  std::vector<Incarnation*> Plan(uint64_t now, uint64_t retention, uint64_t budget,
                                 uint64_t* left = nullptr) {
    // Each incarnation holds 100 bytes; 400 in all.
    std::vector<Incarnation*> out;
    for (const auto& e : table.PlanEvictions(
             now, retention, budget, 400, [](const Incarnation&) { return 100; }, left)) {
      out.push_back(e.inc);
    }
    return out;
  }
};

TEST(ProcessTable, RetentionEvictsExitsOlderThanIt) {
  Exits t;
  EXPECT_TRUE(t.Plan(2500 * kMs, 0, 0).empty());  // no limit
  EXPECT_EQ(t.Plan(2500 * kMs, 1000 * kMs, 0), (std::vector<Incarnation*>{t.e1}));
  EXPECT_EQ(t.Plan(3000 * kMs, 1000 * kMs, 0), (std::vector<Incarnation*>{t.e1, t.e2}));
  // Running processes never.
  EXPECT_EQ(t.Plan(100000 * kMs, 1000 * kMs, 0).size(), 3u);
}

TEST(ProcessTable, MemoryBudgetEvictsOldestExitsFirstButNeverRunningProcesses) {
  Exits t;
  uint64_t left = 0;
  EXPECT_EQ(t.Plan(0, 0, 250, &left), (std::vector<Incarnation*>{t.e1, t.e2}));
  EXPECT_EQ(left, 200u);
  EXPECT_EQ(t.Plan(0, 0, 50, &left).size(), 3u);
  EXPECT_EQ(left, 100u);  // the live one stays, over the budget
  EXPECT_TRUE(t.Plan(0, 0, 400).empty());
  // An exit not handled yet (still watched) is not evicted.
  t.probe.watched.insert(t.e1);
  EXPECT_EQ(t.Plan(0, 0, 250), (std::vector<Incarnation*>{t.e2, t.e3}));
}

TEST(ProcessTable, RemoveDropsThePidWithItsLastIncarnation) {
  Exits t;
  t.table.Remove(1, t.e1);
  EXPECT_EQ(t.table.processes().count(1), 0u);
  EXPECT_EQ(t.table.exited_count(), 2u);
}

}  // namespace
}  // namespace jitsym::ingest
