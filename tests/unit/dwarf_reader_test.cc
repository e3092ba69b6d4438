// daemon/dwarf/ on hand-made inputs (tests/unit/testing/dwarf_builder.h): the ELF section table,
// sections by name and inflated, every form read or skipped by size, a unit's tree with names
// through references, and the three outcomes kept apart (not this format, malformed, not found).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/context.h"
#include "daemon/dwarf/die_cursor.h"
#include "daemon/dwarf/elf_image.h"
#include "daemon/dwarf/sections.h"
#include "daemon/dwarf/split_unit.h"
#include "daemon/dwarf/unit.h"
#include "daemon/dwarf/unit_symbols.h"
#include "tests/unit/testing/dwarf_builder.h"

namespace jitsym::dwarf {
namespace {

using testing::DwarfBuilder;
using testing::ElfImageOf;
using testing::ElfSectionSpec;

Result<UnitSymbols> ReadFirst(const Context& ctx, Budget& budget) {
  if (ctx.units().empty()) return MakeError(ErrorKind::kMalformed, "no unit");
  Result<Unit> u = Unit::Open(ctx, ctx.units()[0], budget);
  if (!u) return std::move(u).error();
  return ReadUnitSymbols(*u, budget);
}

TEST(DwarfElfImage, NotAnElfFileIsNotThisFormat) {
  Result<ElfImage> r = ReadElfImage("#!/bin/sh\necho hi\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kNotThisFormat);
  r = ReadElfImage(std::string("\x7f"
                               "ELF\x03\x01",
                               6) +
                   std::string(64, '\0'));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kNotThisFormat);
}

TEST(DwarfElfImage, SectionsByName) {
  const std::string image =
      ElfImageOf({{".text", "\x90\x90"}, {".debug_str", std::string("a\0", 2)}});
  Result<ElfImage> r = ReadElfImage(image);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(r->Find(".debug_str"), nullptr);
  EXPECT_EQ(r->Find(".debug_str")->data, std::string_view("a\0", 2));
  EXPECT_EQ(r->Find(".text")->data, "\x90\x90");
  EXPECT_EQ(r->Find(".debug_info"), nullptr);
}

TEST(DwarfElfImage, ASectionOutsideTheImageIsMalformed) {
  std::string image = ElfImageOf({{".debug_info", "abcd"}});
  // The image cut before the end of the section table, then a section past the end.
  Result<ElfImage> cut = ReadElfImage(image.substr(0, image.size() - 10));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().kind, ErrorKind::kMalformed);
  Result<ElfImage> whole = ReadElfImage(image);
  ASSERT_TRUE(whole.ok());
  const uint64_t shoff = whole->sections.size();  // sections: null, .debug_info, .shstrtab
  ASSERT_EQ(shoff, 3u);
  // Section 1's sh_size (at e_shoff + 64 + 32) made huge.
  uint64_t e_shoff;
  std::memcpy(&e_shoff, image.data() + 40, 8);
  const uint64_t huge = 1ull << 40;
  std::memcpy(image.data() + e_shoff + 64 + 32, &huge, 8);
  Result<ElfImage> bad = ReadElfImage(image);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kMalformed);
  EXPECT_NE(bad.error().message.find(".debug_info lies outside the image"), std::string::npos);
}

TEST(DwarfSections, MainAndSplitNamesAndCompression) {
  Budget budget(Budget::Unlimited());
  const std::string info = "info bytes";
  const std::string str(100000, 'x');
  const std::string image = ElfImageOf({{".debug_info", info},
                                        {".debug_str", testing::CompressedSection(str), 0x800},
                                        {".zdebug_line", testing::ZdebugSection("line bytes")},
                                        {".debug_abbrev.dwo", "not taken"}});
  Result<ElfImage> elf = ReadElfImage(image);
  ASSERT_TRUE(elf.ok());
  Result<LoadedSections> s = LoadSections(*elf, budget);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_FALSE(s->sections().dwo);
  EXPECT_EQ(s->sections()[SectionId::kInfo], info);
  EXPECT_EQ(s->sections()[SectionId::kStr], str);
  EXPECT_EQ(s->sections()[SectionId::kLine], "line bytes");
  EXPECT_TRUE(s->sections()[SectionId::kAbbrev].empty());
  EXPECT_EQ(budget.inflated(), str.size() + 10);
  // A .dwo file: only its *.dwo sections, and a package's indexes.
  const std::string dwo = ElfImageOf({{".debug_info.dwo", "dwo info"},
                                      {".debug_info", "not taken"},
                                      {".debug_cu_index", "index"}});
  Result<ElfImage> dwo_elf = ReadElfImage(dwo);
  Result<LoadedSections> d = LoadSections(*dwo_elf, budget);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->sections().dwo);
  EXPECT_EQ(d->sections()[SectionId::kInfo], "dwo info");
  EXPECT_EQ(d->sections()[SectionId::kCuIndex], "index");
}

