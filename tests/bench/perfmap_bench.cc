// Ingest throughput of perf maps: a 100 MB file of V8-like lines fed to a PerfmapSource in 1 MiB
// reads (the daemon's read size), publishing after every read (/1: a file read as it grows) or
// every 32 reads (/32: the ingester's drain budget, a file found complete), or once (/1000).
//   build/tests/bench/perfmap_bench --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>

#include "daemon/ingest/perfmap_source.h"

namespace jitsym {
namespace {

// Lines as V8's --perf-basic-prof writes them, with some address reuse and JVM-style lines mixed
// in, until `bytes` is reached.
std::string MakePerfMap(size_t bytes) {
  std::mt19937_64 rng(42);
  std::string out;
  out.reserve(bytes + 256);
  uint64_t addr = 0x3ef414e00000;
  char line[256];
  for (uint64_t i = 0; out.size() < bytes; ++i) {
    const uint64_t size = 0x40 + rng() % 0x800;
    const uint64_t start = rng() % 8 == 0 ? addr - (rng() % 64 + 1) * 0x400 : addr;  // reuse
    int n;
    if (i % 16 == 0) {
      n = std::snprintf(line, sizeof(line), "0x%016llx 0x%016llx void pkg.Class%llu.method(int)\n",
                        static_cast<unsigned long long>(start),
                        static_cast<unsigned long long>(size),
                        static_cast<unsigned long long>(i % 5000));
    } else {
      n = std::snprintf(
          line, sizeof(line), "%llx %llx LazyCompile:*fn_%llu /srv/app/mod%llu.js:%llu\n",
          static_cast<unsigned long long>(start), static_cast<unsigned long long>(size),
          static_cast<unsigned long long>(i % 50000), static_cast<unsigned long long>(i % 97),
          static_cast<unsigned long long>(i % 1000));
    }
    out.append(line, static_cast<size_t>(n));
    if (start == addr) addr += size;
  }
  return out;
}

void BM_IngestPerfMap(benchmark::State& state) {
  const std::string text = MakePerfMap(static_cast<size_t>(state.range(0)) << 20);
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const size_t chunk = 1 << 20;
  // Reads per publication: the ingester publishes after each round of reads, up to its drain
  // budget (32 MiB) per file; a file written slowly is published after every read.
  const size_t publish_every = static_cast<size_t>(state.range(1));
  uint64_t lines = 0;
  for (auto _ : state) {
    ingest::SourceContext context;  // found empty: every line is stamped when read
    ingest::PerfmapSource source("bench", context);
    size_t reads = 0;
    for (size_t off = 0; off < text.size(); off += chunk) {
      source.Feed({bytes + off, std::min(chunk, text.size() - off)});
      if (++reads % publish_every == 0) benchmark::DoNotOptimize(source.code().Publish());
    }
    benchmark::DoNotOptimize(source.code().Publish());
    // /1 in the third argument: include the merge into one run that the ingester does once the
    // file has been idle for a second (answers are complete before it; it makes them faster).
    if (state.range(2) != 0) benchmark::DoNotOptimize(source.code().CompactAll());
    lines = source.records();
    if (source.malformed() != 0) state.SkipWithError("malformed lines in generated input");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["file_MB"] = text.size() / 1e6;
  state.counters["lines"] = static_cast<double>(lines);
}
BENCHMARK(BM_IngestPerfMap)
    ->Args({100, 1, 0})
    ->Args({100, 32, 0})
    ->Args({100, 32, 1})
    ->Args({100, 1000, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The parser alone (what the index and the name table cost is the difference to the above).
void BM_ParsePerfMap(benchmark::State& state) {
  struct Count : perfmap::Sink {
    uint64_t n = 0, bytes = 0;
    void OnEntry(const perfmap::Entry& e) override {
      ++n;
      bytes += e.name.size() + e.size;
    }
  };
  const std::string text = MakePerfMap(static_cast<size_t>(state.range(0)) << 20);
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const size_t chunk = 1 << 20;
  for (auto _ : state) {
    perfmap::Parser parser;
    Count count;
    for (size_t off = 0; off < text.size(); off += chunk) {
      parser.Feed({bytes + off, std::min(chunk, text.size() - off)}, count);
    }
    benchmark::DoNotOptimize(count.bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ParsePerfMap)->Arg(100)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace jitsym

BENCHMARK_MAIN();
