// daemon/dwarf/ against the attacks that made libdw unsafe in a daemon that reads any user's
// files: DW_AT_sibling loops that make a DIE walk exponential, reference cycles, strings that do
// not end in their section or that thousands of DIEs point into, abbreviation tables inside each
// other, nesting deeper than any stack, and compression bombs. Each reads in time and memory
// linear in the input, or stops with the error a user would see.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/context.h"
#include "daemon/dwarf/elf_image.h"
#include "daemon/dwarf/inflate.h"
#include "daemon/dwarf/sections.h"
#include "daemon/dwarf/unit.h"
#include "daemon/dwarf/unit_symbols.h"
#include "tests/unit/testing/dwarf_builder.h"
#include "tests/unit/testing/dwarf_oracle.h"

namespace jitsym::dwarf {
namespace {

using testing::DwarfBuilder;

Result<UnitSymbols> ReadUnit(const Context& ctx, size_t i, Budget& budget) {
  Result<Unit> u = Unit::Open(ctx, ctx.units()[i], budget);
  if (!u) return std::move(u).error();
  return ReadUnitSymbols(*u, budget);
}

// `depth` DIEs of `tag` nested, each with DW_AT_sibling pointing at its own first child (libdw's
// walk visits level k 2^k times), each with a range so that it is a node.
DwarfBuilder SiblingIntoFirstChild(uint16_t tag, int depth) {
  DwarfBuilder b(4);
  b.Abbrev(1, DW_TAG_compile_unit, true, {});
  b.Abbrev(2, tag, true,
           {{DW_AT_sibling, DW_FORM_ref4},
            {DW_AT_name, DW_FORM_string},
            {DW_AT_low_pc, DW_FORM_addr},
            {DW_AT_high_pc, DW_FORM_data4}});
  b.BeginUnit().Die(1);
  for (int i = 0; i < depth; ++i) {
    b.Die(2);
    const size_t sibling = b.Ref4Later();
    b.Str("f" + std::to_string(i)).Addr(0x1000 + i).U32(0x1000 - 2 * i);
    b.PatchRef4(sibling, b.here() - b.unit_start());  // the first child, next
  }
  for (int i = 0; i <= depth; ++i) b.Null();
  b.EndUnit();
  return b;
}

TEST(DwarfAttacks, SiblingIntoItsOwnFirstChildFortyDeep) {
  for (uint16_t tag : {DW_TAG_subprogram, DW_TAG_structure_type, DW_TAG_lexical_block}) {
    SCOPED_TRACE(tag);
    const DwarfBuilder b = SiblingIntoFirstChild(tag, 40);
    Context ctx(b.sections());
    Budget budget(Budget::Unlimited());
    Result<UnitSymbols> r = ReadUnit(ctx, 0, budget);
    ASSERT_TRUE(r.ok()) << r.error().message;
    // Each DIE decoded once by the walk, and at most once more to be named or looked up (the
    // unit DIE twice): 2^40 visits would never end.
    EXPECT_LE(budget.dies(), 2u * 40 + 2);
    if (tag == DW_TAG_subprogram) {
      ASSERT_EQ(r->nodes.size(), 40u);
      EXPECT_EQ(r->nodes[39].name, "f39");
    }
  }
}

TEST(DwarfAttacks, LibdwWalksTheSameUnitExponentially) {
  // The fixture above, 16 deep, through libdw as daemon/native walks it: 2^16 - 1 nodes where
  // the unit has 16 (at 40 deep the walk would not end).
  const DwarfBuilder b = SiblingIntoFirstChild(DW_TAG_subprogram, 16);
  std::string image = testing::ElfImageOf({{".debug_info", b.info.s},
                                           {".debug_abbrev", b.abbrev.s},
                                           {".debug_str", std::string(1, '\0')}});
  elf_version(EV_CURRENT);
  Elf* elf = elf_memory(image.data(), image.size());
  ASSERT_NE(elf, nullptr);
  Dwarf* dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  ASSERT_NE(dwarf, nullptr) << dwarf_errmsg(-1);
  Dwarf_Die cu;
  ASSERT_NE(dwarf_offdie(dwarf, 11, &cu), nullptr);
  testing::FlatUnit u;
  testing::LibdwTree(&cu, &u);
  EXPECT_EQ(u.nodes.size(), (1u << 16) - 1);
  dwarf_end(dwarf);
  elf_end(elf);
}

TEST(DwarfAttacks, SiblingBackwardsOrOutsideIsIgnored) {
  // Top-level classes (skipped by the walk) whose sibling points back at the unit's start, at
  // the DIE itself, past the unit: the walk skips them by their children instead.
  for (uint64_t target : {uint64_t{0}, uint64_t{11}, uint64_t{1} << 20}) {
    DwarfBuilder b(4);
    b.Abbrev(1, DW_TAG_compile_unit, true, {});
    b.Abbrev(2, DW_TAG_class_type, true, {{DW_AT_sibling, DW_FORM_ref4}});
    b.Abbrev(3, DW_TAG_subprogram, false,
             {{DW_AT_name, DW_FORM_string},
              {DW_AT_low_pc, DW_FORM_addr},
              {DW_AT_high_pc, DW_FORM_data4}});
    b.BeginUnit().Die(1);
    b.Die(2).U32(target).Die(3).Str("member").Addr(0x10).U32(4).Null();
    b.Die(3).Str("f").Addr(0x1000).U32(0x10).Null().EndUnit();
    Context ctx(b.sections());
    Budget budget(Budget::Unlimited());
    Result<UnitSymbols> r = ReadUnit(ctx, 0, budget);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->nodes.size(), 1u) << "target " << target;
    EXPECT_EQ(r->nodes[0].name, "f");
  }
}

TEST(DwarfAttacks, ReferenceCyclesEndAndChainsStopAtSeventeen) {
  // Subprograms whose abstract_origin is themselves, each other, or a chain of 30 DIEs whose
  // last one has a name: the chain is followed 17 DIEs deep, as libdw looks.
  DwarfBuilder b(4);
  b.Abbrev(1, DW_TAG_compile_unit, true, {});
  b.Abbrev(2, DW_TAG_subprogram, false,
           {{DW_AT_abstract_origin, DW_FORM_ref4},
            {DW_AT_low_pc, DW_FORM_addr},
            {DW_AT_high_pc, DW_FORM_data4}});
  b.Abbrev(3, DW_TAG_variable, false, {{DW_AT_abstract_origin, DW_FORM_ref4}});
  b.Abbrev(4, DW_TAG_variable, false, {{DW_AT_name, DW_FORM_string}});
  b.BeginUnit().Die(1);
  const uint64_t self = b.here() - b.unit_start();
  b.Die(2).U32(self).Addr(0x1000).U32(0x10);
  const uint64_t a = b.here() - b.unit_start();
  const size_t a_ref = (b.Die(2), b.Ref4Later());
  b.Addr(0x2000).U32(0x10);
  const uint64_t c = b.here() - b.unit_start();
  b.Die(2).U32(a).Addr(0x3000).U32(0x10);
  b.PatchRef4(a_ref, c);
  auto chain = [&](int length, uint64_t addr) {
    const size_t head = (b.Die(2), b.Ref4Later());
    b.Addr(addr).U32(0x10);
    size_t prev = head;
    for (int i = 1; i < length; ++i) {
      b.PatchRef4(prev, b.here() - b.unit_start());
      prev = (b.Die(3), b.Ref4Later());
    }
    b.PatchRef4(prev, b.here() - b.unit_start());
    b.Die(4).Str("end of " + std::to_string(length));
  };
  chain(16, 0x4000);  // the name 16 steps away: found
  chain(30, 0x5000);  // 30 steps away: not looked for
  b.Null().EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<UnitSymbols> r = ReadUnit(ctx, 0, budget);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->nodes.size(), 5u);
  EXPECT_EQ(r->nodes[0].name, "");
  EXPECT_EQ(r->nodes[1].name, "");
  EXPECT_EQ(r->nodes[2].name, "");
  EXPECT_EQ(r->nodes[3].name, "end of 16");
  EXPECT_EQ(r->nodes[4].name, "");
  // Every DIE decoded at most three times (walked, named, looked up once).
  EXPECT_LE(budget.dies(), 3u * (4 + 16 + 30 + 3));
}