// One abbreviation with every form GCC, clang, dwz and DWARF 5 define, then a DIE with a name
// after it: reading the values and skipping them by size both land on the next DIE.
TEST(DwarfForms, EveryFormReadAndSkipped) {
  for (bool read : {true, false}) {
    DwarfBuilder b(5);
    std::vector<DwarfBuilder::Attr> all = {
        {DW_AT_low_pc, DW_FORM_addr},    {0x3000, DW_FORM_block2},
        {0x3001, DW_FORM_block4},        {0x3002, DW_FORM_data2},
        {0x3003, DW_FORM_data4},         {0x3004, DW_FORM_data8},
        {0x3005, DW_FORM_string},        {0x3006, DW_FORM_block},
        {0x3007, DW_FORM_block1},        {0x3008, DW_FORM_data1},
        {0x3009, DW_FORM_flag},          {0x300a, DW_FORM_sdata},
        {0x300b, DW_FORM_strp},          {0x300c, DW_FORM_udata},
        {0x300d, DW_FORM_ref_addr},      {0x300e, DW_FORM_ref1},
        {0x300f, DW_FORM_ref2},          {0x3010, DW_FORM_ref4},
        {0x3011, DW_FORM_ref8},          {0x3012, DW_FORM_ref_udata},
        {0x3013, DW_FORM_indirect},      {0x3014, DW_FORM_sec_offset},
        {0x3015, DW_FORM_exprloc},       {0x3016, DW_FORM_flag_present},
        {0x3017, DW_FORM_strx},          {0x3018, DW_FORM_addrx},
        {0x3019, DW_FORM_ref_sup4},      {0x301a, DW_FORM_strp_sup},
        {0x301b, DW_FORM_data16},        {0x301c, DW_FORM_line_strp},
        {0x301d, DW_FORM_ref_sig8},      {0x301e, DW_FORM_implicit_const, -7},
        {0x301f, DW_FORM_loclistx},      {0x3020, DW_FORM_rnglistx},
        {0x3021, DW_FORM_ref_sup8},      {0x3022, DW_FORM_strx1},
        {0x3023, DW_FORM_strx2},         {0x3024, DW_FORM_strx3},
        {0x3025, DW_FORM_strx4},         {0x3026, DW_FORM_addrx1},
        {0x3027, DW_FORM_addrx2},        {0x3028, DW_FORM_addrx3},
        {0x3029, DW_FORM_addrx4},        {0x302a, DW_FORM_GNU_addr_index},
        {0x302b, DW_FORM_GNU_str_index}, {0x302c, DW_FORM_GNU_ref_alt},
        {0x302d, DW_FORM_GNU_strp_alt}};
    b.Abbrev(1, DW_TAG_compile_unit, true, {});
    b.Abbrev(2, DW_TAG_variable, false, all);
    b.Abbrev(3, DW_TAG_subprogram, false,
             {{DW_AT_name, DW_FORM_string},
              {DW_AT_low_pc, DW_FORM_addr},
              {DW_AT_high_pc, DW_FORM_data4}});
    b.BeginUnit().Die(1).Die(2);
    b.Addr(0x1234);                        // addr
    b.U16(2).U16(0xabcd);                  // block2
    b.U32(1).U8(0xff);                     // block4
    b.U16(3);                              // data2
    b.U32(4);                              // data4
    b.U64(5);                              // data8
    b.Str("inline");                       // string
    b.Uleb(3).U8(1).U8(2).U8(3);           // block
    b.U8(1).U8(9);                         // block1
    b.U8(1);                               // data1
    b.U8(1);                               // flag
    b.Sleb(-300);                          // sdata
    b.U32(0);                              // strp
    b.Uleb(1u << 20);                      // udata
    b.U32(0);                              // ref_addr
    b.U8(0);                               // ref1
    b.U16(0);                              // ref2
    b.U32(0);                              // ref4
    b.U64(0);                              // ref8
    b.Uleb(0);                             // ref_udata
    b.Uleb(DW_FORM_data2).U16(0x55);       // indirect
    b.U32(0);                              // sec_offset
    b.Uleb(2).U8(0x30).U8(0x9f);           // exprloc
    b.Uleb(0);                             // strx (flag_present has no bytes)
    b.Uleb(0);                             // addrx
    b.U32(0);                              // ref_sup4
    b.U32(0);                              // strp_sup
    for (int i = 0; i < 16; ++i) b.U8(i);  // data16
    b.U32(0);                              // line_strp
    b.U64(0x1122334455667788);             // ref_sig8 (implicit_const has no bytes)
    b.Uleb(1);                             // loclistx
    b.Uleb(2);                             // rnglistx
    b.U64(0);                              // ref_sup8
    b.U8(0).U16(0).U8(0).U16(0).U32(0);    // strx1, strx2, strx3 (3 bytes), strx4
    b.U8(0).U16(0).U8(0).U16(0).U32(0);    // addrx1, addrx2, addrx3, addrx4
    b.Uleb(0).Uleb(0);                     // GNU_addr_index, GNU_str_index
    b.U32(0).U32(0);                       // GNU_ref_alt, GNU_strp_alt
    b.Die(3).Str("after").Addr(0x2000).U32(0x10).Null().EndUnit();
    Context ctx(b.sections());
    Budget budget(Budget::Unlimited());
    Result<Unit> u = Unit::Open(ctx, ctx.units()[0], budget);
    ASSERT_TRUE(u.ok()) << u.error().message;
    DieCursor c(*u, budget);
    ASSERT_TRUE(*c.Next());  // the unit DIE
    ASSERT_TRUE(*c.Next());
    ASSERT_EQ(c.die().tag(), DW_TAG_variable);
    if (read) {
      std::vector<AttrValue> values;
      ASSERT_TRUE(c.ForEachAttr([&](const AttrValue& v) { values.push_back(v); }).ok());
      ASSERT_EQ(values.size(), all.size());
      EXPECT_EQ(values[0].u, 0x1234u);
      EXPECT_EQ(values[6].bytes, "inline");
      EXPECT_EQ(values[11].s, -300);
      EXPECT_EQ(values[20].form, DW_FORM_data2);  // indirect, resolved
      EXPECT_EQ(values[20].u, 0x55u);
      EXPECT_EQ(values[28].bytes.size(), 16u);
      EXPECT_EQ(values[30].u, 0x1122334455667788u);
      EXPECT_EQ(values[31].s, -7);
    }
    Result<bool> next = c.Next();
    ASSERT_TRUE(next.ok()) << next.error().message;
    ASSERT_TRUE(*next);
    EXPECT_EQ(c.die().tag(), DW_TAG_subprogram);
  }
}

