#include "daemon/native/native_module.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/native/debug_file_locator.h"
#include "daemon/native/key_index.h"
#include "daemon/native/module_cache.h"
#include "daemon/native/string_pool.h"
#include "daemon/os/process_maps.h"
#include "tests/unit/testing/self_path.h"

namespace jitsym::native {

volatile int g_native_sink = 1;

namespace {

using ::jitsym::testing::SelfPath;

inline __attribute__((always_inline)) int NativeInner(int x) {
  return x * g_native_sink + 7;  // kInnerLine
}
constexpr uint32_t kInnerLine = __LINE__ - 2;

__attribute__((noinline)) int NativeOuter(int x) {
  int y = NativeInner(x);  // kCallLine
  return y * g_native_sink + NativeInner(y + 1);
}
constexpr uint32_t kCallLine = __LINE__ - 3;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string WriteTemp(const std::string& bytes) {
  char name[] = "/tmp/jitsym-native-test-XXXXXX";
  const int fd = ::mkstemp(name);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  return name;
}

// The ELF virtual address of a function of this binary (the test runs as a PIE or not).
uint64_t VirtualAddressOf(const NativeModule& m, const void* fn) {
  const uint64_t addr = reinterpret_cast<uint64_t>(fn);
  const auto maps = os::ReadProcessMaps(static_cast<uint32_t>(::getpid()));
  for (const os::Mapping& map : *maps) {
    if (addr >= map.start && addr < map.end && map.path == m.path()) {
      auto v = m.FileOffsetToAddress(addr - map.start + map.file_offset);
      return v ? *v : 0;
    }
  }
  return 0;
}

TEST(NativeDemangle, AsLlvmSymbolizerPrints) {
  EXPECT_EQ(Demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(Demangle("_ZN3foo3barEi.cold"), "foo::bar(int) (.cold)");
  EXPECT_EQ(Demangle("_ZN3foo3barEi.constprop.0.cold"), "foo::bar(int) (.constprop.0.cold)");
  EXPECT_EQ(Demangle("_ZZ4mainENKUliE0_clEi"), "main::'lambda0'(int)::operator()(int) const");
  EXPECT_EQ(Demangle("_ZZ4mainENKUlvE_clEv"), "main::'lambda'()::operator()() const");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Znot-mangled"), "_Znot-mangled");
  EXPECT_EQ(HexBuildId(std::string("\x01\xab", 2)), "01ab");
}

// The order in which separate debug files are tried: build-id trees first, then debuginfod's
// files, then the debuglink name beside the binary, in its .debug/, and under each debug dir.
TEST(NativeDebugFile, CandidatesInSearchOrder) {
  DebugSearch search;
  search.debug_dirs = {"/usr/lib/debug", "/opt/dbg"};
  search.extra_files = {"/cache/debuginfo"};
  const DebugLink link{"app.debug", 0x1234u};
  std::vector<std::string> paths;
  bool debuglink_only_last = true;
  for (const DebugCandidate& c : DebugFileCandidates("/usr/bin/app", "abcdef", &link, search)) {
    paths.push_back(c.path);
    if (c.from_debuglink != c.path.ends_with("app.debug")) debuglink_only_last = false;
  }
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "/usr/lib/debug/.build-id/ab/cdef.debug", "/opt/dbg/.build-id/ab/cdef.debug",
                       "/cache/debuginfo", "/usr/bin/app.debug", "/usr/bin/.debug/app.debug",
                       "/usr/lib/debug/usr/bin/app.debug", "/opt/dbg/usr/bin/app.debug"}));
  EXPECT_TRUE(debuglink_only_last);
  // Without build-id nor debuglink, only what debuginfod found.
  const auto bare = DebugFileCandidates("app", "", nullptr, search);
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(bare[0].path, "/cache/debuginfo");
}

TEST(NativeKeyIndex, FindsTheLastKeyAtMostAsBruteForceDoes) {
  std::mt19937_64 rng(7);
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{1000}}) {
    std::vector<uint64_t> keys(n);
    for (uint64_t& k : keys) k = rng() % 5000;  // duplicates included
    std::sort(keys.begin(), keys.end());
    KeyIndex index;
    index.Build(keys);
    for (uint64_t x = 0; x < 5100; x += 7) {
      const ptrdiff_t expected = std::upper_bound(keys.begin(), keys.end(), x) - keys.begin() - 1;
      ASSERT_EQ(index.LastAtMost(x), expected) << "n=" << n << " x=" << x;
    }
  }
}