TEST(DwarfAttacks, StringsThatDoNotEndInTheirSection) {
  // .debug_str without its last NUL: the name is left out, with a note; a DW_FORM_string that
  // runs to the end of the unit fails the unit.
  DwarfBuilder b(4);
  b.str.s = std::string("ok\0unterminated", 15);
  b.Abbrev(1, DW_TAG_compile_unit, true, {});
  b.Abbrev(
      2, DW_TAG_subprogram, false,
      {{DW_AT_name, DW_FORM_strp}, {DW_AT_low_pc, DW_FORM_addr}, {DW_AT_high_pc, DW_FORM_data4}});
  b.BeginUnit().Die(1).Die(2).U32(0).Addr(0x1000).U32(4).Die(2).U32(3).Addr(0x2000).U32(4);
  b.Die(2).U32(1000).Addr(0x3000).U32(4).Null().EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<UnitSymbols> r = ReadUnit(ctx, 0, budget);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->nodes[0].name, "ok");
  EXPECT_EQ(r->nodes[1].name, "");
  EXPECT_EQ(r->nodes[2].name, "");
  EXPECT_EQ(r->problems, 2u);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_EQ(r->notes[0].message, "debug_str offset 0x3: string runs past its section's end");

  DwarfBuilder inline_string(4);
  inline_string.Abbrev(1, DW_TAG_compile_unit, false, {{DW_AT_name, DW_FORM_string}});
  inline_string.BeginUnit().Die(1);
  inline_string.info.s += "no end";
  inline_string.EndUnit();
  Context ctx2(inline_string.sections());
  Result<Unit> u = Unit::Open(ctx2, ctx2.units()[0], budget);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().kind, ErrorKind::kMalformed);
}

