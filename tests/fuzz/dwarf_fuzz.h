// What the DWARF fuzz targets do with what they read (daemon/dwarf/): everything symbolization
// reads of every unit, checked for the invariants a caller relies on, every string read in full
// (ASan sees a byte outside its section). And the one encoding of several files' sections in one
// input (make_dwarf_seeds writes it from real programs):
//
//   flags     1 byte: bit 0 big-endian, bit 1 the main file is a .dwo/.dwp
//   records   file (1 byte: 0 main, 1 split: a .dwo or .dwp, 2 supplementary), section
//             (1 byte: dwarf::SectionId), length (4 bytes LE), the section's bytes
#ifndef JITSYM_TESTS_FUZZ_DWARF_FUZZ_H_
#define JITSYM_TESTS_FUZZ_DWARF_FUZZ_H_

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/context.h"
#include "daemon/dwarf/sections.h"
#include "daemon/dwarf/split_unit.h"
#include "daemon/dwarf/unit.h"
#include "daemon/dwarf/unit_symbols.h"

namespace jitsym::fuzz {

inline void TouchAll(std::string_view s) {
  volatile unsigned sum = 0;
  for (char c : s) sum = sum + static_cast<unsigned char>(c);
  (void)sum;
}

// The limits the fuzz targets read under: an owner's quota, small enough for the fuzzer.
inline dwarf::BudgetLimits FuzzLimits() { return dwarf::BudgetLimits{64 << 20, 1 << 22}; }

inline void CheckSymbols(const dwarf::UnitSymbols& s) {
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const dwarf::SymbolNode& n = s.nodes[i];
    if (n.parent != dwarf::SymbolNode::kNone && n.parent >= i) std::abort();  // parents first
    TouchAll(n.name);
  }
  for (const dwarf::SymbolRange& r : s.ranges) {
    if (r.lo >= r.hi || r.node >= s.nodes.size()) std::abort();
  }
  if (s.lines) {
    for (size_t i = 1; i < s.lines->rows.size(); ++i) {
      if (s.lines->rows[i - 1].addr > s.lines->rows[i].addr) std::abort();
    }
    if (!s.lines->rows.empty() && !s.lines->rows.back().end_sequence) std::abort();
    for (const std::string& f : s.lines->files) TouchAll(f);
  }
  TouchAll(s.comp_dir);
}

// Every unit of `main` opened and read; a skeleton's split unit from `split` when given.
inline void ReadEverything(const dwarf::Context& main, const dwarf::Context* split,
                           dwarf::Budget& budget) {
  for (const dwarf::UnitHeader& h : main.units()) {
    if (h.offset >= h.end || h.first_die > h.end) std::abort();
    Result<dwarf::Unit> u = dwarf::Unit::Open(main, h, budget);
    if (!u) {
      if (u.error().kind == ErrorKind::kUsage) std::abort();
      continue;
    }
    TouchAll(u->name());
    TouchAll(u->dwo_name());
    std::optional<dwarf::Unit> split_unit;
    if (split != nullptr && u->unit_type() == dwarf::DW_UT_skeleton) {
      Result<std::optional<dwarf::Unit>> s = dwarf::OpenSplitUnit(*u, *split, budget);
      if (s && *s) split_unit = std::move(**s);
    }
    Result<dwarf::UnitSymbols> r = dwarf::ReadUnitSymbols(split_unit ? *split_unit : *u, budget);
    if (!r) {
      if (r.error().kind == ErrorKind::kUsage) std::abort();
      continue;
    }
    CheckSymbols(*r);
  }
}

// Up to three files' sections from one input (see the top of this file).
struct FuzzFiles {
  dwarf::Sections files[3];
  bool present[3] = {false, false, false};

  static FuzzFiles Parse(const uint8_t* data, size_t size) {
    FuzzFiles f;
    if (size == 0) return f;
    const uint8_t flags = data[0];
    for (dwarf::Sections& s : f.files) {
      s.order = (flags & 1) ? ByteOrder::kBig : ByteOrder::kLittle;
    }
    f.files[0].dwo = (flags & 2) != 0;
    f.files[1].dwo = true;
    size_t at = 1;
    while (size - at >= 6) {
      const uint8_t file = data[at] % 3;
      const uint8_t id = data[at + 1] % dwarf::kSectionCount;
      uint32_t length = data[at + 2] | (data[at + 3] << 8) | (data[at + 4] << 16) |
                        (static_cast<uint32_t>(data[at + 5]) << 24);
      at += 6;
      if (length > size - at) length = static_cast<uint32_t>(size - at);
      f.files[file].data[id] = std::string_view(reinterpret_cast<const char*>(data + at), length);
      f.present[file] = true;
      at += length;
    }
    return f;
  }
};

}  // namespace jitsym::fuzz

#endif  // JITSYM_TESTS_FUZZ_DWARF_FUZZ_H_
