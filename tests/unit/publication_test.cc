// Publication without files or processes: made-up sources and incarnations are turned into the
// IndexView the query threads read, and the view is checked for what lookups rely on: sources
// in answer order, images by name, counters, where time-qualified lookups switch between
// incarnations of a reused pid, and that an unchanged index publishes nothing new.
#include "daemon/ingest/publication.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>

namespace jitsym::ingest {
namespace {

class FakeSource : public Source {
 public:
  FakeSource(std::string_view origin, std::string path)
      : Source(std::move(path)), origin_(OriginFromName(origin).value_or(Origin::kUnknown)) {}
  Origin origin() const override { return origin_; }
  void Feed(std::span<const uint8_t>) override {}
  bool closed() const override { return closed_; }
  std::string image_signature() const override { return "abcd"; }
  // A code range [start, start + 16) named `name`, recorded at `time`.
  void Add(uint64_t start, uint64_t time, const std::string& name) {
    code_.Add(start, 16, time, code_.Intern(name));
    ++records_;
  }
  void Fail() { SetError(12, "bad record"); }
  bool closed_ = false;

 private:
  Origin origin_;
};

struct Index {
  std::vector<std::unique_ptr<FollowedFile>> files;
  ProcessTable::Map processes;
  IngestCounters counters;
  index::IndexView current;
  std::vector<uint32_t> removed;  // as ProcessTable::TakeRemoved gives them
  uint64_t next_id = 1;

  Incarnation* Process(uint32_t pid, std::optional<uint64_t> start_time) {
    auto inc = std::make_unique<Incarnation>();
    inc->pid = pid;
    inc->id = next_id++;
    inc->alive = true;
    inc->uid = 1000;
    inc->start_time = start_time;
    processes[pid].push_back(std::move(inc));
    return processes[pid].back().get();
  }
  FakeSource* File(const std::string& origin, const std::string& path, Incarnation* inc) {
    auto f = std::make_unique<FollowedFile>();
    f->path = path;
    f->fd = 3;  // counted as followed; never read
    auto src = std::make_unique<FakeSource>(origin, path);
    FakeSource* out = src.get();
    f->source = std::move(src);
    f->incarnation = inc;
    if (inc) inc->files.push_back(f.get());
    files.push_back(std::move(f));
    return out;
  }
  std::shared_ptr<index::IndexView> Build(bool force = false) {
    auto v = BuildView(files, processes, counters, current, force, std::exchange(removed, {}));
    if (v) current = *v;
    return v;
  }
};

TEST(Publication, SourcesInAnswerOrderImagesByNameAndCounters) {
  Index ix;
  Incarnation* inc = ix.Process(42, 1000);
  ix.File("perfmap", "/tmp/perf-42.map", inc)->Add(0x1000, 1100, "map_f");
  ix.File("jitdump", "/tmp/jit-42.dump", inc)->Add(0x2000, 1200, "dump_f");
  FakeSource* img = ix.File("r2rmap", "/tmp/Lib.ni.r2rmap", nullptr);
  img->Add(0x10, 0, "Lib.M");
  ix.files.back()->image = "Lib";
  ix.counters.files_untrusted = 3;
  ix.counters.bytes_ingested = 999;
  auto v = ix.Build();
  ASSERT_TRUE(v);
  ASSERT_EQ(v->processes.at(42).size(), 1u);
  const index::ProcessView& p = *v->processes.at(42)[0];
  EXPECT_EQ(p.pid, 42u);
  EXPECT_EQ(p.uid, 1000u);
  EXPECT_TRUE(p.alive);
  ASSERT_EQ(p.sources.size(), 2u);
  EXPECT_EQ(p.sources[0]->origin, Origin::kJitdump);  // exact timestamps answer first
  EXPECT_EQ(p.sources[1]->origin, Origin::kPerfmap);
  EXPECT_EQ(p.sources[0]->state, SourceState::kFollowing);
  ASSERT_EQ(v->images.at("Lib").size(), 1u);
  EXPECT_EQ(v->images.at("Lib")[0]->image_signature, "abcd");
  EXPECT_EQ(v->counters.files_followed, 3u);
  EXPECT_EQ(v->counters.records_ingested, 3u);
  EXPECT_EQ(v->counters.ranges, 3u);
  EXPECT_EQ(v->counters.files_untrusted, 3u);
  EXPECT_EQ(v->counters.bytes_ingested, 999u);
  EXPECT_EQ(v->counters.processes_exited, 0u);
}

TEST(Publication, ANewerFileOfTheSameOriginAnswersFirst) {
  Index ix;
  Incarnation* inc = ix.Process(42, 1000);
  ix.File("perfmap", "/tmp/perf-42.map (replaced)", inc)->Add(0x1000, 1100, "old");
  ix.files.back()->state = SourceState::kReplaced;
  ix.File("perfmap", "/tmp/perf-42.map", inc)->Add(0x1000, 1200, "new");
  auto v = ix.Build();
  const auto& sources = v->processes.at(42)[0]->sources;
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0]->state, SourceState::kFollowing);
  EXPECT_EQ(sources[1]->state, SourceState::kReplaced);
}

