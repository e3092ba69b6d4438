// daemon/dwarf/'s tables on hand-made inputs: line programs (DWARF 4 and 5, what libdw refuses
// but the standard allows), range lists of both kinds, a package's index, and a GNU split DWARF
// 4 unit read through its skeleton's bases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/context.h"
#include "daemon/dwarf/dwp_index.h"
#include "daemon/dwarf/line_table.h"
#include "daemon/dwarf/split_unit.h"
#include "daemon/dwarf/unit.h"
#include "daemon/dwarf/unit_symbols.h"
#include "tests/unit/testing/dwarf_builder.h"

namespace jitsym::dwarf {
namespace {

using testing::ByteWriter;
using testing::DwarfBuilder;

// A DWARF 4 line table: no directories, one file "x.c", `max_ops` operations per instruction,
// then `program`.
std::string Program4(const std::string& program, uint8_t max_ops = 1) {
  ByteWriter body;
  body.U8(1).U8(max_ops).U8(1).U8(static_cast<uint8_t>(-5)).U8(14).U8(13);
  for (uint8_t n : {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1}) body.U8(n);
  body.U8(0);  // no include directories
  body.Str("x.c").Uleb(0).Uleb(0).Uleb(0);
  body.U8(0);  // end of files
  ByteWriter unit;
  unit.Fixed(4, 2).Fixed(body.size(), 4);
  unit.s += body.s + program;
  ByteWriter out;
  out.Fixed(unit.size(), 4);
  return out.s + unit.s;
}

std::string SetAddress(uint64_t addr) {
  ByteWriter w;
  w.U8(0).Uleb(9).U8(DW_LNE_set_address).Fixed(addr, 8);
  return w.s;
}
const std::string kEndSequence("\x00\x01\x01", 3);

Result<LineTable> ReadLines(const std::string& line, const std::string& line_str = "") {
  static Sections s;  // the Context copies the spans; the strings outlive the call
  s = Sections();
  s[SectionId::kLine] = line;
  s[SectionId::kLineStr] = line_str;
  Context ctx(s);
  return ReadLineTable(ctx, 0, 8, std::string_view("/src"));
}

TEST(DwarfLineTable, Dwarf4ProgramAndFileNames) {
  const std::string special(1, static_cast<char>(13 + (1 + 5) + 14 * 2));
  Result<LineTable> t = ReadLines(Program4(SetAddress(0x1000) + "\x01" + special +
                                           std::string("\x05\x07\x01\x02\x04", 5) + kEndSequence));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->files, (std::vector<std::string>{"???", "/src/x.c"}));
  ASSERT_EQ(t->rows.size(), 4u);
  EXPECT_EQ(t->rows[0], (LineRow{0x1000, 1, 1, 0, false}));
  EXPECT_EQ(t->rows[1], (LineRow{0x1002, 1, 2, 0, false}));
  EXPECT_EQ(t->rows[2], (LineRow{0x1002, 1, 2, 7, false}));
  EXPECT_EQ(t->rows[3], (LineRow{0x1006, 1, 2, 7, true}));
}

TEST(DwarfLineTable, WhatLibdwRefusesIsRead) {
  // DW_LNE_define_file, a vendor extended opcode (skipped by its length), an extended opcode
  // whose length takes two LEB128 bytes, a column past 16 bits: read as the standard says
  // (daemon/native's reader left these to libdw).
  ByteWriter p;
  p.s += SetAddress(0x1000);
  p.U8(0).Uleb(13).U8(DW_LNE_define_file).Str("/abs/y.c").Uleb(0).Uleb(0).Uleb(0);
  p.U8(0).Uleb(3).U8(0x80).U8(0xaa).U8(0xbb);      // vendor opcode 0x80, 2 operand bytes
  p.U8(0).Uleb(130).U8(0x81).s.append(129, '\0');  // long vendor opcode
  p.U8(DW_LNS_set_file).Uleb(2).U8(DW_LNS_set_column).Uleb(70000).U8(DW_LNS_copy);
  p.U8(DW_LNS_advance_pc).Uleb(4);
  p.s += kEndSequence;
  Result<LineTable> t = ReadLines(Program4(p.s));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->files, (std::vector<std::string>{"???", "/src/x.c", "/abs/y.c"}));
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0], (LineRow{0x1000, 2, 1, 70000, false}));
}

