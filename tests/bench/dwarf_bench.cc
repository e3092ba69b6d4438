// daemon/dwarf/ against libdw, side by side, on one real file (by default the unit test binary;
// JITSYM_DWARF_BENCH_FILE names another): every compile unit's ranges (what a module's CU index
// reads when it opens), and every unit's subprogram/inline tree with names and its line table
// (what symbolization reads of a unit), each from a fresh handle so that nothing is cached.
//   build/tests/bench/dwarf_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/dwarf/context.h"
#include "daemon/dwarf/unit.h"
#include "daemon/dwarf/unit_symbols.h"
#include "tests/unit/testing/dwarf_files.h"
#include "tests/unit/testing/dwarf_oracle.h"

namespace jitsym {
namespace {

const std::string& BenchFile() {
  static const std::string path = [] {
    if (const char* p = std::getenv("JITSYM_DWARF_BENCH_FILE")) return std::string(p);
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    const std::filesystem::path self(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0));
    return (self.parent_path().parent_path() / "unit_tests").string();
  }();
  return path;
}

// The file's bytes, read once (both readers read from memory).
std::string& Bytes() {
  static std::string bytes = testing::ReadWholeFile(BenchFile());
  return bytes;
}

bool IsCodeUnit(uint8_t type) {
  return type == DW_UT_compile || type == DW_UT_partial || type == DW_UT_skeleton;
}

// ---- ours ----

void BM_Ours_UnitRanges(benchmark::State& state) {
  size_t ranges = 0;
  for (auto _ : state) {
    dwarf::Budget budget(dwarf::Budget::Unlimited());
    Result<dwarf::ElfImage> image = dwarf::ReadElfImage(Bytes());
    Result<dwarf::LoadedSections> s = dwarf::LoadSections(*image, budget);
    dwarf::Context ctx(s->sections());
    ranges = 0;
    for (const dwarf::UnitHeader& h : ctx.units()) {
      if (!IsCodeUnit(h.unit_type)) continue;
      // As a module's CU index opens them: the unit DIE's abbreviation alone.
      Result<dwarf::Unit> u = dwarf::Unit::Open(ctx, h, budget, nullptr, /*unit_die_only=*/true);
      if (u) ranges += u->unit_ranges().size();
    }
    benchmark::DoNotOptimize(ranges);
  }
  state.counters["ranges"] = static_cast<double>(ranges);
}

void BM_Ours_AllUnitSymbols(benchmark::State& state) {
  size_t nodes = 0, rows = 0;
  for (auto _ : state) {
    dwarf::Budget budget(dwarf::Budget::Unlimited());
    Result<dwarf::ElfImage> image = dwarf::ReadElfImage(Bytes());
    Result<dwarf::LoadedSections> s = dwarf::LoadSections(*image, budget);
    dwarf::Context ctx(s->sections());
    nodes = rows = 0;
    for (const dwarf::UnitHeader& h : ctx.units()) {
      if (!IsCodeUnit(h.unit_type)) continue;
      Result<dwarf::Unit> u = dwarf::Unit::Open(ctx, h, budget);
      if (!u) continue;
      Result<dwarf::UnitSymbols> r = dwarf::ReadUnitSymbols(*u, budget);
      if (!r) continue;
      nodes += r->nodes.size();
      rows += r->lines ? r->lines->rows.size() : 0;
    }
    benchmark::DoNotOptimize(nodes);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["rows"] = static_cast<double>(rows);
}

// ---- libdw, walked as daemon/native/cu_tables.cc walks it ----

struct Libdw {
  Elf* elf;
  Dwarf* dwarf;
  Libdw() {
    elf_version(EV_CURRENT);
    elf = elf_memory(Bytes().data(), Bytes().size());
    dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  }
  ~Libdw() {
    dwarf_end(dwarf);
    elf_end(elf);
  }
  template <typename F>
  void ForEachCodeUnit(F f) {
    Dwarf_CU* cu = nullptr;
    Dwarf_CU* next = nullptr;
    uint8_t type;
    Dwarf_Die cudie;
    while (dwarf_get_units(dwarf, cu, &next, nullptr, &type, &cudie, nullptr) == 0) {
      cu = next;
      if (IsCodeUnit(type)) f(&cudie);
    }
  }
};

void BM_Libdw_UnitRanges(benchmark::State& state) {
  size_t ranges = 0;
  for (auto _ : state) {
    Libdw d;
    ranges = 0;
    d.ForEachCodeUnit([&](Dwarf_Die* cudie) {
      Dwarf_Addr base, lo, hi;
      ptrdiff_t off = 0;
      while ((off = dwarf_ranges(cudie, off, &base, &lo, &hi)) > 0) ++ranges;
    });
    benchmark::DoNotOptimize(ranges);
  }
  state.counters["ranges"] = static_cast<double>(ranges);
}

void BM_Libdw_AllUnitSymbols(benchmark::State& state) {
  size_t nodes = 0, rows = 0;
  for (auto _ : state) {
    Libdw d;
    nodes = rows = 0;
    d.ForEachCodeUnit([&](Dwarf_Die* cudie) {
      Dwarf_Lines* lines;
      size_t n;
      if (dwarf_getsrclines(cudie, &lines, &n) == 0) rows += n;
      Dwarf_Files* files;
      size_t nfiles;
      dwarf_getsrcfiles(cudie, &files, &nfiles);
      struct Item {
        Dwarf_Die die;
        bool in_function;
        int depth;
      };
      std::vector<Item> stack;
      std::vector<Dwarf_Die> with_ranges;
      Dwarf_Die child;
      if (dwarf_child(cudie, &child) == 0) stack.push_back({child, false, 1});
      while (!stack.empty()) {
        Item item = stack.back();
        stack.pop_back();
        Dwarf_Die sibling;
        if (dwarf_siblingof(&item.die, &sibling) == 0) {
          stack.push_back({sibling, item.in_function, item.depth});
        }
        const int tag = dwarf_tag(&item.die);
        bool in_function = item.in_function;
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
          ++nodes;
          in_function = true;
          Dwarf_Attribute a;
          Dwarf_Word v;
          if (dwarf_attr(&item.die, DW_AT_call_file, &a)) dwarf_formudata(&a, &v);
          if (dwarf_attr(&item.die, DW_AT_call_line, &a)) dwarf_formudata(&a, &v);
          if (dwarf_attr(&item.die, DW_AT_call_column, &a)) dwarf_formudata(&a, &v);
          Dwarf_Addr base, lo, hi;
          ptrdiff_t off = 0;
          bool any = false;
          while ((off = dwarf_ranges(&item.die, off, &base, &lo, &hi)) > 0) any = true;
          if (any) with_ranges.push_back(item.die);
        } else if (testing::LibdwNoCode(tag) ||
                   (!item.in_function &&
                    (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                     tag == DW_TAG_union_type))) {
          continue;
        }
        if (item.depth < 512 && dwarf_haschildren(&item.die) &&
            dwarf_child(&item.die, &child) == 0) {
          stack.push_back({child, in_function, item.depth + 1});
        }
      }
      for (Dwarf_Die& die : with_ranges) {
        const char* name = testing::LibdwString(&die, DW_AT_linkage_name);
        if (name == nullptr) name = testing::LibdwString(&die, DW_AT_MIPS_linkage_name);
        if (name == nullptr) name = testing::LibdwString(&die, DW_AT_name);
        benchmark::DoNotOptimize(name);
      }
    });
    benchmark::DoNotOptimize(nodes);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["rows"] = static_cast<double>(rows);
}

BENCHMARK(BM_Ours_UnitRanges)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Libdw_UnitRanges)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ours_AllUnitSymbols)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Libdw_AllUnitSymbols)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace jitsym

BENCHMARK_MAIN();
