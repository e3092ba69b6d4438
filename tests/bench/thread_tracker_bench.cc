// What the thread tracker's tick costs (daemon/ingest/thread_tracker.h): N live processes with
// side files, T threads each, with the daemon's own probe (a pidfd per process). Each tick lists
// /proc/PID/task of every process and polls its pidfd; the first tick learns every id, the
// next ones learn nothing (the steady state). Not registered in CMake; build and run (as root,
// for the descriptor limit) from a configured build directory:
//   g++ -std=c++20 -O2 -I. tests/bench/thread_tracker_bench.cc build/libjitsym_ingest.a \
//     build/libjitsym_security.a build/libjitsym_os.a build/libjitsym_index.a \
//     build/libjitsym_util.a -o /tmp/thread_tracker_bench && /tmp/thread_tracker_bench 1000 20
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "daemon/ingest/followed_file.h"
#include "daemon/ingest/thread_tracker.h"

namespace {

// A child with `threads` threads in all that sleeps until killed.
pid_t SpawnThreaded(int threads) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (int i = 1; i < threads; ++i) std::thread([] { ::pause(); }).detach();
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jitsym;
  const int processes = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 20;
  rlimit nofile{65536, 65536};
  ::setrlimit(RLIMIT_NOFILE, &nofile);
  std::vector<pid_t> children;
  for (int i = 0; i < processes; ++i) children.push_back(SpawnThreaded(threads));
  ::sleep(1);  // the threads start
  boost::asio::io_context io;
  security::Limits limits;
  limits.user_files = limits.total_files = 1 << 20;
  security::LimitLedger ledger(limits);
  ingest::PidfdProbe probe(io, ledger, [](ingest::Incarnation*) {});
  ingest::ProcessTable table(probe);
  ingest::FollowedFile file;  // every process has a side file: only its presence matters
  size_t watched = 0;
  for (pid_t pid : children) {
    ingest::Incarnation* inc = table.Live(static_cast<uint32_t>(pid));
    inc->files.push_back(&file);
    watched += probe.Watched(*inc);
  }
  ingest::ThreadTracker tracker(probe);
  for (int tick = 0; tick < 20; ++tick) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool learned = tracker.Tick(table.processes());
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    size_t ids = 0;
    for (const auto& [pid, incs] : table.processes()) {
      for (const auto& inc : incs) ids += inc->threads.size();
    }
    std::printf("tick %d: %d processes (%zu with a pidfd), %zu thread ids%s: %lld us\n", tick,
                processes, watched, ids, learned ? " (learned)" : "", static_cast<long long>(us));
  }
  for (auto& [pid, incs] : table.processes()) {
    for (auto& inc : incs) inc->files.clear();
  }
  table.UnwatchAll();
  for (pid_t pid : children) ::kill(pid, SIGKILL);
  for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
}