TEST(NativeModule, SymbolizesItselfWithInlinedFrames) {
  std::string error;
  auto m = NativeModule::Open(SelfPath(), DebugSearch{}, &error);
  ASSERT_TRUE(m) << error;
  ASSERT_TRUE(m->has_dwarf()) << "unit tests are built with -g";
  EXPECT_FALSE(m->build_id().empty());
  const uint64_t outer = VirtualAddressOf(*m, reinterpret_cast<const void*>(&NativeOuter));
  ASSERT_NE(outer, 0u);
  NativeAnswer a;
  m->Symbolize(outer, &a);
  ASSERT_TRUE(a.found);
  EXPECT_EQ(a.name, "jitsym::native::(anonymous namespace)::NativeOuter(int)");
  EXPECT_EQ(a.start, outer);
  ASSERT_FALSE(a.frames.empty());
  EXPECT_TRUE(a.frames.back().file.ends_with("native_module_test.cc")) << a.frames.back().file;
  // Somewhere in NativeOuter, NativeInner is inlined: two frames, the inner one at its own line
  // and the outer one at the call.
  bool inlined = false;
  for (uint64_t pc = outer; pc < outer + a.size && !inlined; ++pc) {
    m->Symbolize(pc, &a);
    ASSERT_TRUE(a.found);
    EXPECT_EQ(a.name, "jitsym::native::(anonymous namespace)::NativeOuter(int)");
    if (a.frames.size() == 2) {
      inlined = true;
      // GCC gives an always-inline function without an out-of-line copy no linkage name: the
      // plain name, as llvm-symbolizer prints it.
      EXPECT_TRUE(a.frames[0].name.ends_with("NativeInner") ||
                  a.frames[0].name.ends_with("NativeInner(int)"))
          << a.frames[0].name;
      EXPECT_EQ(a.frames[0].line, kInnerLine);
      EXPECT_EQ(a.frames[1].name, a.name);
      EXPECT_GE(a.frames[1].line, kCallLine);
      EXPECT_LE(a.frames[1].line, kCallLine + 1);
      EXPECT_GT(a.frames[1].column, 0u);
    }
  }
  EXPECT_TRUE(inlined);
  m->Symbolize(0xffffffffffff0000ull, &a);
  EXPECT_FALSE(a.found);
  EXPECT_GT(m->Bytes(), 0u);
}

// Every answer as text, for comparing two ways of reading the same module.
std::string Answers(NativeModule& m, const std::vector<uint64_t>& addrs) {
  std::string out;
  NativeAnswer a;
  for (uint64_t addr : addrs) {
    m.Symbolize(addr, &a);
    out += std::to_string(addr) + (a.found ? " " : " - ") + std::string(a.name) + "+" +
           std::to_string(addr - a.start);
    for (const NativeFrame& f : a.frames) {
      out += " [" + std::string(f.name) + " " + std::string(f.file) + ":" + std::to_string(f.line) +
             ":" + std::to_string(f.column) + "]";
    }
    out += "\n";
  }
  return out;
}