TEST(DwarfLineTable, SequencesInAddressOrderTheLastRowEnded) {
  const std::string line =
      Program4(SetAddress(0x2000) + std::string("\x01\x02\x04", 3) + kEndSequence +
               SetAddress(0x1000) + std::string("\x01\x02\x04\x01\x02\x04\x01", 7));
  Result<LineTable> t = ReadLines(line);
  ASSERT_TRUE(t.ok());
  std::vector<std::pair<uint64_t, bool>> got;
  for (const LineRow& r : t->rows) got.emplace_back(r.addr, r.end_sequence);
  EXPECT_EQ(
      got,
      (std::vector<std::pair<uint64_t, bool>>{
          {0x1000, false}, {0x1004, false}, {0x1008, false}, {0x2000, false}, {0x2004, true}}));
}

TEST(DwarfLineTable, RowsInTheOrderOfAStableSortWhateverTheSequences) {
  // Random programs of sequences that start anywhere (several at 0, as a linker leaves the
  // functions it discarded), overlap or not, and end at their last row's address or past it:
  // the rows come in the order of a stable sort of the rows as the program wrote them (the last
  // one ended).
  std::mt19937 rng(7);
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  for (int trial = 0; trial < 500; ++trial) {
    ByteWriter p;
    std::vector<LineRow> written;
    uint32_t id = 2;
    for (uint32_t q = 0, n = 1 + pick(8); q < n; ++q) {
      const uint64_t starts[] = {0, 0, 0x10, 0x1000, 0x1000 + pick(64)};
      uint64_t addr = starts[pick(5)];
      uint32_t line = 1;
      p.s += SetAddress(addr);
      for (uint32_t r = 0, rows = pick(6); r < rows; ++r) {
        const uint32_t step = r == 0 ? 0 : pick(3);
        p.U8(DW_LNS_advance_pc).Uleb(step).U8(DW_LNS_advance_line).Sleb(int64_t{id} - line);
        p.U8(DW_LNS_copy);
        addr += step;
        line = id++;
        written.push_back({addr, 1, line, 0, false});
      }
      const uint32_t step = pick(3);
      p.U8(DW_LNS_advance_pc).Uleb(step);
      p.s += kEndSequence;
      written.push_back({addr + step, 1, line, 0, true});
    }
    Result<LineTable> t = ReadLines(Program4(p.s));
    ASSERT_TRUE(t.ok()) << t.error().message;
    std::vector<LineRow> want = written;
    std::stable_sort(want.begin(), want.end(), RowBefore);
    want.back().end_sequence = true;  // as libdw ends the last row
    ASSERT_EQ(t->rows.size(), want.size()) << "trial " << trial;
    for (size_t i = 0; i < want.size(); ++i) {
      const LineRow& g = t->rows[i];
      ASSERT_EQ(std::tie(g.addr, g.line, g.end_sequence),
                std::tie(want[i].addr, want[i].line, want[i].end_sequence))
          << "trial " << trial << ", row " << i;
    }
  }
}

