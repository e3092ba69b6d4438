// The cost of process discovery (os::ProcessCatalog + ingest::ProcessScanner) on a host with
// many real processes: JITSYM_SCAN_BENCH_PROCS (default 1000) children that exec `sleep`, or,
// with JITSYM_SCAN_BENCH_MAPPINGS=N, that map a file N times (a big process's maps).
//   sudo build/tests/bench/scan_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
// The CPU column is the scanning thread's CPU time. BM_SteadyTick runs one 1-second tick per
// iteration on a fake clock once every process is older than the young re-check ages, so its
// CPU time per iteration is the CPU per second of steady-state scanning (core_pct = that as a
// percentage of one core).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "daemon/ingest/process_scanner.h"
#include "daemon/os/process_catalog.h"
#include "daemon/util/clock.h"

namespace jitsym {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

class Sleepers {
 public:
  Sleepers(size_t n, size_t mappings) {
    for (size_t i = 0; i < n; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (mappings == 0) {
          ::execl("/bin/sleep", "sleep", "86400", static_cast<char*>(nullptr));
          _exit(127);
        }
        // A big process's maps: `mappings` lines naming a file (each at offset 0, so that
        // none merges with its neighbour).
        const int fd = ::open("/bin/sleep", O_RDONLY);
        for (size_t m = 0; m < mappings && fd >= 0; ++m) {
          ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
        }
        for (;;) ::pause();
      }
      if (pid > 0) pids_.push_back(pid);
    }
    ::usleep(200000);  // let them exec
  }
  ~Sleepers() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }

 private:
  std::vector<pid_t> pids_;
};

size_t EnvCount(const char* name, size_t fallback) {
  const char* env = std::getenv(name);
  return env ? std::strtoul(env, nullptr, 10) : fallback;
}

Sleepers& TheSleepers() {
  static Sleepers sleepers(EnvCount("JITSYM_SCAN_BENCH_PROCS", 1000),
                           EnvCount("JITSYM_SCAN_BENCH_MAPPINGS", 0));
  return sleepers;
}

ingest::ProcessScanner::Handlers NoHandlers() { return {}; }

// A daemon's start: the catalog of every process and one read of every maps file.
void BM_FirstFullScan(benchmark::State& state) {
  TheSleepers();
  size_t processes = 0, reads = 0;
  for (auto _ : state) {
    boost::asio::io_context io;
    os::ProcessCatalog catalog;
    ingest::ProcessScanner::Options options;
    options.maps_reads_per_tick = 1 << 20;
    options.tick_budget_ns = 3600 * kSecond;
    ingest::ProcessScanner scanner(io, catalog, options, NoHandlers());
    scanner.Tick(MonotonicNowNs());
    processes = catalog.size();
    reads = scanner.stats().last_tick_maps_reads;
  }
  state.counters["processes"] = static_cast<double>(processes);
  state.counters["maps_reads"] = static_cast<double>(reads);
}
BENCHMARK(BM_FirstFullScan)->Unit(benchmark::kMillisecond)->Iterations(3);

// A catalog Refresh when nothing changed: the readdir of /proc and the 1/64 verification.
void BM_RefreshUnchanged(benchmark::State& state) {
  TheSleepers();
  os::ProcessCatalog catalog;
  uint64_t now = MonotonicNowNs();
  catalog.Refresh(now);
  for (auto _ : state) catalog.Refresh(now += kSecond);
  state.counters["processes"] = static_cast<double>(catalog.size());
}
BENCHMARK(BM_RefreshUnchanged)->Unit(benchmark::kMicrosecond);

// One steady-state tick per iteration (1 s on the fake clock): Refresh plus the maps re-checks
// that came due, with every process older than the young ages (64 s).
void BM_SteadyTick(benchmark::State& state) {
  TheSleepers();
  boost::asio::io_context io;
  os::ProcessCatalog catalog;
  ingest::ProcessScanner scanner(io, catalog, {}, NoHandlers());
  uint64_t now = MonotonicNowNs();
  // Through the start-up scan and the young ages, into the steady re-checks.
  scanner.Tick(now += kSecond);
  const uint64_t first = scanner.stats().cpu_ns;
  int startup_ticks = 1;  // until the start-up scan has read every process once
  for (int s = 1; s < 200; ++s) {
    if (scanner.stats().unchecked > 0) ++startup_ticks;
    scanner.Tick(now += kSecond);
  }
  state.counters["startup_ticks"] = startup_ticks;
  // The 199 s after the first scan: every process young (as after a mass start), then steady.
  state.counters["young_core_pct"] =
      static_cast<double>(scanner.stats().cpu_ns - first) / 199 / 1e9 * 100;
  const uint64_t cpu0 = scanner.stats().cpu_ns;
  const uint64_t reads0 = scanner.stats().maps_reads;
  const uint64_t ticks0 = scanner.stats().ticks;
  for (auto _ : state) scanner.Tick(now += kSecond);
  const double ticks = static_cast<double>(scanner.stats().ticks - ticks0);
  const double cpu_per_tick = static_cast<double>(scanner.stats().cpu_ns - cpu0) / ticks;
  state.counters["processes"] = static_cast<double>(catalog.size());
  state.counters["maps_reads_per_tick"] =
      static_cast<double>(scanner.stats().maps_reads - reads0) / ticks;
  state.counters["core_pct"] = cpu_per_tick / 1e9 * 100;
  state.counters["steady_period_s"] = static_cast<double>(scanner.stats().steady_period_ns) / 1e9;
}
BENCHMARK(BM_SteadyTick)->Unit(benchmark::kMicrosecond)->Iterations(600);

}  // namespace
}  // namespace jitsym

BENCHMARK_MAIN();
