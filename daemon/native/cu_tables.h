// The tables of one DWARF compilation unit, built once from what daemon/dwarf/ read of it
// (dwarf::UnitSymbols: its subprogram/inline tree, pc ranges and line table) and then searched:
// address intervals -> the deepest subprogram or inlined subroutine covering them (the inline
// chain is followed through parents), and the line table. cu_index.h decides when a unit is
// read, and which split unit stands for a skeleton (split_units.h).
#ifndef JITSYM_DAEMON_NATIVE_CU_TABLES_H_
#define JITSYM_DAEMON_NATIVE_CU_TABLES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/dwarf/unit_symbols.h"
#include "daemon/native/demangle.h"
#include "daemon/native/key_index.h"

namespace jitsym::native {

// The tables of one compilation unit. Immutable once built.
struct CuTables {
  struct Interval {  // [lo, hi) -> the deepest subprogram/inlined DIE covering it
    uint64_t lo, hi;
    uint32_t node;
  };
  struct Node {
    uint32_t parent;                             // kNone for a subprogram
    uint32_t name;                               // index into strings
    uint32_t call_file, call_line, call_column;  // where this inlined instance was called
    uint64_t low_pc;                             // entry (subprograms)
  };
  struct Row {
    uint64_t addr;
    uint32_t file;  // index into strings; kNone: no file
    uint32_t line;
    uint32_t column;
    bool end_sequence;
  };
  static constexpr uint32_t kNone = 0xffffffffu;
  std::vector<Interval> intervals;  // sorted, disjoint
  std::vector<Node> nodes;
  std::vector<Row> rows;  // sorted by address, end_sequence rows first at equal addresses
  std::vector<std::string_view> strings;  // into the module's StringPool
  // A skeleton unit whose split unit could not be read: which file is missing, for a person
  // (the tables then hold the skeleton's line table only). Empty otherwise.
  std::string missing;
  KeyIndex interval_index, row_index;  // over intervals[].lo and rows[].addr
  size_t Bytes() const;
};

// Linkage names demangled once per module per thread, by their pointer into the module's
// sections (.debug_str is shared by all CUs, so the same name is the same pointer), charged to
// the module's demangling budget.
struct DemangledNames {
  std::unordered_map<const char*, std::string> names;
  DemangleBudget* budget = nullptr;  // the module's; null: unbounded (tests)
};

// The tables of a unit from what was read of it. `comp_dir`: the unit's (a skeleton's for a
// split unit), which relative file names are taken under; `missing`: CuTables::missing. The
// tables' strings are stored in `pool`, which must outlive them. Not thread-safe for one
// `demangled`.
class StringPool;
std::unique_ptr<CuTables> BuildCuTables(const dwarf::UnitSymbols& symbols,
                                        std::string_view comp_dir, std::string missing,
                                        DemangledNames* demangled, StringPool* pool);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_CU_TABLES_H_
