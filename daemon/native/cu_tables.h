// The tables of one DWARF compilation unit, read from libdw once and then searched without it:
// address intervals -> the deepest subprogram or inlined subroutine covering them (the inline
// chain is followed through parents), and the line table. BuildCuTables is the only code that
// walks DIEs; cu_index.h decides when it runs and on which libdw handle. A skeleton unit (split
// DWARF) is read through its split unit (split_units.h); without one, only its line table is.
#ifndef JITSYM_DAEMON_NATIVE_CU_TABLES_H_
#define JITSYM_DAEMON_NATIVE_CU_TABLES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/native/demangle.h"
#include "daemon/native/key_index.h"

typedef struct Dwarf Dwarf;

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

// Demangled linkage names by their .debug_str pointer: .debug_str is shared by all CUs, so one
// name is one pointer, demangled once per libdw handle.
// Linkage names demangled once per module per libdw handle (.debug_str is shared by all CUs, so
// the same name is the same pointer), charged to the module's demangling budget.
struct DemangledNames {
  std::unordered_map<const char*, std::string> names;
  DemangleBudget* budget = nullptr;  // the module's; null: unbounded (tests)
};

// Reads the CU whose DIE is at `die_offset`. nullptr (logged, naming `file`) when libdw cannot
// read it. A skeleton unit's split unit comes from `split` (split_units.h); with none, only the
// skeleton is read. The tables' strings are stored in `pool`, which must outlive them. Not
// thread-safe for one `dwarf` (nor one `demangled`): the caller serializes.
class SplitUnits;
class StringPool;
std::unique_ptr<CuTables> BuildCuTables(Dwarf* dwarf, uint64_t die_offset, const std::string& file,
                                        SplitUnits* split, DemangledNames* demangled,
                                        StringPool* pool);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_CU_TABLES_H_