TEST(DwarfLineTable, LineRegisterWrapsInsteadOfOverflowing) {
  // DW_LNS_advance_line to INT64_MAX, then a special opcode adding more: the register wraps (it
  // overflowed a signed integer before: UBSan in the fuzz build), and a line outside 32 bits
  // reads as 0 (negative) or 0xffffffff.
  ByteWriter p;
  p.s += SetAddress(0x1000);
  p.U8(DW_LNS_advance_line).Sleb(INT64_MAX - 1).U8(DW_LNS_copy);  // line INT64_MAX
  p.U8(static_cast<uint8_t>(13 + (2 + 5)));                       // line + 2, address + 0
  p.U8(DW_LNS_advance_line).Sleb(INT64_MIN).U8(DW_LNS_advance_line).Sleb(INT64_MIN);
  p.U8(DW_LNS_copy);
  p.s += kEndSequence;
  Result<LineTable> t = ReadLines(Program4(p.s));
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 4u);
  EXPECT_EQ(t->rows[0].line, 0u);  // the end row sorts first at its address
  EXPECT_EQ(t->rows[1].line, 0xffffffffu);
  EXPECT_EQ(t->rows[2].line, 0u);  // 1 + INT64_MAX + 2 wrapped: negative
  EXPECT_EQ(t->rows[3].line, 0u);
}

TEST(DwarfLineTable, VliwOperationIndex) {
  // Four operations per instruction of 16 bytes: advancing by 6 operations moves one
  // instruction (and two operations into it).
  ByteWriter p;
  p.s += SetAddress(0x1000);
  p.U8(DW_LNS_advance_pc).Uleb(6).U8(DW_LNS_copy).U8(DW_LNS_advance_pc).Uleb(2).U8(DW_LNS_copy);
  p.s += kEndSequence;
  std::string line = Program4(p.s, 4);
  line[10] = 16;  // minimum_instruction_length
  Result<LineTable> t = ReadLines(line);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_EQ(t->rows[0].addr, 0x1010u);
  EXPECT_EQ(t->rows[1].addr, 0x1020u);
}

TEST(DwarfLineTable, Dwarf5EntriesFromLineStr) {
  // Directories and files named in .debug_line_str, each file with an MD5 (DW_FORM_data16).
  ByteWriter line_str;
  line_str.Str("/build").Str("include").Str("a.c").Str("h.h");
  ByteWriter body;
  body.U8(1).U8(1).U8(1).U8(static_cast<uint8_t>(-5)).U8(14).U8(13);
  for (uint8_t n : {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1}) body.U8(n);
  body.U8(1).Uleb(DW_LNCT_path).Uleb(DW_FORM_line_strp);
  body.Uleb(2).Fixed(0, 4).Fixed(7, 4);
  body.U8(3)
      .Uleb(DW_LNCT_path)
      .Uleb(DW_FORM_line_strp)
      .Uleb(DW_LNCT_directory_index)
      .Uleb(DW_FORM_udata)
      .Uleb(5)
      .Uleb(DW_FORM_data16);
  body.Uleb(2).Fixed(15, 4).Uleb(0).s.append(16, 'm');
  body.Fixed(19, 4).Uleb(1).s.append(16, 'm');
  ByteWriter unit;
  unit.Fixed(5, 2).U8(8).U8(0).Fixed(body.size(), 4);
  unit.s += body.s + SetAddress(0x10) + "\x01" + kEndSequence;
  ByteWriter line;
  line.Fixed(unit.size(), 4);
  Result<LineTable> t = ReadLines(line.s + unit.s, line_str.s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->files, (std::vector<std::string>{"/build/a.c", "include/h.h"}));
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0].file, 1u);
}