TEST(DwarfForms, AnUnknownFormFailsTheDieThatUsesIt) {
  DwarfBuilder b(4);
  b.Abbrev(1, DW_TAG_compile_unit, true, {});
  b.Abbrev(2, DW_TAG_subprogram, false, {{DW_AT_name, 0x99}});
  b.BeginUnit().Die(1);
  const uint64_t die = b.here();
  b.Die(2).U32(0).Null().EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<UnitSymbols> r = ReadFirst(ctx, budget);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnsupported);
  char expect[64];
  std::snprintf(expect, sizeof(expect), "debug_info offset 0x%llx: DW_FORM 0x99 unknown",
                static_cast<unsigned long long>(die + 1));
  EXPECT_EQ(r.error().message, expect);
  EXPECT_EQ(r.error().offset, die + 1);
}

TEST(DwarfForms, IndirectNestedTooDeepIsMalformed) {
  DwarfBuilder b(4);
  b.Abbrev(1, DW_TAG_compile_unit, false, {{DW_AT_name, DW_FORM_indirect}});
  b.BeginUnit().Die(1);
  for (int i = 0; i < 10; ++i) b.Uleb(DW_FORM_indirect);
  b.Uleb(DW_FORM_string).Str("x").EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<Unit> u = Unit::Open(ctx, ctx.units()[0], budget);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().kind, ErrorKind::kMalformed);
  EXPECT_NE(u.error().message.find("DW_FORM_indirect nested deeper than 4"), std::string::npos);
}

