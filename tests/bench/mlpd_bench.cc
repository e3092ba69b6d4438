// Ingest throughput of Mono log profiler files: a ~100 MB mlpd, built with the tests' MlpdBuilder
// as a profiled program would write it (64 KiB buffers of allocations, method enter/leave,
// GC and sample events, with a JIT record every few dozen events), fed to an MlpdSource in
// 1 MiB reads (the daemon's read size), publishing after each read as the live ingester does.
// The same file gzip-compressed measures the inflating path.
//   build/tests/bench/mlpd_bench --benchmark_repetitions=3
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <random>
#include <string>
#include <vector>

#include "daemon/formats/mlpd/mlpd_parser.h"
#include "daemon/ingest/mlpd_source.h"
#include "tests/unit/testing/mlpd_builder.h"

namespace jitsym {
namespace {

using testing::MlpdBuffer;
using testing::MlpdBuilder;

constexpr size_t kFileBytes = 100u << 20;
constexpr size_t kBufferBytes = 64u << 10;  // mono's BUFFER_SIZE
constexpr size_t kReadBytes = 1u << 20;

std::vector<uint8_t> MakeMlpd(size_t bytes) {
  std::mt19937_64 rng(42);
  MlpdBuilder file(17, 4242);
  uint64_t time = 1000000000;
  uint64_t code = 0x40000000;
  uint64_t jits = 0;
  const uint64_t ptr_base = 0x7f0000000000;
  while (file.bytes().size() < bytes) {
    MlpdBuffer b(time, ptr_base, 0x5000000, 0x7000 + rng() % 8);
    while (b.size() < kBufferBytes - 512) {
      time += 50 + rng() % 2000;
      const uint64_t method = 0x5000000 + (rng() % 20000) * 0x28;
      switch (rng() % 32) {
        case 0: {  // JIT
          const uint64_t size = 0x40 + rng() % 0x600;
          b.Jit(time, method, code, size,
                "MyApp.Services.OrderProcessor" + std::to_string(jits % 997) + ":Process" +
                    std::to_string(jits) +
                    " (MyApp.Model.Order,System.Threading.CancellationToken)");
          code += size;
          ++jits;
          break;
        }
        case 1:  // a sample hit with a managed backtrace
          b.Event(7, 0x00, time).Ptr(ptr_base + 0x7000).Uleb(1).Ptr(code - rng() % 0x1000).Uleb(3);
          for (int i = 0; i < 3; ++i) b.Method(0x5000000 + (rng() % 20000) * 0x28);
          break;
        case 2:  // GC event
          b.Event(1, 0x10, time).Byte(rng() % 8).Byte(rng() % 2);
          break;
        case 3:
        case 4:
        case 5:
        case 6:
        case 7:
        case 8:
        case 9:
        case 10:
        case 11:
        case 12:
          // allocation with a backtrace
          b.Event(0, 0x10, time)
              .Ptr(ptr_base + (rng() % 4000) * 64)
              .Sleb(rng() % 100000)
              .Uleb(24 + rng() % 200)
              .Uleb(2)
              .Method(method)
              .Method(0x5000000 + (rng() % 20000) * 0x28);
          break;
        default:  // method enter/leave
          b.Event(3, rng() % 2 ? 0x20 : 0x10, time).Method(method);
      }
    }
    file.Add(b);
  }
  return file.bytes();
}

const std::vector<uint8_t>& Plain() {
  static const std::vector<uint8_t> bytes = MakeMlpd(kFileBytes);
  return bytes;
}

const std::vector<uint8_t>& Compressed() {
  static const std::vector<uint8_t> bytes = testing::Gzip(Plain(), 1);
  return bytes;
}

void Ingest(benchmark::State& state, const std::vector<uint8_t>& bytes) {
  uint64_t ranges = 0;
  for (auto _ : state) {
    ingest::MlpdSource source("/tmp/bench.mlpd");
    for (size_t off = 0; off < bytes.size(); off += kReadBytes) {
      source.Feed(std::span(bytes).subspan(off, std::min(kReadBytes, bytes.size() - off)));
      source.code().Publish();
    }
    if (source.failed() || source.bad_buffers() != 0) state.SkipWithError("parse failed");
    ranges = source.records();
    benchmark::DoNotOptimize(ranges);
  }
  // Throughput in bytes of the mlpd as mono would write it uncompressed.
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Plain().size()));
  state.counters["ranges"] = static_cast<double>(ranges);
  state.counters["file_MB"] = static_cast<double>(bytes.size()) / 1e6;
}

void BM_IngestPlain(benchmark::State& state) { Ingest(state, Plain()); }
void BM_IngestGzip(benchmark::State& state) { Ingest(state, Compressed()); }

// The parser alone, without the index.
void BM_ParsePlain(benchmark::State& state) {
  struct Null : mlpd::Sink {
  } sink;
  for (auto _ : state) {
    mlpd::Parser parser;
    const auto& bytes = Plain();
    for (size_t off = 0; off < bytes.size(); off += kReadBytes) {
      parser.Feed(std::span(bytes).subspan(off, std::min(kReadBytes, bytes.size() - off)), sink);
    }
    benchmark::DoNotOptimize(parser.events());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Plain().size()));
}

// zlib alone: inflating the compressed file in the same reads into the parser's 256 KiB
// output buffer, output discarded. Ingesting a gzip'd file cannot be faster than this.
void BM_InflateOnly(benchmark::State& state) {
  const auto& bytes = Compressed();
  std::vector<uint8_t> out(256 * 1024);
  for (auto _ : state) {
    z_stream zs{};
    inflateInit2(&zs, 16 + MAX_WBITS);
    size_t total = 0;
    for (size_t off = 0; off < bytes.size(); off += kReadBytes) {
      zs.next_in = const_cast<Bytef*>(bytes.data() + off);
      zs.avail_in = static_cast<uInt>(std::min(kReadBytes, bytes.size() - off));
      do {
        zs.next_out = out.data();
        zs.avail_out = static_cast<uInt>(out.size());
        if (inflate(&zs, Z_NO_FLUSH) < 0) state.SkipWithError("inflate failed");
        total += out.size() - zs.avail_out;
      } while (zs.avail_in != 0 || zs.avail_out == 0);
    }
    inflateEnd(&zs);
    if (total != Plain().size()) state.SkipWithError("inflated size differs");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Plain().size()));
}

BENCHMARK(BM_ParsePlain)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_InflateOnly)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_IngestPlain)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_IngestGzip)->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace
}  // namespace jitsym

BENCHMARK_MAIN();
