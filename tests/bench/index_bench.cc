// In-process benchmarks of the index and the jitdump ingest path.
//   build/tests/bench/index_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "daemon/index/code_map.h"
#include "daemon/ingest/jitdump_source.h"
#include "tests/unit/testing/jitdump_builder.h"

namespace jitsym {
namespace {

constexpr uint64_t kBase = 0x7f0000000000;

// `live` functions laid out back to back, 64..2047 bytes each, as a JIT's code space.
struct Layout {
  std::vector<uint64_t> starts;
  std::vector<uint64_t> sizes;
  uint64_t end = kBase;
};
Layout MakeLayout(size_t live, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Layout l;
  for (size_t i = 0; i < live; ++i) {
    const uint64_t size = 64 + rng() % 1984;
    l.starts.push_back(l.end);
    l.sizes.push_back(size);
    l.end += size + (rng() % 4 == 0 ? 32 : 0);  // some gaps
  }
  return l;
}

std::vector<uint64_t> RandomAddrs(const Layout& l, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> out(n);
  for (auto& a : out) a = kBase + rng() % (l.end - kBase);
  return out;
}

// Lookup "now" with N live ranges (one compacted run, as after ingestion goes idle).
void BM_LookupNow(benchmark::State& state) {
  const size_t n = state.range(0);
  Layout l = MakeLayout(n, 1);
  index::CodeMap map;
  for (size_t i = 0; i < n; ++i) {
    map.Add(l.starts[i], l.sizes[i], 1000 + i, map.Intern("fn_" + std::to_string(i)));
  }
  auto snap = map.CompactAll();
  auto addrs = RandomAddrs(l, 1 << 16, 2);
  std::string name;
  size_t i = 0, found = 0;
  for (auto _ : state) {
    auto s = snap->Find(addrs[i++ & 0xffff], std::nullopt);
    if (s) {
      name.assign(s->name);  // an answer copies the name out
      ++found;
    }
    benchmark::DoNotOptimize(name);
  }
  state.counters["found%"] = 100.0 * found / state.iterations();
  state.counters["mem/range"] =
      static_cast<double>(map.memory_bytes() - map.name_bytes()) / static_cast<double>(n);
  // Names are interned: count the name table apart from the ranges.
  index::CodeMap names_only;
  for (size_t k = 0; k < n; ++k) names_only.Intern("fn_" + std::to_string(k));
  state.counters["mem/range_excl_names"] =
      static_cast<double>(map.memory_bytes() - names_only.memory_bytes()) / static_cast<double>(n);
}
BENCHMARK(BM_LookupNow)->Arg(16)->Arg(1 << 10)->Arg(1 << 20)->Unit(benchmark::kNanosecond);

// The same lookups in batches of 4096 (how requests reach the index), copying each name out as
// an answer must. Reported per address.
void BM_LookupNowBatch(benchmark::State& state) {
  const size_t n = state.range(0);
  Layout l = MakeLayout(n, 1);
  index::CodeMap map;
  for (size_t i = 0; i < n; ++i) {
    map.Add(l.starts[i], l.sizes[i], 1000 + i, map.Intern("fn_" + std::to_string(i)));
  }
  auto snap = map.CompactAll();
  auto addrs = RandomAddrs(l, 1 << 16, 2);
  constexpr size_t kBatch = 4096;
  std::vector<std::optional<index::Symbol>> out(kBatch);
  std::string name;
  size_t off = 0, found = 0;
  for (auto _ : state) {
    std::fill(out.begin(), out.end(), std::nullopt);
    snap->FindBatch(addrs.data() + off, kBatch, std::nullopt, out.data());
    for (auto& s : out) {
      if (s) {
        name.assign(s->name);
        ++found;
      }
    }
    benchmark::DoNotOptimize(name);
    off = (off + kBatch) & 0xffff;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
  state.counters["ns/addr"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBatch),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["found%"] = 100.0 * found / (state.iterations() * kBatch);
}
BENCHMARK(BM_LookupNowBatch)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

// The range search alone, batched (no symbol, no name): what the index structure itself costs.
void BM_RangeSearchBatch(benchmark::State& state) {
  const size_t n = state.range(0);
  Layout l = MakeLayout(n, 1);
  index::RangeSet set;
  for (size_t i = 0; i < n; ++i) set.Add(l.starts[i], l.sizes[i], 1000 + i, i);
  auto snap = set.CompactAll();
  auto addrs = RandomAddrs(l, 1 << 16, 2);
  constexpr size_t kBatch = 4096;
  std::vector<index::Found> out(kBatch);
  size_t off = 0;
  for (auto _ : state) {
    std::fill(out.begin(), out.end(), index::Found{});
    snap->FindBatch(addrs.data() + off, kBatch, std::nullopt, out.data());
    benchmark::DoNotOptimize(out.data());
    off = (off + kBatch) & 0xffff;
  }
  state.counters["ns/addr"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBatch),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RangeSearchBatch)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

// The same lookups against a std::map keyed by start (what a plain "latest wins" table does).
void BM_LookupNowStdMapBaseline(benchmark::State& state) {
  const size_t n = state.range(0);
  Layout l = MakeLayout(n, 1);
  std::map<uint64_t, std::pair<uint64_t, std::string>> map;
  for (size_t i = 0; i < n; ++i) map[l.starts[i]] = {l.sizes[i], "fn_" + std::to_string(i)};
  auto addrs = RandomAddrs(l, 1 << 16, 2);
  size_t i = 0;
  for (auto _ : state) {
    const uint64_t a = addrs[i++ & 0xffff];
    auto it = map.upper_bound(a);
    const std::string* name = nullptr;
    if (it != map.begin() && a < std::prev(it)->first + std::prev(it)->second.first) {
      name = &std::prev(it)->second.second;
    }
    benchmark::DoNotOptimize(name);
  }
}
BENCHMARK(BM_LookupNowStdMapBaseline)->Arg(1 << 20)->Unit(benchmark::kNanosecond);

// Address reuse: `generations` rounds, each redefining the whole code space with a new layout
// (as V8 after GC); lookups at random past times.
void BM_LookupAtTime(benchmark::State& state) {
  const size_t per_gen = state.range(0);
  const size_t generations = state.range(1);
  index::CodeMap map;
  uint64_t t = 1000;
  for (size_t g = 0; g < generations; ++g) {
    Layout l = MakeLayout(per_gen, 100 + g);
    for (size_t i = 0; i < per_gen; ++i) {
      map.Add(l.starts[i], l.sizes[i], t++,
              map.Intern("g" + std::to_string(g) + "_" + std::to_string(i)));
    }
  }
  auto snap = map.CompactAll();
  Layout l0 = MakeLayout(per_gen, 100);
  auto addrs = RandomAddrs(l0, 1 << 16, 3);
  std::mt19937_64 rng(4);
  std::vector<uint64_t> times(1 << 16);
  for (auto& x : times) x = 1000 + rng() % (t - 1000);
  size_t i = 0, found = 0;
  for (auto _ : state) {
    auto s = snap->Find(addrs[i & 0xffff], times[i & 0xffff]);
    ++i;
    found += s.has_value();
    benchmark::DoNotOptimize(s);
  }
  state.counters["found%"] = 100.0 * found / state.iterations();
  state.counters["ranges"] = static_cast<double>(per_gen * generations);
}
BENCHMARK(BM_LookupAtTime)->Args({100000, 10})->Args({10000, 100})->Unit(benchmark::kNanosecond);

// A V8-like jitdump: names of ~50 bytes, code of 64..2047 bytes, a line table on one in eight.
std::vector<uint8_t> MakeJitdump(size_t loads) {
  testing::JitdumpBuilder b(false, 40, 4242, jitdump::kV8Pad1);
  std::mt19937_64 rng(5);
  uint64_t addr = kBase;
  for (size_t i = 0; i < loads; ++i) {
    const uint64_t size = 64 + rng() % 1984;
    const std::string name = "JS:*function_number_" + std::to_string(i) +
                             " /srv/app/lib/module.js:" + std::to_string(i % 5000) + ":17";
    if (i % 8 == 0) {
      std::vector<testing::JitdumpBuilder::Entry> entries;
      for (uint64_t off = 0; off < size; off += 24) {
        entries.push_back(
            {addr + 0x40 + off, static_cast<uint32_t>(10 + off / 24), 5, "/srv/app/lib/module.js"});
      }
      b.Debug(1000 + i, addr, entries);
    }
    b.Load(1000 + i, addr, size, name, i);
    addr += size;
    if (i % 50000 == 49999) addr = kBase;  // reuse the code space
  }
  return b.bytes();
}

void BM_IngestJitdump(benchmark::State& state) {
  const auto bytes = MakeJitdump(state.range(0));
  const size_t chunk = 1 << 20;
  for (auto _ : state) {
    ingest::JitdumpSource source("bench");
    for (size_t off = 0; off < bytes.size(); off += chunk) {
      source.Feed({bytes.data() + off, std::min(chunk, bytes.size() - off)});
      benchmark::DoNotOptimize(source.code().Publish());  // one publication per read, as live
    }
    if (source.failed()) state.SkipWithError(source.error().c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
  state.counters["file_MB"] = bytes.size() / 1e6;
}
BENCHMARK(BM_IngestJitdump)->Arg(200000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace jitsym

BENCHMARK_MAIN();
