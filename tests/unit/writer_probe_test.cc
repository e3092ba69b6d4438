// Gathering the writer rule's facts (daemon/ingest/writer_probe.h) from made-up processes: which
// candidates are asked about, and when their mappings and descriptors are read.
#include "daemon/ingest/writer_probe.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace jitsym::ingest {
namespace {

class FakeProbe : public WriterProbe {
 public:
  std::map<uint32_t, Process> processes;  // by host pid
  std::set<uint32_t> holders;
  int holds_calls = 0;
  int namesakes_calls = 0;

  Process& Add(uint32_t host_pid, uint32_t nspid, uint32_t uid, uint64_t mnt_ns, uint32_t depth) {
    Process& p = processes[host_pid];
    p.host_pid = host_pid;
    p.ns.tgid = host_pid;
    p.ns.nspid = nspid;
    p.ns.uid = uid;
    p.ns.mnt_ns = mnt_ns;
    p.ns.ns_depth = depth;
    return p;
  }
  std::optional<Process> Host(uint32_t pid) override {
    auto it = processes.find(pid);
    if (it == processes.end()) return std::nullopt;
    return it->second;
  }
  std::vector<Process> Namesakes(uint32_t nspid) override {
    ++namesakes_calls;
    std::vector<Process> out;
    for (const auto& [pid, p] : processes) {
      if (p.ns.nspid == nspid && p.ns.ns_depth > 1) out.push_back(p);
    }
    return out;
  }
  std::vector<Process> InMountNamespace(uint64_t mnt_ns, uint32_t nspid) override {
    std::vector<Process> out;
    for (const auto& [pid, p] : processes) {
      if (p.ns.mnt_ns == mnt_ns && p.ns.nspid == nspid) out.push_back(p);
    }
    return out;
  }
  bool Holds(uint32_t pid, uint64_t, uint64_t, bool) override {
    ++holds_calls;
    return holders.count(pid) > 0;
  }
};

constexpr uint64_t kHostMnt = 1, kContainerMnt = 2;

TEST(GatherWriterFacts, ALoneHostProcessOfAPerfMapIsNotAskedWhatItHolds) {
  FakeProbe probe;
  probe.Add(42, 42, 1000, kHostMnt, 1);
  const auto f = GatherWriterFacts(probe, {}, 42, false, 1, 2, 1000, 0, false);
  ASSERT_TRUE(f.host);
  EXPECT_TRUE(f.namesakes.empty());
  EXPECT_EQ(probe.holds_calls, 0);
  EXPECT_EQ(security::JudgeWriter(f, false).host_pid, 42u);
}

TEST(GatherWriterFacts, AJitdumpItsNamedProcessMapsNeedsNoLookForNamesakes) {
  FakeProbe probe;
  probe.Add(42, 42, 1000, kHostMnt, 1);
  probe.Add(5123, 42, 1000, kContainerMnt, 2);  // a namesake, never asked about
  probe.holders = {42};
  const auto f = GatherWriterFacts(probe, {}, 42, true, 1, 2, 1000, 0, true);
  ASSERT_TRUE(f.host);
  EXPECT_TRUE(f.host->holds);
  EXPECT_EQ(probe.namesakes_calls, 0);
  EXPECT_EQ(probe.holds_calls, 1);
  const auto w = security::JudgeWriter(f, false);
  EXPECT_EQ(w.kind, security::WriterKind::kProcess);
  EXPECT_EQ(w.host_pid, 42u);
}

TEST(GatherWriterFacts, AJitdumpItsNamedProcessDoesNotMapStillLooksForNamesakes) {
  FakeProbe probe;
  probe.Add(42, 42, 1000, kHostMnt, 1);
  probe.Add(5123, 42, 1000, kContainerMnt, 2);
  probe.holders = {5123};
  const auto f = GatherWriterFacts(probe, {}, 42, true, 1, 2, 1000, 0, false);
  EXPECT_EQ(probe.namesakes_calls, 1);
  ASSERT_EQ(f.namesakes.size(), 1u);
  EXPECT_EQ(security::JudgeWriter(f, false).host_pid, 5123u);
}

TEST(GatherWriterFacts, NamesakesMakeEveryCandidateShowWhatItMaps) {
  FakeProbe probe;
  probe.Add(1, 1, 0, kHostMnt, 1);          // init
  probe.Add(5123, 1, 0, kContainerMnt, 2);  // node in a container, pid 1 there
  probe.holders = {5123};
  const auto f = GatherWriterFacts(probe, {}, 1, true, 1, 2, 0, 0, false);
  ASSERT_EQ(f.namesakes.size(), 1u);
  EXPECT_GT(probe.holds_calls, 0);
  const auto w = security::JudgeWriter(f, false);
  EXPECT_EQ(w.kind, security::WriterKind::kProcess);
  EXPECT_EQ(w.host_pid, 5123u);
}

TEST(GatherWriterFacts, AContainersDirectoryLooksAmongItsMountNamespace) {
  FakeProbe probe;
  probe.Add(2, 2, 0, kHostMnt, 1);         // kthreadd: not the container's
  probe.Add(900, 2, 0, kContainerMnt, 1);  // `unshare`: host pid ns, the container's mounts
  probe.Add(901, 2, 0, kContainerMnt, 2);  // node: pid 2 inside
  probe.holders = {901};
  DirContext where;
  where.mnt_ns = kContainerMnt;
  where.via_pid = 900;
  const auto f = GatherWriterFacts(probe, where, 2, false, 1, 2, 0, 0, false);
  EXPECT_TRUE(f.container_dir);
  ASSERT_EQ(f.in_container.size(), 2u);
  EXPECT_EQ(security::JudgeWriter(f, false).host_pid, 901u);
}

TEST(GatherWriterFacts, AnUnreadableMountNamespaceFallsBackToTheProcessThatLedThere) {
  FakeProbe probe;
  probe.Add(901, 7, 0, 0, 2);
  DirContext where;
  where.mnt_ns = 0;
  where.via_pid = 901;
  auto f = GatherWriterFacts(probe, where, 7, false, 1, 2, 0, 0, false);
  ASSERT_EQ(f.in_container.size(), 1u);
  EXPECT_EQ(f.in_container[0].host_pid, 901u);
  // Another number: not that process's file, and nothing else can be told.
  f = GatherWriterFacts(probe, where, 8, false, 1, 2, 0, 0, false);
  EXPECT_TRUE(f.in_container.empty());
  EXPECT_EQ(security::JudgeWriter(f, true).kind, security::WriterKind::kUnattached);
}

}  // namespace
}  // namespace jitsym::ingest