TEST(DwarfAttacks, ThousandsOfReferencesIntoOneLongString) {
  // 20,000 subprograms named by offsets inside one 1 MiB string: its bytes are scanned once,
  // not once per reference (20 GB).
  DwarfBuilder b(4);
  b.str.s.assign(1 << 20, 'n');
  b.str.s.push_back('\0');
  b.Abbrev(1, DW_TAG_compile_unit, true, {});
  b.Abbrev(
      2, DW_TAG_subprogram, false,
      {{DW_AT_name, DW_FORM_strp}, {DW_AT_low_pc, DW_FORM_addr}, {DW_AT_high_pc, DW_FORM_data1}});
  b.BeginUnit().Die(1);
  for (uint32_t i = 0; i < 20000; ++i) b.Die(2).U32(i * 7).Addr(0x1000 + 16 * i).U8(16);
  b.Null().EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<UnitSymbols> r = ReadUnit(ctx, 0, budget);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->nodes.size(), 20000u);
  EXPECT_EQ(r->nodes[19999].name.size(), (1u << 20) - 19999 * 7);
  EXPECT_LE(ctx.long_string_bytes_scanned_for_testing(), (1u << 20) + 256 * 20000u);
}

TEST(DwarfAttacks, AbbreviationTablesInsideOthersAreRefused) {
  // A unit whose table starts inside the bytes of another's: refused before it is read, so a
  // section read once however many units point into it.
  DwarfBuilder b(4);
  b.Abbrev(1, DW_TAG_compile_unit, false, {{DW_AT_name, DW_FORM_string}});
  b.Abbrev(2, DW_TAG_compile_unit, false, {});
  b.BeginUnit().Die(1).Str("first").EndUnit();
  // A second unit pointing one byte into the first table.
  b.info.Fixed(8, 4).Fixed(4, 2).Fixed(1, 4).U8(8).U8(1);
  Context ctx(b.sections());
  ASSERT_EQ(ctx.units().size(), 2u);
  Budget budget(Budget::Unlimited());
  ASSERT_TRUE(Unit::Open(ctx, ctx.units()[0], budget).ok());
  Result<Unit> second = Unit::Open(ctx, ctx.units()[1], budget);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().kind, ErrorKind::kMalformed);
  EXPECT_NE(second.error().message.find("inside the bytes of another"), std::string::npos);
}

