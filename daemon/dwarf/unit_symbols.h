// What symbolization reads of one unit, in one call: the tree of its subprograms and inlined
// subroutines (names, call sites, entry pcs, pc ranges in preorder) and its line table. The
// shape of daemon/native's CU tables before they are indexed: a caller lays the ranges over
// each other in the order given (a child's over its parent's) to map an address to its
// deepest node, and follows parents for the inline chain.
//
// The walk is libdw's as daemon/native/cu_tables.cc does it: DIEs in preorder, subtrees that
// hold no code skipped (parameters, variables, types; classes outside any function), no DIE
// deeper than 512 descended into; a subprogram's parent is none, an inlined subroutine's the
// nearest enclosing node. A node is named (only when it or a descendant has pc ranges) by the
// first DW_AT_linkage_name, else DW_AT_MIPS_linkage_name, else DW_AT_name along the chain of
// DW_AT_abstract_origin (else DW_AT_specification) references from the node, at most 17 DIEs
// long, as libdw's dwarf_attr_integrate looks. The rule for references (docs/dwarf.md): each
// DIE a chain reaches is decoded once per call (remembered by offset), another unit a chain
// enters is opened once per call, and a chain never takes more than 17 steps: the work is
// linear in the unit's DIEs. DW_TAG_imported_unit is not followed (libdw's walk does not).
//
// A split unit (opened with its skeleton) gives the skeleton's line rows, and the .dwo's file
// table for DW_AT_call_file. What cannot be read of one node (a name, a range list) is left out
// and noted; what breaks the walk fails the whole unit.
#ifndef JITSYM_DAEMON_DWARF_UNIT_SYMBOLS_H_
#define JITSYM_DAEMON_DWARF_UNIT_SYMBOLS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/line_table.h"
#include "daemon/dwarf/unit.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

struct SymbolNode {
  static constexpr uint32_t kNone = 0xffffffffu;
  uint32_t parent = kNone;  // kNone for a subprogram
  uint16_t tag = 0;         // DW_TAG_subprogram or DW_TAG_inlined_subroutine
  bool linkage = false;     // `name` is a linkage (mangled) name
  bool has_call_file = false;
  std::string_view name;  // empty: none (or the node has no pc ranges under it)
  uint64_t offset = 0;    // the DIE's, in its unit's section
  uint64_t call_file = 0, call_line = 0, call_column = 0;  // inlined subroutines
  uint64_t low_pc = 0;  // the first range's start (the entry of a subprogram)
};

struct SymbolRange {
  uint64_t lo = 0, hi = 0;  // [lo, hi), never empty
  uint32_t node = 0;
};

struct UnitSymbols {
  std::vector<SymbolNode> nodes;
  std::vector<SymbolRange> ranges;  // in preorder of their nodes
  std::optional<LineTable> lines;   // none when the unit has no line table or it is unreadable
  // A split unit's file table, which DW_AT_call_file indexes (the rows' is the skeleton's).
  std::optional<std::vector<std::string>> split_files;
  std::string_view comp_dir;
  bool has_comp_dir = false;
  // What was left out (names, range lists, the line table): the first few, and how many.
  std::vector<Error> notes;
  size_t problems = 0;

  // The file names DW_AT_call_file indexes, or null.
  const std::vector<std::string>* call_files() const {
    if (split_files) return &*split_files;
    return lines ? &lines->files : nullptr;
  }
};

struct SymbolOptions {
  bool names = true;
  bool lines = true;
  uint32_t max_depth = 512;  // libdw's walk in daemon/native descends no deeper
};

Result<UnitSymbols> ReadUnitSymbols(const Unit& unit, Budget& budget,
                                    const SymbolOptions& options = {});

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_UNIT_SYMBOLS_H_
