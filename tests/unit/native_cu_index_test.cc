// Which unit covers an address (daemon/native/cu_index.h) when the units' ranges come from
// .debug_aranges (daemon/dwarf/aranges.h): the same unit as from every unit DIE, at every range
// boundary of both, in binaries GCC and clang built here, libc6-dbg's debug file and this one.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "daemon/dwarf/aranges.h"
#include "daemon/dwarf/constants.h"
#include "daemon/native/cu_index.h"
#include "tests/unit/testing/dwarf_builder.h"
#include "tests/unit/testing/dwarf_files.h"
#include "tests/unit/testing/self_path.h"

namespace jitsym::testing {
namespace {

using dwarf::AddressRange;
using dwarf::Aranges;
using dwarf::ReadAranges;
using native::CuIndex;

// One set of 32-bit DWARF with 8-byte addresses (GCC's layout: 12 bytes of header, 4 of
// padding), its ranges ended by (0, 0) unless `terminate` is false.
std::string Set(uint64_t info_offset, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                bool terminate = true, uint16_t version = 2) {
  ByteWriter body;
  body.Fixed(version, 2).Fixed(info_offset, 4).U8(8).U8(0).Fixed(0, 4);
  for (auto [lo, length] : ranges) body.Fixed(lo, 8).Fixed(length, 8);
  if (terminate) body.Fixed(0, 8).Fixed(0, 8);
  ByteWriter set;
  set.Fixed(body.s.size(), 4).s += body.s;
  return set.s;
}

TEST(DwarfAranges, SetsOfGccsLayoutAndOf64BitDwarf) {
  ByteWriter b64;  // 64-bit DWARF, 4-byte addresses: 4 + 8 + 2 + 8 + 2 = 24 bytes, no padding
  b64.Fixed(2, 2).Fixed(0x1234, 8).U8(4).U8(0);
  b64.Fixed(0x500, 4).Fixed(0x20, 4).Fixed(0x600, 4).Fixed(0, 4).Fixed(0, 4).Fixed(0, 4);
  ByteWriter set64;
  set64.Fixed(0xffffffffu, 4).Fixed(b64.s.size(), 8).s += b64.s;
  const std::string section = Set(0x0, {{0x1000, 0x10}, {0x2000, 0x30}}) + set64.s;
  const Aranges a = ReadAranges(section, ByteOrder::kLittle);
  ASSERT_FALSE(a.first_error) << a.first_error->message;
  ASSERT_EQ(a.sets.size(), 2u);
  EXPECT_EQ(a.sets[0].info_offset, 0u);
  EXPECT_EQ(a.sets[0].count, 2u);
  EXPECT_EQ(a.sets[1].info_offset, 0x1234u);
  EXPECT_EQ(a.sets[1].address_size, 4u);
  // The empty range (0x600, 0) is left out.
  ASSERT_EQ(a.sets[1].count, 1u);
  EXPECT_EQ(a.ranges[0], (AddressRange{0x1000, 0x1010}));
  EXPECT_EQ(a.ranges[1], (AddressRange{0x2000, 0x2030}));
  EXPECT_EQ(a.ranges[a.sets[1].first], (AddressRange{0x500, 0x520}));
}

TEST(DwarfAranges, ABadSetIsLeftOutAndTheNextOnesRead) {
  const std::string good = Set(0x40, {{0x1000, 0x10}});
  for (const auto& [bad, message] : std::vector<std::pair<std::string, std::string>>{
           {Set(0x0, {{0x2000, 0x10}}, false), "set without its terminating (0, 0) entry"},
           {Set(0x0, {{0x2000, 0x10}, {~uint64_t{0} - 4, 0x10}}), "wraps around"},
           {Set(0x0, {{0x2000, 0x10}}, true, 4), "version 4 not read"}}) {
    SCOPED_TRACE(message);
    const Aranges a = ReadAranges(bad + good, ByteOrder::kLittle);
    ASSERT_TRUE(a.first_error);
    EXPECT_EQ(a.first_error->message.rfind("debug_aranges offset 0x0: ", 0), 0u)
        << a.first_error->message;
    EXPECT_NE(a.first_error->message.find(message), std::string::npos) << a.first_error->message;
    EXPECT_EQ(a.bad_sets, 1u);
    // Nothing of the bad set, all of the good one.
    ASSERT_EQ(a.sets.size(), 1u);
    EXPECT_EQ(a.sets[0].info_offset, 0x40u);
    ASSERT_EQ(a.ranges.size(), 1u);
    EXPECT_EQ(a.ranges[0], (AddressRange{0x1000, 0x1010}));
  }
  // A length past the end stops the reading: what follows cannot be found.
  std::string cut = good + Set(0x80, {{0x3000, 0x10}});
  cut.resize(cut.size() - 1);
  const Aranges a = ReadAranges(cut, ByteOrder::kLittle);
  EXPECT_EQ(a.sets.size(), 1u);
  ASSERT_TRUE(a.first_error);
  EXPECT_NE(a.first_error->message.find("past the section's end"), std::string::npos);
}

// Every range boundary of the units' DIEs and of .debug_aranges, answered by an index from
// each: the same unit (or none) for every one. Returns how many units came from .debug_aranges.
size_t ExpectSameUnits(const std::string& path) {
  SCOPED_TRACE(path);
  std::unique_ptr<DwarfModule> m = DwarfModule::Load(path);
  EXPECT_NE(m->main->context, nullptr) << m->main->error;
  if (m->main->context == nullptr) return 0;
  const dwarf::Context& ctx = *m->main->context;
  CuIndex listed, dies;
  listed.Open(&ctx, &m->budget, path, CuIndex::UnitRangesFrom::kArangesWhereListed);
  dies.Open(&ctx, &m->budget, path, CuIndex::UnitRangesFrom::kUnitDies);
  EXPECT_EQ(dies.units_from_aranges(), 0u);
  EXPECT_EQ(listed.has_skeletons(), dies.has_skeletons());

  std::set<uint64_t> probes;
  auto probe = [&](uint64_t lo, uint64_t hi) {
    if (hi <= lo) return;
    for (uint64_t a : {lo - 1, lo, lo + (hi - lo) / 2, hi - 1, hi}) probes.insert(a);
  };
  const Aranges aranges = ReadAranges(ctx.section(dwarf::SectionId::kAranges), ctx.order());
  EXPECT_FALSE(aranges.first_error);
  for (const AddressRange& r : aranges.ranges) probe(r.lo, r.hi);
  for (const dwarf::UnitHeader& h : ctx.units()) {
    Result<dwarf::Unit> u = dwarf::Unit::Open(ctx, h, m->budget, nullptr, true);
    if (!u) continue;
    for (const AddressRange& r : u->unit_ranges()) probe(r.lo, r.hi);
  }
  EXPECT_GE(probes.size(), 5u);  // one range at least
  size_t differ = 0, covered = 0;
  for (uint64_t a : probes) {
    const int64_t x = listed.CuOf(a), y = dies.CuOf(a);
    const uint64_t ux = x < 0 ? ~uint64_t{0} : listed.UnitOffset(static_cast<uint32_t>(x));
    const uint64_t uy = y < 0 ? ~uint64_t{0} : dies.UnitOffset(static_cast<uint32_t>(y));
    covered += y >= 0;
    if (ux != uy && differ++ < 5) {
      ADD_FAILURE() << "0x" << std::hex << a << ": unit at 0x" << ux << " from .debug_aranges, 0x"
                    << uy << " from the unit DIEs";
    }
  }
  EXPECT_EQ(differ, 0u) << "of " << probes.size() << " addresses";
  EXPECT_GT(covered, 0u);
  return listed.units_from_aranges();
}

TEST(NativeCuIndex, UnitsFromArangesAreTheUnitsOfTheDies) {
  TestPrograms programs;
  // GCC lists every unit with code in .debug_aranges; clang only when asked.
  for (const char* flags : {"-O0 -g", "-O2 -g", "-O2 -gdwarf-4", "-O2 -gdwarf-2"}) {
    const std::string gcc = programs.Build("g++", flags);
    ASSERT_FALSE(gcc.empty()) << flags;
    EXPECT_GT(ExpectSameUnits(gcc), 0u) << "g++ " << flags;
  }
  if (const std::string clang = programs.Build("clang++", "-O2 -g -gdwarf-aranges");
      !clang.empty()) {
    EXPECT_GT(ExpectSameUnits(clang), 0u);
  }
  if (const std::string clang = programs.Build("clang++", "-O2 -g"); !clang.empty()) {
    EXPECT_EQ(ExpectSameUnits(clang), 0u);
  }
}

TEST(NativeCuIndex, UnitsFromArangesAfterDwz) {
  // dwz rewrites .debug_info (partial units, moved DIEs) and the sets' unit offsets with it.
  TestPrograms programs;
  const std::string one = programs.Build("g++", "-O2 -g", "dwz-one");
  ASSERT_FALSE(one.empty());
  ASSERT_TRUE(programs.Run("dwz dwz-one"));
  EXPECT_GT(ExpectSameUnits(one), 0u);
}

TEST(NativeCuIndex, GnuSplitDwarfFourUnitsAreReadFromTheirDies) {
  // A DWARF 4 skeleton is a compile unit known only by its DIE's dwo id: with .debug_addr in the
  // file, no DWARF 4 unit is taken from .debug_aranges, and the skeletons are found.
  TestPrograms programs;
  const std::string prog = programs.Build("g++", "-O2 -gdwarf-4 -gsplit-dwarf");
  ASSERT_FALSE(prog.empty());
  EXPECT_EQ(ExpectSameUnits(prog), 0u);
  std::unique_ptr<DwarfModule> m = DwarfModule::Load(prog);
  CuIndex index;
  index.Open(m->main->context.get(), &m->budget, prog);
  EXPECT_TRUE(index.has_skeletons());
  // DWARF 5's skeletons say so in their headers: their units come from the DIEs as well.
  const std::string five = programs.Build("g++", "-O2 -gdwarf-5 -gsplit-dwarf");
  ASSERT_FALSE(five.empty());
  EXPECT_EQ(ExpectSameUnits(five), 0u);
}

TEST(NativeCuIndex, UnitsFromArangesInThisBinaryAndLibc) {
  EXPECT_GT(ExpectSameUnits(SelfPath()), 100u);
  const std::string dir = "/usr/lib/debug/.build-id";
  std::error_code ec;
  size_t checked = 0;
  for (const auto& sub : std::filesystem::directory_iterator(dir, ec)) {
    for (const auto& f : std::filesystem::directory_iterator(sub.path(), ec)) {
      if (f.path().extension() != ".debug" || f.file_size(ec) < (1u << 20) || checked >= 2) {
        continue;
      }
      EXPECT_GT(ExpectSameUnits(f.path().string()), 0u);
      ++checked;
    }
  }
}

}  // namespace
}  // namespace jitsym::testing