// A C++-like unit: an abstract inline function (its name indexed through str_offsets), its
// out-of-line instance (abstract_origin), a method defined outside its class (specification,
// its linkage name in the declaration), and an inlined call with its call site.
TEST(DwarfUnitSymbols, TreeNamesAndCallSites) {
  DwarfBuilder b(5);
  const uint64_t inline_name = b.AddStr("sq");
  const uint64_t linkage = b.AddStr("_ZN1W4WorkEi");
  b.str_offsets.Fixed(8, 4).Fixed(5, 2).Fixed(0, 2);  // header: length, version, padding
  b.str_offsets.Fixed(inline_name, 4).Fixed(linkage, 4);
  b.addr.Fixed(12, 4).Fixed(5, 2).U8(8).U8(0).Fixed(0x1000, 8).Fixed(0x2000, 8);
  b.Abbrev(1, DW_TAG_compile_unit, true,
           {{DW_AT_name, DW_FORM_string},
            {DW_AT_comp_dir, DW_FORM_string},
            {DW_AT_str_offsets_base, DW_FORM_sec_offset},
            {DW_AT_addr_base, DW_FORM_sec_offset},
            {DW_AT_low_pc, DW_FORM_addr}});
  b.Abbrev(2, DW_TAG_subprogram, false, {{DW_AT_name, DW_FORM_strx1}});  // abstract
  b.Abbrev(3, DW_TAG_subprogram, true,
           {{DW_AT_abstract_origin, DW_FORM_ref4},
            {DW_AT_low_pc, DW_FORM_addrx},
            {DW_AT_high_pc, DW_FORM_data4}});
  b.Abbrev(4, DW_TAG_class_type, true, {{DW_AT_name, DW_FORM_string}});
  b.Abbrev(5, DW_TAG_subprogram, false,
           {{DW_AT_name, DW_FORM_string}, {DW_AT_linkage_name, DW_FORM_strx2}});
  b.Abbrev(6, DW_TAG_subprogram, true,
           {{DW_AT_specification, DW_FORM_ref4},
            {DW_AT_low_pc, DW_FORM_addrx1},
            {DW_AT_high_pc, DW_FORM_data4}});
  b.Abbrev(7, DW_TAG_inlined_subroutine, false,
           {{DW_AT_abstract_origin, DW_FORM_ref4},
            {DW_AT_low_pc, DW_FORM_addr},
            {DW_AT_high_pc, DW_FORM_data1},
            {DW_AT_call_file, DW_FORM_data1},
            {DW_AT_call_line, DW_FORM_udata},
            {DW_AT_call_column, DW_FORM_data1}});
  b.BeginUnit().Die(1).Str("a.cc").Str("/src").Offset(8).Offset(8).Addr(0);
  const uint64_t abstract = b.here() - b.unit_start();
  b.Die(2).U8(0);
  b.Die(3).U32(abstract).Uleb(0).U32(0x40).Null();
  b.Die(4).Str("W");
  const uint64_t decl = b.here() - b.unit_start();
  b.Die(5).Str("Work").U16(1).Null();
  const uint64_t work = b.here();
  b.Die(6).U32(decl).U8(1).U32(0x100);
  b.Die(7).U32(abstract).Addr(0x2010).U8(0x20).U8(1).Uleb(42).U8(7);
  b.Null().Null().EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<UnitSymbols> r = ReadFirst(ctx, budget);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->notes.empty()) << r->notes[0].message;
  ASSERT_EQ(r->nodes.size(), 4u);   // abstract sq, its instance, Work, the inlined sq
  EXPECT_EQ(r->nodes[0].name, "");  // no ranges: not named
  EXPECT_EQ(r->nodes[1].name, "sq");
  EXPECT_FALSE(r->nodes[1].linkage);
  EXPECT_EQ(r->nodes[1].low_pc, 0x1000u);
  EXPECT_EQ(r->nodes[2].name, "_ZN1W4WorkEi");
  EXPECT_TRUE(r->nodes[2].linkage);
  EXPECT_EQ(r->nodes[2].offset, work);
  EXPECT_EQ(r->nodes[3].parent, 2u);
  EXPECT_EQ(r->nodes[3].name, "sq");
  EXPECT_TRUE(r->nodes[3].has_call_file);
  EXPECT_EQ(r->nodes[3].call_file, 1u);
  EXPECT_EQ(r->nodes[3].call_line, 42u);
  EXPECT_EQ(r->nodes[3].call_column, 7u);
  ASSERT_EQ(r->ranges.size(), 3u);
  EXPECT_EQ(r->ranges[0].lo, 0x1000u);
  EXPECT_EQ(r->ranges[0].hi, 0x1040u);
  EXPECT_EQ(r->ranges[1].lo, 0x2000u);
  EXPECT_EQ(r->ranges[1].hi, 0x2100u);
  EXPECT_EQ(r->ranges[2].node, 3u);
  EXPECT_EQ(r->comp_dir, "/src");
}

