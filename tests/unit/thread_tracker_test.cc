// The thread tracker without /proc: made-up thread lists stand for the processes, and the
// tracker is checked for what lookups by thread id after an exit rely on: ids of live indexed
// processes are remembered (sorted, once each) and published as changes; a list read after the
// pid was reused is not believed; processes without side files, exited ones and ones without a
// known start time are not looked at; both bounds hold.
#include "daemon/ingest/thread_tracker.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "daemon/ingest/followed_file.h"

namespace jitsym::ingest {
namespace {

struct World {
  std::map<uint32_t, std::vector<uint32_t>> tasks;  // pid -> its threads now
  std::set<uint32_t> reused;                        // pids now held by another process
  int lists = 0;
  ProcessTable::Map processes;
  FollowedFile file;  // a side file: only its presence matters

  // Every tick looks at every process unless told otherwise.
  ThreadTracker Tracker(ThreadTracker::Options options = {.max_interval = 1}) {
    return ThreadTracker(
        options,
        [this](uint32_t pid, size_t limit) {
          ++lists;
          std::vector<uint32_t> t = tasks[pid];
          if (t.size() > limit) t.resize(limit);
          return t;
        },
        [this](Incarnation& inc) { return reused.count(inc.pid) == 0; });
  }
  Incarnation* Process(uint32_t pid, bool with_file = true) {
    auto inc = std::make_unique<Incarnation>();
    inc->pid = pid;
    inc->id = processes.size() + 1;
    inc->alive = true;
    inc->start_ticks = 100;
    inc->changed = false;
    if (with_file) inc->files.push_back(&file);
    processes[pid].push_back(std::move(inc));
    return processes[pid].back().get();
  }
};

TEST(ThreadTracker, RemembersThreadsOfLiveIndexedProcesses) {
  World w;
  ThreadTracker tracker = w.Tracker();
  Incarnation* a = w.Process(100);
  w.tasks[100] = {100, 105, 103};
  EXPECT_TRUE(tracker.Tick(w.processes));
  EXPECT_EQ(a->threads, (std::vector<uint32_t>{100, 103, 105}));
  EXPECT_TRUE(a->changed);
  // Nothing new: nothing to publish.
  a->changed = false;
  EXPECT_FALSE(tracker.Tick(w.processes));
  EXPECT_FALSE(a->changed);
  // Threads that ended stay remembered; new ones are added.
  w.tasks[100] = {100, 107};
  EXPECT_TRUE(tracker.Tick(w.processes));
  EXPECT_EQ(a->threads, (std::vector<uint32_t>{100, 103, 105, 107}));
}

TEST(ThreadTracker, ListsOnlyLiveProcessesWithFilesAndAKnownStart) {
  World w;
  ThreadTracker tracker = w.Tracker();
  w.Process(100, /*with_file=*/false);
  Incarnation* exited = w.Process(200);
  exited->alive = false;
  Incarnation* unknown = w.Process(300);
  unknown->start_ticks.reset();
  w.tasks = {{100, {100, 101}}, {200, {200, 201}}, {300, {300, 301}}};
  EXPECT_FALSE(tracker.Tick(w.processes));
  EXPECT_EQ(w.lists, 0);
  EXPECT_FALSE(tracker.Look(*unknown, w.processes));
}

TEST(ThreadTracker, AListOfAReusedPidIsNotBelieved) {
  World w;
  ThreadTracker tracker = w.Tracker();
  Incarnation* a = w.Process(100);
  w.tasks[100] = {100, 101};
  w.reused.insert(100);  // the process exited and another one holds pid 100 now
  EXPECT_FALSE(tracker.Tick(w.processes));
  EXPECT_FALSE(tracker.Look(*a, w.processes));
  EXPECT_TRUE(a->threads.empty());
}

TEST(ThreadTracker, LookAtTheExitAddsTheLastThreads) {
  World w;
  ThreadTracker tracker = w.Tracker();
  Incarnation* a = w.Process(100);
  w.tasks[100] = {100};
  tracker.Tick(w.processes);
  w.tasks[100] = {100, 150};
  EXPECT_TRUE(tracker.Look(*a, w.processes));
  EXPECT_EQ(a->threads, (std::vector<uint32_t>{100, 150}));
  w.tasks[100] = {};  // gone
  EXPECT_FALSE(tracker.Look(*a, w.processes));
  EXPECT_EQ(a->threads.size(), 2u);
}

TEST(ThreadTracker, BoundedPerProcessAndInTotal) {
  World w;
  ThreadTracker tracker = w.Tracker({.per_process = 3, .total = 5, .max_interval = 1});
  Incarnation* a = w.Process(100);
  Incarnation* b = w.Process(200);
  w.tasks[100] = {100, 101, 102, 103, 104};
  w.tasks[200] = {200, 201, 202, 203};
  tracker.Tick(w.processes);
  EXPECT_EQ(a->threads.size(), 3u);
  EXPECT_EQ(b->threads.size(), 2u);  // what the total leaves
  // Full: more threads are not remembered, and full processes are not listed again.
  w.tasks[100] = {110, 111};
  w.tasks[200] = {210};
  const int lists = w.lists;
  EXPECT_FALSE(tracker.Tick(w.processes));
  EXPECT_EQ(w.lists, lists);
  EXPECT_FALSE(tracker.Look(*b, w.processes));
  // An evicted incarnation gives its share back.
  w.processes.erase(100);
  EXPECT_TRUE(tracker.Tick(w.processes));
  EXPECT_EQ(b->threads.size(), 3u);
}

TEST(ThreadTracker, AProcessWhoseThreadsStayTheSameIsLookedAtLessOften) {
  World w;
  ThreadTracker tracker = w.Tracker({.max_interval = 4});
  Incarnation* a = w.Process(100);
  w.tasks[100] = {100, 101};
  std::vector<int> looked;
  for (int tick = 1; tick <= 12; ++tick) {
    const int before = w.lists;
    tracker.Tick(w.processes);
    if (w.lists > before) looked.push_back(tick);
  }
  // Learned at 1, then nothing new: after 1, 2, 4, 4, 4 ticks.
  EXPECT_EQ(looked, (std::vector<int>{1, 2, 4, 8, 12}));
  // A new thread is learned at the next look (16), and the intervals start over.
  w.tasks[100] = {100, 101, 102};
  looked.clear();
  for (int tick = 13; tick <= 19; ++tick) {
    const int before = w.lists;
    tracker.Tick(w.processes);
    if (w.lists > before) looked.push_back(tick);
  }
  EXPECT_EQ(looked, (std::vector<int>{16, 17, 19}));
  EXPECT_EQ(a->threads, (std::vector<uint32_t>{100, 101, 102}));
}

}  // namespace
}  // namespace jitsym::ingest