TEST(DwarfAttacks, NestingDeeperThanAnyStack) {
  // 200,000 nested lexical blocks, a subprogram at the bottom: no recursion, and nothing
  // deeper than 512 is descended into (as libdw's walk in daemon/native).
  DwarfBuilder b(4);
  b.Abbrev(1, DW_TAG_compile_unit, true, {});
  b.Abbrev(2, DW_TAG_lexical_block, true, {});
  b.Abbrev(
      3, DW_TAG_subprogram, false,
      {{DW_AT_name, DW_FORM_string}, {DW_AT_low_pc, DW_FORM_addr}, {DW_AT_high_pc, DW_FORM_data1}});
  b.BeginUnit().Die(1).Die(3).Str("top").Addr(0x10).U8(4);
  for (int i = 0; i < 200000; ++i) b.Die(2);
  b.Die(3).Str("deep").Addr(0x20).U8(4);
  for (int i = 0; i <= 200000; ++i) b.Null();
  b.EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<UnitSymbols> r = ReadUnit(ctx, 0, budget);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->nodes.size(), 1u);
  EXPECT_EQ(r->nodes[0].name, "top");
}

TEST(DwarfAttacks, CompressionBombs) {
  Budget budget(BudgetLimits{40 << 20, 1 << 20});
  const std::string zeros(16 << 20, '\0');
  const std::string section = testing::CompressedSection(zeros);
  // A claim deflate cannot meet from this stream (more than 1032:1): malformed, nothing spent.
  const std::string liar = testing::CompressedSection(zeros, uint64_t{1} << 40);
  Result<std::string> r = InflateElfSection(liar, true, ByteOrder::kLittle, budget);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kMalformed);
  EXPECT_NE(r.error().message.find("more than deflate can produce"), std::string::npos);
  EXPECT_EQ(budget.inflated(), 0u);
  // Four sections of 16 MiB each against a budget of 40 MiB: two inflate, the third is
  // refused before a byte of it is allocated, naming the budget.
  const std::string image = testing::ElfImageOf({{".debug_info", section, 0x800},
                                                 {".debug_abbrev", section, 0x800},
                                                 {".debug_line", section, 0x800},
                                                 {".debug_str", section, 0x800}});
  Result<ElfImage> elf = ReadElfImage(image);
  ASSERT_TRUE(elf.ok());
  Result<LoadedSections> s = LoadSections(*elf, budget);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::kLimit);
  EXPECT_NE(s.error().message.find(".debug_line: DWARF budget"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(budget.inflated(), 32u << 20);
  // A stream shorter or longer than its claim is malformed; zstd is not read.
  Budget plenty(Budget::Unlimited());
  const std::string small = testing::CompressedSection("abcdef");
  EXPECT_TRUE(InflateElfSection(small, true, ByteOrder::kLittle, plenty).ok());
  for (uint64_t claim : {5, 7}) {
    Result<std::string> bad = InflateElfSection(testing::CompressedSection("abcdef", claim), true,
                                                ByteOrder::kLittle, plenty);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, ErrorKind::kMalformed) << claim;
  }
  Result<std::string> zstd = InflateElfSection(testing::CompressedSection("abcdef", 6, 2), true,
                                               ByteOrder::kLittle, plenty);
  ASSERT_FALSE(zstd.ok());
  EXPECT_EQ(zstd.error().kind, ErrorKind::kUnsupported);
  // .zdebug: the same bounds.
  EXPECT_EQ(*InflateZdebugSection(testing::ZdebugSection("hello"), plenty), "hello");
  std::string lying = testing::ZdebugSection("hello");
  lying[4] = 0x7f;  // the big-endian size's top byte
  EXPECT_EQ(InflateZdebugSection(lying, plenty).error().kind, ErrorKind::kMalformed);
}

}  // namespace
}  // namespace jitsym::dwarf