TEST(DwarfRanges, DebugRangesWithABaseAddressSelection) {
  DwarfBuilder b(4);
  b.ranges.Fixed(0x10, 8).Fixed(0x20, 8);            // from the unit's base 0x1000
  b.ranges.Fixed(~uint64_t{0}, 8).Fixed(0x5000, 8);  // base 0x5000
  b.ranges.Fixed(0x1, 8).Fixed(0x3, 8).Fixed(0, 8).Fixed(0, 8);
  b.Abbrev(1, DW_TAG_compile_unit, true, {{DW_AT_low_pc, DW_FORM_addr}});
  b.Abbrev(2, DW_TAG_subprogram, false,
           {{DW_AT_name, DW_FORM_string}, {DW_AT_ranges, DW_FORM_sec_offset}});
  b.BeginUnit().Die(1).Addr(0x1000).Die(2).Str("f").U32(0).Null().EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<Unit> u = Unit::Open(ctx, ctx.units()[0], budget);
  ASSERT_TRUE(u.ok());
  Result<UnitSymbols> r = ReadUnitSymbols(*u, budget);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->ranges.size(), 2u);
  EXPECT_EQ(r->ranges[0].lo, 0x1010u);
  EXPECT_EQ(r->ranges[0].hi, 0x1020u);
  EXPECT_EQ(r->ranges[1].lo, 0x5001u);
  EXPECT_EQ(r->ranges[1].hi, 0x5003u);
  EXPECT_EQ(r->nodes[0].low_pc, 0x1010u);
}

TEST(DwarfRanges, RnglistsEveryEntryKind) {
  DwarfBuilder b(5);
  b.addr.Fixed(20, 4).Fixed(5, 2).U8(8).U8(0).Fixed(0x7000, 8).Fixed(0x7100, 8);
  // Header (length, version, address size, segment size, 1 offset), the offsets, the list.
  ByteWriter list;
  list.U8(DW_RLE_offset_pair).Uleb(0x10).Uleb(0x20);  // unit base 0x1000
  list.U8(DW_RLE_base_addressx).Uleb(0);              // base 0x7000
  list.U8(DW_RLE_offset_pair).Uleb(1).Uleb(2);
  list.U8(DW_RLE_startx_endx).Uleb(0).Uleb(1);
  list.U8(DW_RLE_startx_length).Uleb(1).Uleb(8);
  list.U8(DW_RLE_base_address).Fixed(0x9000, 8);
  list.U8(DW_RLE_offset_pair).Uleb(4).Uleb(6);
  list.U8(DW_RLE_start_end).Fixed(0xa000, 8).Fixed(0xa010, 8);
  list.U8(DW_RLE_start_length).Fixed(0xb000, 8).Uleb(3);
  list.U8(DW_RLE_end_of_list);
  b.rnglists.Fixed(8 + 4 + list.size(), 4).Fixed(5, 2).U8(8).U8(0).Fixed(1, 4).Fixed(4, 4);
  b.rnglists.s += list.s;
  b.Abbrev(1, DW_TAG_compile_unit, true,
           {{DW_AT_low_pc, DW_FORM_addr},
            {DW_AT_addr_base, DW_FORM_sec_offset},
            {DW_AT_rnglists_base, DW_FORM_sec_offset}});
  b.Abbrev(2, DW_TAG_subprogram, false,
           {{DW_AT_name, DW_FORM_string}, {DW_AT_ranges, DW_FORM_rnglistx}});
  b.BeginUnit().Die(1).Addr(0x1000).Offset(8).Offset(12).Die(2).Str("f").Uleb(0).Null().EndUnit();
  Context ctx(b.sections());
  Budget budget(Budget::Unlimited());
  Result<Unit> u = Unit::Open(ctx, ctx.units()[0], budget);
  ASSERT_TRUE(u.ok()) << u.error().message;
  Result<UnitSymbols> r = ReadUnitSymbols(*u, budget);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->notes.empty()) << r->notes[0].message;
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (const SymbolRange& s : r->ranges) got.emplace_back(s.lo, s.hi);
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint64_t>>{{0x1010, 0x1020},
                                                             {0x7001, 0x7002},
                                                             {0x7000, 0x7100},
                                                             {0x7100, 0x7108},
                                                             {0x9004, 0x9006},
                                                             {0xa000, 0xa010},
                                                             {0xb000, 0xb003}}));
}