TEST(Publication, NothingChangedPublishesNothingAndUnchangedPartsAreShared) {
  Index ix;
  Incarnation* a = ix.Process(42, 1000);
  Incarnation* b = ix.Process(43, 1000);
  ix.File("perfmap", "/tmp/perf-42.map", a)->Add(0x1000, 1100, "f");
  FakeSource* src_b = ix.File("perfmap", "/tmp/perf-43.map", b);
  src_b->Add(0x1000, 1100, "g");
  auto first = ix.Build();
  ASSERT_TRUE(first);
  EXPECT_FALSE(ix.Build());
  EXPECT_TRUE(ix.Build(/*force=*/true));  // a lifecycle change (eviction, new budget)
  ix.counters.files_pending = 1;          // a published counter changed
  EXPECT_TRUE(ix.Build());
  EXPECT_FALSE(ix.Build());
  // One file grows: its process is rebuilt, the other is the same object as before.
  src_b->Add(0x2000, 1200, "h");
  ix.files.back()->changed = true;
  auto next = ix.Build();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->processes.at(42)[0], first->processes.at(42)[0]);
  EXPECT_NE(next->processes.at(43)[0], first->processes.at(43)[0]);
  EXPECT_EQ(next->processes.at(43)[0]->sources[0]->ranges, 2u);
}

TEST(Publication, ThreadIdsArePublishedAndSharedWhileUnchanged) {
  Index ix;
  Incarnation* inc = ix.Process(42, 1000);
  FakeSource* src = ix.File("perfmap", "/tmp/perf-42.map", inc);
  src->Add(0x1000, 1100, "f");
  inc->threads = index::ThreadIds({42, 43, 57});
  auto v1 = ix.Build();
  ASSERT_TRUE(v1);
  const index::ProcessView& p1 = *v1->processes.at(42)[0];
  EXPECT_EQ(p1.threads, (std::vector<uint32_t>{42, 43, 57}));
  EXPECT_TRUE(p1.threads.contains(57));
  EXPECT_FALSE(p1.threads.contains(44));
  // The file grows: a new view of the process, with the same ids, not a copy of them.
  src->Add(0x2000, 1200, "g");
  ix.files[0]->changed = true;
  auto v2 = ix.Build();
  ASSERT_TRUE(v2);
  const index::ProcessView& p2 = *v2->processes.at(42)[0];
  EXPECT_NE(&p1, &p2);
  EXPECT_EQ(&p1.threads.ids(), &p2.threads.ids());
}