TEST(DwarfUnitSymbols, DieBudgetIsALimit) {
  DwarfBuilder b(4);
  b.Abbrev(1, DW_TAG_compile_unit, true, {});
  b.Abbrev(2, DW_TAG_variable, false, {{DW_AT_name, DW_FORM_string}});
  b.BeginUnit().Die(1);
  for (int i = 0; i < 1000; ++i) b.Die(2).Str("v");
  b.Null().EndUnit();
  Context ctx(b.sections());
  Budget budget(BudgetLimits{1 << 20, 600});
  Result<UnitSymbols> r = ReadFirst(ctx, budget);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kLimit);
  Budget enough(BudgetLimits{1 << 20, 2000});
  EXPECT_TRUE(ReadFirst(ctx, enough).ok());
  EXPECT_EQ(enough.dies(), 1002u);  // the unit DIE twice: opening the unit, and the walk
}

TEST(DwarfContext, ThreeOutcomes) {
  // Not this format: no ELF. Malformed: a unit header cut short (listed as an error, the units
  // before it kept). Not found: a split unit with another dwo id.
  Budget budget(Budget::Unlimited());
  ASSERT_EQ(ReadElfImage("text").error().kind, ErrorKind::kNotThisFormat);
  DwarfBuilder b(5);
  b.Abbrev(1, DW_TAG_compile_unit, false, {});
  b.BeginUnit().Die(1).EndUnit();
  b.info.Fixed(100, 4).Fixed(5, 2);  // a second unit, cut short
  Context ctx(b.sections());
  ASSERT_EQ(ctx.units().size(), 1u);
  ASSERT_EQ(ctx.list_errors().size(), 1u);
  EXPECT_EQ(ctx.list_errors()[0].kind, ErrorKind::kMalformed);
  EXPECT_NE(ctx.list_errors()[0].message.find("past the section's end"), std::string::npos);

  DwarfBuilder skel(5);
  skel.Abbrev(1, DW_TAG_skeleton_unit, false, {{DW_AT_dwo_name, DW_FORM_string}});
  skel.BeginUnit(DW_UT_skeleton, 0x1111).Die(1).Str("x.dwo").EndUnit();
  DwarfBuilder dwo(5);
  dwo.dwo = true;
  dwo.Abbrev(1, DW_TAG_compile_unit, false, {});
  dwo.BeginUnit(DW_UT_split_compile, 0x2222).Die(1).EndUnit();
  Context skel_ctx(skel.sections()), dwo_ctx(dwo.sections());
  Result<Unit> s = Unit::Open(skel_ctx, skel_ctx.units()[0], budget);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->unit_type(), DW_UT_skeleton);
  EXPECT_EQ(s->dwo_name(), "x.dwo");
  Result<std::optional<Unit>> none = OpenSplitUnit(*s, dwo_ctx, budget);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace jitsym::dwarf