TEST(DwarfDwpIndex, VersionFiveAndMalformedOnes) {
  ByteWriter w;
  w.Fixed(5, 2).Fixed(0, 2).Fixed(2, 4).Fixed(1, 4).Fixed(2, 4);  // 2 columns, 1 unit, 2 slots
  w.Fixed(0, 8).Fixed(0xabcdef, 8);                               // signatures
  w.Fixed(0, 4).Fixed(1, 4);                                      // rows
  w.Fixed(DW_SECT_INFO, 4).Fixed(DW_SECT_ABBREV, 4);              // columns
  w.Fixed(0x10, 4).Fixed(0x20, 4).Fixed(0x30, 4).Fixed(0x40, 4);  // offsets, sizes
  Result<DwpIndex> index = ReadDwpIndex(w.s, ByteOrder::kLittle, "cu_index");
  ASSERT_TRUE(index.ok()) << index.error().message;
  ASSERT_EQ(index->rows.size(), 1u);
  EXPECT_EQ(index->rows[0].signature, 0xabcdefu);
  EXPECT_EQ(index->UnitPart(index->rows[0], false).offset, 0x10u);
  EXPECT_EQ(index->Share(index->rows[0]).abbrev.size, 0x40u);
  std::string bad_row = w.s;
  bad_row[16 + 16 + 4] = 2;  // row 2 of 1
  EXPECT_EQ(ReadDwpIndex(bad_row, ByteOrder::kLittle, "cu_index").error().kind,
            ErrorKind::kMalformed);
  std::string twice = w.s;
  twice[16 + 16 + 8 + 4] = DW_SECT_INFO;
  EXPECT_EQ(ReadDwpIndex(twice, ByteOrder::kLittle, "cu_index").error().message,
            "debug_cu_index offset 0x2c: a section id twice");
  EXPECT_EQ(ReadDwpIndex(w.s.substr(0, 30), ByteOrder::kLittle, "cu_index").error().kind,
            ErrorKind::kMalformed);
}

// A package whose index puts a contribution past its section is not used at all: its units
// would otherwise be read with a piece missing, and nothing would say so.
TEST(DwarfDwpIndex, AContributionPastItsSectionRefusesThePackage) {
  ByteWriter info;  // one DWARF 5 split compile unit of dwo id 0xabcdef, its DIE a null entry
  info.Fixed(17, 4).Fixed(5, 2).U8(DW_UT_split_compile).U8(8).Fixed(0, 4).Fixed(0xabcdef, 8).U8(0);
  auto package = [&](uint32_t abbrev_size) {
    ByteWriter w;
    w.Fixed(5, 2).Fixed(0, 2).Fixed(2, 4).Fixed(1, 4).Fixed(2, 4);
    w.Fixed(0, 8).Fixed(0xabcdef, 8).Fixed(0, 4).Fixed(1, 4);
    w.Fixed(DW_SECT_INFO, 4).Fixed(DW_SECT_ABBREV, 4);
    w.Fixed(0, 4).Fixed(0, 4).Fixed(info.size(), 4).Fixed(abbrev_size, 4);
    return w.s;
  };
  const std::string abbrev(1, '\0');
  for (uint32_t abbrev_size : {1u, 0x40u}) {
    const std::string index = package(abbrev_size);
    Sections s;
    s.dwo = true;
    s[SectionId::kInfo] = info.s;
    s[SectionId::kAbbrev] = abbrev;
    s[SectionId::kCuIndex] = index;
    Context ctx(s);
    ASSERT_EQ(ctx.units().size(), 1u);
    if (abbrev_size == 1) {
      EXPECT_EQ(ctx.index_error(), nullptr) << ctx.index_error()->message;
      EXPECT_NE(ctx.SplitUnitById(0xabcdef), nullptr);
    } else {
      ASSERT_NE(ctx.index_error(), nullptr);
      EXPECT_EQ(ctx.index_error()->message,
                "debug_cu_index offset 0x0: the row of 0xabcdef puts its abbrev contribution at "
                "[0x0, +0x40), past the section's 1 bytes");
      EXPECT_EQ(ctx.SplitUnitById(0xabcdef), nullptr);
    }
  }
}