TEST(Publication, FileStatesAsSeenByUsers) {
  Index ix;
  Incarnation* inc = ix.Process(42, 1000);
  FakeSource* closed = ix.File("mlpd", "/tmp/a.mlpd", inc);
  closed->closed_ = true;  // the writer said it finished: "closed" while still followed
  FakeSource* bad = ix.File("jitdump", "/tmp/jit-42.dump", inc);
  bad->Fail();
  ix.files.back()->state = SourceState::kError;
  auto v = ix.Build();
  const auto& sources = v->processes.at(42)[0]->sources;
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0]->state, SourceState::kError);
  EXPECT_EQ(sources[0]->error, "offset 12: bad record");
  EXPECT_EQ(sources[1]->state, SourceState::kClosed);
}

TEST(Publication, AReusedPidSwitchesIncarnationsAfterThePredecessorsLastRecord) {
  Index ix;
  Incarnation* first = ix.Process(42, 100);
  first->alive = false;
  first->exit_time = 700;
  ix.File("jitdump", "/tmp/jit-42.dump (1)", first)->Add(0x1000, 500, "old");
  // /proc start times are rounded down to the tick: the successor seems to start at 450,
  // before its predecessor's last record.
  Incarnation* second = ix.Process(42, 450);
  ix.File("jitdump", "/tmp/jit-42.dump", second)->Add(0x1000, 800, "new");
  auto v = ix.Build();
  const auto& incs = v->processes.at(42);
  ASSERT_EQ(incs.size(), 2u);
  EXPECT_EQ(incs[0]->start_time, 100u);
  EXPECT_EQ(incs[1]->start_time, 700u);  // after the last record (500) and the exit (700)
  EXPECT_EQ(v->FindProcess(42, 600)->incarnation, first->id);
  EXPECT_EQ(v->FindProcess(42, 750)->incarnation, second->id);
  EXPECT_EQ(v->counters.processes_exited, 1u);
}

TEST(Publication, AProcessWithoutStartTimeStartsAtItsFirstRecord) {
  Index ix;
  Incarnation* inc = ix.Process(42, std::nullopt);
  ix.File("perfmap", "/tmp/perf-42.map", inc)->Add(0x1000, 321, "f");
  auto v = ix.Build();
  EXPECT_EQ(v->processes.at(42)[0]->start_time, 321u);
}

// A view is built from the one before, setting again only the pids that changed: after any
// sequence of new incarnations, changes and removals it holds exactly what a view built from
// the whole table would (brute force over the table).
TEST(Publication, AViewFromTheOneBeforeHoldsWhatTheWholeTableHolds) {
  Index ix;
  std::mt19937 rng(11);
  for (int step = 0; step < 3000; ++step) {
    const uint32_t pid = 1 + rng() % 64 + (rng() % 4) * 0x10000;  // some pids far apart
    switch (rng() % 4) {
      case 0:
      case 1:
        ix.Process(pid, step);
        break;
      case 2:
        if (auto it = ix.processes.find(pid); it != ix.processes.end()) {
          it->second[rng() % it->second.size()]->changed = true;
        }
        break;
      case 3:
        if (auto it = ix.processes.find(pid); it != ix.processes.end()) {
          it->second.erase(it->second.begin() + rng() % it->second.size());
          if (it->second.empty()) ix.processes.erase(it);
          ix.removed.push_back(pid);
        }
        break;
    }
    if (rng() % 3 != 0) continue;  // several changes per view, as between two publications
    ix.Build();
    size_t pids = 0, incarnations = 0;
    for (const auto& [p, incs] : ix.processes) {
      const auto* got = ix.current.processes.Find(p);
      ASSERT_NE(got, nullptr) << "pid " << p << " at step " << step;
      ASSERT_EQ(got->size(), incs.size()) << "pid " << p << " at step " << step;
      for (size_t i = 0; i < incs.size(); ++i) EXPECT_EQ((*got)[i], incs[i]->view);
      ++pids;
      incarnations += incs.size();
    }
    ASSERT_EQ(ix.current.processes.size(), pids) << "step " << step;
    ASSERT_EQ(ix.current.processes.incarnations(), incarnations) << "step " << step;
  }
}

}  // namespace
}  // namespace jitsym::ingest
