// Writes a V8-like jitdump for benchmarks: jitdump_gen OUT LOADS [PID] [ADDRS_OUT N]
// Code of 64..2047 bytes laid out back to back (the code space is reused every 100000 loads),
// names of ~60 bytes, a line table on one load in eight. With ADDRS_OUT, also writes N random
// addresses inside the last layout (one per line) for lookup benchmarks.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "daemon/formats/jitdump/jitdump_parser.h"
#include "tests/unit/testing/jitdump_builder.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: jitdump_gen OUT LOADS [PID] [ADDRS_OUT N]\n");
    return 2;
  }
  const size_t loads = std::strtoull(argv[2], nullptr, 10);
  const uint32_t pid = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 4242;
  FILE* out = std::fopen(argv[1], "wb");
  if (!out) return 1;
  std::mt19937_64 rng(5);
  const uint64_t base = 0x7f0000000000;
  uint64_t addr = base;
  std::vector<std::pair<uint64_t, uint64_t>> layout;
  {
    jitsym::testing::JitdumpBuilder header(false, 40, pid, jitsym::jitdump::kV8Pad1);
    std::fwrite(header.bytes().data(), 1, header.size(), out);
  }
  const size_t kChunk = 10000;
  for (size_t done = 0; done < loads; done += kChunk) {
    jitsym::testing::JitdumpBuilder b(false, 40, pid, jitsym::jitdump::kV8Pad1);
    for (size_t i = done; i < std::min(loads, done + kChunk); ++i) {
      const uint64_t size = 64 + rng() % 1984;
      const std::string name = "JS:*function_number_" + std::to_string(i) +
                               " /srv/app/lib/module.js:" + std::to_string(i % 5000) + ":17";
      if (i % 8 == 0) {
        std::vector<jitsym::testing::JitdumpBuilder::Entry> entries;
        for (uint64_t off = 0; off < size; off += 24) {
          entries.push_back({addr + 0x40 + off, static_cast<uint32_t>(10 + off / 24), 5,
                             "/srv/app/lib/module.js"});
        }
        b.Debug(1000 + i, addr, entries);
      }
      b.Load(1000 + i, addr, size, name, i);
      if (i % 100000 == 0) layout.clear();
      layout.emplace_back(addr, size);
      addr += size;
      if (i % 100000 == 99999) addr = base;
    }
    std::fwrite(b.bytes().data() + 40, 1, b.size() - 40, out);
  }
  std::fclose(out);
  if (argc > 5) {
    FILE* a = std::fopen(argv[4], "w");
    const size_t n = std::strtoull(argv[5], nullptr, 10);
    for (size_t i = 0; i < n; ++i) {
      const auto& [s, sz] = layout[rng() % layout.size()];
      std::fprintf(a, "0x%llx\n", static_cast<unsigned long long>(s + rng() % sz));
    }
    std::fclose(a);
  }
  return 0;
}