TEST(NativeModule, PrefetchOnSeveralThreadsReadsWhatLazyReadingReads) {
  std::string error;
  auto lazy = NativeModule::Open(SelfPath(), DebugSearch{}, &error);
  ASSERT_TRUE(lazy) << error;
  // Addresses all over the binary: most of its CUs.
  std::vector<uint64_t> addrs;
  const uint64_t outer = VirtualAddressOf(*lazy, reinterpret_cast<const void*>(&NativeOuter));
  const uint64_t other = VirtualAddressOf(*lazy, reinterpret_cast<const void*>(&ReadAll));
  const uint64_t lo = std::min(outer, other) / 2, hi = std::max(outer, other) * 2;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 3000; ++i) addrs.push_back(lo + rng() % (hi - lo));
  const std::string expected = Answers(*lazy, addrs);
  ASSERT_NE(expected.find('['), std::string::npos);

  auto prefetched = NativeModule::Open(SelfPath(), DebugSearch{}, &error);
  ASSERT_TRUE(prefetched) << error;
  prefetched->Prefetch(addrs, 3);
  const size_t bytes = prefetched->Bytes();
  EXPECT_EQ(Answers(*prefetched, addrs), expected);
  EXPECT_EQ(prefetched->Bytes(), bytes) << "Prefetch left CUs for Symbolize to read";

  // Prefetches and lookups racing on one module: each CU is read once, answers the same.
  auto shared = NativeModule::Open(SelfPath(), DebugSearch{}, &error);
  ASSERT_TRUE(shared) << error;
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      if (t % 2 == 0) shared->Prefetch(addrs, 2);
      results[t] = Answers(*shared, addrs);
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& r : results) EXPECT_EQ(r, expected);
  // Each CU read once: the same tables. The string pool's last blocks may be filled in another
  // order by racing threads (a block of slack more or less, 256 KiB); a CU read twice would add
  // its tables.
  EXPECT_LE(shared->Bytes(), bytes + (size_t{256} << 10));
  EXPECT_GE(shared->Bytes() + (size_t{256} << 10), bytes);
}

// A header's function or path met in many CUs is one text in memory: answers crossing CUs
// then carry one pointer for it, which the wire encoders send once per answer.
TEST(NativeModule, OneTextIsOneStringAcrossCompilationUnits) {
  std::string error;
  auto m = NativeModule::Open(SelfPath(), DebugSearch{}, &error);
  ASSERT_TRUE(m) << error;
  const uint64_t outer = VirtualAddressOf(*m, reinterpret_cast<const void*>(&NativeOuter));
  const uint64_t other = VirtualAddressOf(*m, reinterpret_cast<const void*>(&ReadAll));
  const uint64_t lo = std::min(outer, other) / 2, hi = std::max(outer, other) * 2;
  std::mt19937_64 rng(11);
  std::vector<uint64_t> addrs;
  for (int i = 0; i < 3000; ++i) addrs.push_back(lo + rng() % (hi - lo));
  m->Prefetch(addrs, 2);  // CUs built on several threads: one pool all the same
  std::map<std::string, std::set<const char*>> where;
  size_t inner_frames = 0;
  NativeAnswer a;
  for (uint64_t addr : addrs) {
    m->Symbolize(addr, &a);
    // The outermost frame may be named, and given a file (an STT_FILE symbol's, such as
    // crtstuff.c), by the symbol table: its strings are not DWARF's.
    for (size_t k = 0; k + 1 < a.frames.size(); ++k) {
      const NativeFrame& f = a.frames[k];
      if (!f.name.empty()) {
        where[std::string(f.name)].insert(f.name.data());
        ++inner_frames;
      }
      if (!f.file.empty()) where[std::string(f.file)].insert(f.file.data());
    }
  }
  ASSERT_GT(inner_frames, 100u);
  size_t texts_in_several_places = 0;
  for (const auto& [text, pointers] : where) texts_in_several_places += pointers.size() > 1;
  EXPECT_EQ(texts_in_several_places, 0u);
}