TEST(DwarfSplit, GnuSplitDwarf4ThroughTheSkeletonsBases) {
  // The skeleton: its dwo id, address base (.debug_addr has no header in DWARF 4) and ranges
  // base. The .dwo: its unit names the same id; its addresses are indexes into the skeleton's
  // .debug_addr, its ranges offsets into the skeleton's .debug_ranges from the ranges base,
  // its strings indexes into its own .debug_str_offsets.dwo.
  DwarfBuilder skel(4);
  skel.addr.Fixed(0x4000, 8).Fixed(0x5000, 8);
  skel.ranges.Fixed(0xdead, 8).Fixed(0xbeef, 8);  // before the base: never read
  skel.ranges.Fixed(0x10, 8).Fixed(0x20, 8).Fixed(0, 8).Fixed(0, 8);
  skel.Abbrev(1, DW_TAG_compile_unit, false,
              {{DW_AT_GNU_dwo_name, DW_FORM_string},
               {DW_AT_GNU_dwo_id, DW_FORM_data8},
               {DW_AT_low_pc, DW_FORM_addr},
               {DW_AT_GNU_addr_base, DW_FORM_sec_offset},
               {DW_AT_GNU_ranges_base, DW_FORM_sec_offset}});
  skel.BeginUnit().Die(1).Str("a.dwo").U64(0x77).Addr(0x4000).U32(0).U32(16).EndUnit();
  DwarfBuilder dwo(4);
  dwo.dwo = true;
  dwo.str.Str("f").Str("g");
  dwo.str_offsets.Fixed(0, 4).Fixed(2, 4);
  dwo.Abbrev(1, DW_TAG_compile_unit, true, {{DW_AT_GNU_dwo_id, DW_FORM_data8}});
  dwo.Abbrev(2, DW_TAG_subprogram, false,
             {{DW_AT_name, DW_FORM_GNU_str_index},
              {DW_AT_low_pc, DW_FORM_GNU_addr_index},
              {DW_AT_high_pc, DW_FORM_data4}});
  dwo.Abbrev(3, DW_TAG_subprogram, false,
             {{DW_AT_name, DW_FORM_GNU_str_index}, {DW_AT_ranges, DW_FORM_sec_offset}});
  dwo.BeginUnit().Die(1).U64(0x77).Die(2).Uleb(0).Uleb(1).U32(0x40);
  dwo.Die(3).Uleb(1).U32(0).Null().EndUnit();
  Context skel_ctx(skel.sections()), dwo_ctx(dwo.sections());
  Budget budget(Budget::Unlimited());
  Result<Unit> s = Unit::Open(skel_ctx, skel_ctx.units()[0], budget);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->unit_type(), DW_UT_skeleton);
  Result<std::optional<Unit>> split = OpenSplitUnit(*s, dwo_ctx, budget);
  ASSERT_TRUE(split.ok()) << split.error().message;
  ASSERT_TRUE(split->has_value());
  Result<UnitSymbols> r = ReadUnitSymbols(**split, budget);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->notes.empty()) << r->notes[0].message;
  ASSERT_EQ(r->nodes.size(), 2u);
  EXPECT_EQ(r->nodes[0].name, "f");
  EXPECT_EQ(r->nodes[1].name, "g");
  ASSERT_EQ(r->ranges.size(), 2u);
  EXPECT_EQ(r->ranges[0].lo, 0x5000u);
  EXPECT_EQ(r->ranges[0].hi, 0x5040u);
  EXPECT_EQ(r->ranges[1].lo, 0x4010u);  // the skeleton's low_pc is the base
  EXPECT_EQ(r->ranges[1].hi, 0x4020u);
}

}  // namespace
}  // namespace jitsym::dwarf
