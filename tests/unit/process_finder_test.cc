// Which incarnation a lookup's "pid" names, with made-up views and a made-up /proc: a pid, a
// thread id remembered by an exited incarnation (with and without a time), a thread /proc
// shows now that the index has not seen yet, and thread ids reused by another process.
#include "daemon/query/process_finder.h"

#include <gtest/gtest.h>

#include <map>

namespace jitsym::query {
namespace {

struct Made {
  index::IndexView view;
  std::map<uint32_t, uint32_t> live_threads;  // tid -> its process now
  int proc_reads = 0;

  const index::ProcessView* Add(uint32_t pid, uint64_t incarnation, uint64_t start,
                                std::optional<uint64_t> exit, std::vector<uint32_t> threads) {
    auto p = std::make_shared<index::ProcessView>();
    p->pid = pid;
    p->incarnation = incarnation;
    p->start_time = start;
    p->exit_time = exit;
    p->alive = !exit;
    p->threads = index::ThreadIds(std::move(threads));
    view.processes.Add(pid, p);
    return p.get();
  }
  const index::ProcessView* Find(uint32_t id, std::optional<uint64_t> time) {
    return ProcessFinder(view, id,
                         [this](uint32_t tid) -> std::optional<uint32_t> {
                           ++proc_reads;
                           auto it = live_threads.find(tid);
                           if (it == live_threads.end()) return std::nullopt;
                           return it->second;
                         })
        .Find(time);
  }
};

TEST(ProcessFinder, APidNamesItsIncarnationWithoutReadingProc) {
  Made m;
  const auto* a = m.Add(100, 1, 1000, 2000, {100, 101});
  const auto* b = m.Add(100, 2, 3000, std::nullopt, {100});
  EXPECT_EQ(m.Find(100, 1500), a);
  EXPECT_EQ(m.Find(100, 3500), b);
  EXPECT_EQ(m.Find(100, std::nullopt), b);
  EXPECT_EQ(m.proc_reads, 0);
  EXPECT_EQ(m.Find(555, 1500), nullptr);
}

TEST(ProcessFinder, AThreadIdAfterTheExitNamesTheIncarnationThatHadIt) {
  Made m;
  const auto* a = m.Add(100, 1, 1000, 2000, {100, 101, 102});
  EXPECT_EQ(m.Find(101, 1500), a);
  EXPECT_EQ(m.Find(102, std::nullopt), a);
  EXPECT_EQ(m.Find(103, 1500), nullptr);
}

TEST(ProcessFinder, AThreadIdReusedByAnotherExitedProcessIsToldByTheTime) {
  Made m;
  const auto* a = m.Add(100, 1, 1000, 2000, {100, 150});
  const auto* b = m.Add(200, 2, 3000, 4000, {150, 200});
  EXPECT_EQ(m.Find(150, 1500), a);
  EXPECT_EQ(m.Find(150, 3500), b);
  EXPECT_EQ(m.Find(150, std::nullopt), b);  // the latest
}

TEST(ProcessFinder, APidThatWasAlsoAnotherProcessesThreadIsToldByTheTime) {
  Made m;
  // 150 was a thread of pid 100, then (after 100 exited) a process of its own.
  const auto* thread_of = m.Add(100, 1, 1000, 2000, {100, 150});
  const auto* own = m.Add(150, 2, 3000, std::nullopt, {150});
  EXPECT_EQ(m.Find(150, 1500), thread_of);
  EXPECT_EQ(m.Find(150, 3500), own);
  EXPECT_EQ(m.Find(150, std::nullopt), own);
}

TEST(ProcessFinder, WithoutATimeWhatHoldsTheNumberNowWins) {
  Made m;
  const auto* exited = m.Add(100, 1, 1000, 2000, {100, 150});
  const auto* live = m.Add(300, 2, 2500, std::nullopt, {300});
  // 150 is now a thread of the live 300, which the tracker has not listed since.
  m.live_threads[150] = 300;
  EXPECT_EQ(m.Find(150, std::nullopt), live);
  // At a time when 100 lived, 100's.
  EXPECT_EQ(m.Find(150, 1500), exited);
  // Now a thread of a process the index does not know: not the exited one's.
  m.live_threads[150] = 400;
  EXPECT_EQ(m.Find(150, std::nullopt), nullptr);
  // Now a process of its own, not indexed: likewise.
  m.live_threads[150] = 150;
  EXPECT_EQ(m.Find(150, std::nullopt), nullptr);
}

TEST(ProcessFinder, ANewThreadOfALiveProcessNamesIt) {
  Made m;
  const auto* p = m.Add(300, 1, 1000, std::nullopt, {300, 301});
  m.live_threads[305] = 300;
  EXPECT_EQ(m.Find(305, 1500), p);
  EXPECT_EQ(m.Find(305, std::nullopt), p);
  EXPECT_EQ(m.Find(306, 1500), nullptr);
  // /proc is read once per finder, however many times are asked.
  m.proc_reads = 0;
  ProcessFinder finder(m.view, 305, [&](uint32_t) -> std::optional<uint32_t> {
    ++m.proc_reads;
    return 300;
  });
  EXPECT_EQ(finder.Find(1100), p);
  EXPECT_EQ(finder.Find(1200), p);
  EXPECT_EQ(finder.Find(std::nullopt), p);
  EXPECT_EQ(m.proc_reads, 1);
}

}  // namespace
}  // namespace jitsym::query