TEST(StringPool, EqualTextsShareStorageAcrossThreads) {
  StringPool pool;
  const std::string long_text(100000, 'x');  // past a chunk's share: stored on its own
  std::vector<std::vector<std::string_view>> seen(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::string> owned;
      for (int i = 0; i < 20000; ++i) owned.push_back("name" + std::to_string(i % 5000));
      owned.push_back(long_text);
      owned.emplace_back();
      const std::vector<std::string_view> texts(owned.begin(), owned.end());
      pool.InternAll(texts, &seen[t]);
      for (size_t i = 0; i < texts.size(); ++i) ASSERT_EQ(seen[t][i], texts[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t t = 1; t < seen.size(); ++t) {
    for (size_t i = 0; i < seen[0].size(); ++i) ASSERT_EQ(seen[t][i].data(), seen[0][i].data());
  }
  EXPECT_EQ(pool.Intern("name42").data(), seen[0][42].data());
  EXPECT_EQ(seen[0][5000].data(), seen[0][0].data());
  EXPECT_NE(pool.Intern("name5000").data(), seen[0][0].data());
  EXPECT_GE(pool.Bytes(), long_text.size() + 5001 * 6);
  EXPECT_LT(pool.Bytes(), 4u << 20) << "5,000 short names and one long one";
}

TEST(NativeModule, RejectsWhatIsNotElf) {
  std::string error;
  const std::string garbage = WriteTemp("this is not an ELF file at all");
  EXPECT_FALSE(NativeModule::Open(garbage, DebugSearch{}, &error));
  EXPECT_NE(error.find("not an ELF file"), std::string::npos) << error;
  EXPECT_FALSE(NativeModule::Open("/nonexistent/file", DebugSearch{}, &error));
  EXPECT_NE(error.find("/nonexistent/file"), std::string::npos) << error;
  EXPECT_FALSE(NativeModule::Open("/tmp", DebugSearch{}, &error));
  ::unlink(garbage.c_str());
}

TEST(NativeModule, SurvivesTruncatedAndLyingFiles) {
  const std::string self = ReadAll(SelfPath());
  ASSERT_GT(self.size(), 4096u);
  std::vector<std::string> variants;
  for (size_t n : {size_t{4}, size_t{16}, size_t{64}, size_t{100}, size_t{4096}, self.size() / 3,
                   self.size() - 1}) {
    variants.push_back(self.substr(0, n));
  }
  // Section headers that lie: sizes and offsets far beyond the file, bogus entry sizes.
  Elf64_Ehdr eh;
  std::memcpy(&eh, self.data(), sizeof(eh));
  for (int mode = 0; mode < 4; ++mode) {
    std::string copy = self;
    for (size_t i = 0; i < eh.e_shnum; ++i) {
      const size_t at = eh.e_shoff + i * sizeof(Elf64_Shdr);
      if (at + sizeof(Elf64_Shdr) > copy.size()) break;
      Elf64_Shdr sh;
      std::memcpy(&sh, copy.data() + at, sizeof(sh));
      if (mode == 0) sh.sh_size = 0x7fffffffffffull;
      if (mode == 1) sh.sh_offset = copy.size() - 8;
      if (mode == 2) sh.sh_entsize = 3;
      if (mode == 3 && i % 2 == 0) sh.sh_size /= 2;  // truncated DWARF sections
      std::memcpy(copy.data() + at, &sh, sizeof(sh));
    }
    variants.push_back(std::move(copy));
  }
  for (const std::string& bytes : variants) {
    const std::string path = WriteTemp(bytes);
    std::string error;
    auto m = NativeModule::Open(path, DebugSearch{}, &error);
    if (m) {
      NativeAnswer a;
      for (uint64_t addr = 0; addr < (1u << 22); addr += 4099) m->Symbolize(addr, &a);
    } else {
      EXPECT_FALSE(error.empty());
    }
    ::unlink(path.c_str());
  }
}

TEST(ModuleCache, SharesModules) {
  ModuleCache::Options options;
  options.debug_dirs = {"/nonexistent"};
  ModuleCache cache(options);
  std::string error;
  auto a = cache.GetByPath(SelfPath(), &error);
  ASSERT_TRUE(a) << error;
  auto b = cache.GetByPath(SelfPath(), &error);
  EXPECT_EQ(a.get(), b.get());
}

TEST(ModuleCache, DropsLeastRecentlyUsedOverBudget) {
  ModuleCache::Options options;
  options.debug_dirs = {};
  options.budget_bytes = 1;  // one byte: nothing stays
  ModuleCache cache(options);
  std::string error;
  auto a = cache.GetByPath(SelfPath(), &error);
  ASSERT_TRUE(a);
  EXPECT_EQ(cache.Modules(), 1u);
  cache.Trim();
  EXPECT_EQ(cache.Modules(), 0u);
  NativeAnswer answer;
  a->Symbolize(VirtualAddressOf(*a, reinterpret_cast<const void*>(&NativeOuter)), &answer);
  EXPECT_TRUE(answer.found);  // a query still holding the module keeps it usable
}

}  // namespace
}  // namespace jitsym::native
