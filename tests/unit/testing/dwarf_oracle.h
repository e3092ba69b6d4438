// The differential tests' common ground: what symbolization reads of each unit (its ranges, the
// subprogram/inline tree with names, call sites and pcs, the line rows with file names), read
// by libdw the way daemon/native/cu_tables.cc walks it, and by daemon/dwarf/, in one flat shape
// compared field by field.
#ifndef JITSYM_TESTS_UNIT_TESTING_DWARF_ORACLE_H_
#define JITSYM_TESTS_UNIT_TESTING_DWARF_ORACLE_H_

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/split_unit.h"
#include "daemon/dwarf/unit.h"
#include "daemon/dwarf/unit_symbols.h"
#include "tests/unit/testing/dwarf_files.h"

namespace jitsym::testing {

struct FlatNode {
  uint64_t offset = 0;  // from the unit DIE's (a package holds a unit elsewhere than its .dwo)
  int tag = 0;
  int64_t parent = -1;
  std::string name;  // for nodes an address reaches; "" otherwise
  std::string call_file;
  uint64_t call_line = 0, call_column = 0;
  uint64_t low_pc = 0;
  bool operator==(const FlatNode&) const = default;
};
struct FlatRange {
  uint64_t lo, hi;
  uint32_t node;
  bool operator==(const FlatRange&) const = default;
};
struct FlatRow {
  uint64_t addr;
  std::string file;
  uint32_t line, column;
  bool end;
  bool operator==(const FlatRow&) const = default;
};
struct FlatUnit {
  uint64_t offset = 0;  // of the unit DIE
  std::vector<std::pair<uint64_t, uint64_t>> unit_ranges;
  bool split_found = false;  // a skeleton's split unit was read
  std::vector<FlatNode> nodes;
  std::vector<FlatRange> ranges;
  std::vector<FlatRow> rows;
  std::string error;
};

inline std::ostream& operator<<(std::ostream& os, const FlatNode& n) {
  return os << "node@0x" << std::hex << n.offset << std::dec << " tag " << n.tag << " parent "
            << n.parent << " '" << n.name << "' call " << n.call_file << ":" << n.call_line << ":"
            << n.call_column << " low_pc 0x" << std::hex << n.low_pc << std::dec;
}
inline std::ostream& operator<<(std::ostream& os, const FlatRange& r) {
  return os << "[0x" << std::hex << r.lo << ", 0x" << r.hi << std::dec << ") node " << r.node;
}
inline std::ostream& operator<<(std::ostream& os, const FlatRow& r) {
  return os << "0x" << std::hex << r.addr << std::dec << " " << r.file << ":" << r.line << ":"
            << r.column << (r.end ? " end" : "");
}

// ---- libdw -------------------------------------------------------------------------------

inline const char* LibdwString(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

inline bool LibdwNoCode(int tag) {
  switch (tag) {
    case DW_TAG_formal_parameter:
    case DW_TAG_variable:
    case DW_TAG_member:
    case DW_TAG_enumeration_type:
    case DW_TAG_array_type:
    case DW_TAG_subroutine_type:
    case DW_TAG_template_type_parameter:
    case DW_TAG_template_value_parameter:
    case DW_TAG_GNU_template_parameter_pack:
    case DW_TAG_GNU_formal_parameter_pack:
    case DW_TAG_GNU_call_site:
    case DW_TAG_call_site:
    case DW_TAG_base_type:
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
    case DW_TAG_const_type:
    case DW_TAG_volatile_type:
    case DW_TAG_typedef:
      return true;
    default:
      return false;
  }
}

// The tree and rows of the unit whose DIE is `cudie` (a split unit's, for a skeleton).
inline void LibdwTree(Dwarf_Die* cudie, FlatUnit* out) {
  Dwarf_Lines* lines = nullptr;
  size_t nlines = 0;
  if (dwarf_getsrclines(cudie, &lines, &nlines) == 0) {
    for (size_t i = 0; i < nlines; ++i) {
      Dwarf_Line* line = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr;
      int lineno = 0, col = 0;
      bool end = false;
      if (line == nullptr || dwarf_lineaddr(line, &addr) != 0) continue;
      dwarf_lineno(line, &lineno);
      dwarf_linecol(line, &col);
      dwarf_lineendsequence(line, &end);
      const char* src = dwarf_linesrc(line, nullptr, nullptr);
      out->rows.push_back({addr, src ? src : "(none)", static_cast<uint32_t>(std::max(lineno, 0)),
                           static_cast<uint32_t>(std::max(col, 0)), end});
    }
  }
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0) files = nullptr;
  struct Item {
    Dwarf_Die die;
    int64_t node;
    int depth;
  };
  std::vector<Item> stack;
  std::vector<Dwarf_Die> node_die;
  Dwarf_Die child;
  if (dwarf_child(cudie, &child) == 0) stack.push_back({child, -1, 1});
  while (!stack.empty()) {
    Item item = stack.back();
    stack.pop_back();
    Dwarf_Die sibling;
    if (dwarf_siblingof(&item.die, &sibling) == 0)
      stack.push_back({sibling, item.node, item.depth});
    const int tag = dwarf_tag(&item.die);
    int64_t node = item.node;
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
      FlatNode n;
      n.offset = dwarf_dieoffset(&item.die) - dwarf_dieoffset(cudie);
      n.tag = tag;
      n.parent = tag == DW_TAG_subprogram ? -1 : item.node;
      if (tag == DW_TAG_inlined_subroutine) {
        Dwarf_Attribute a;
        Dwarf_Word v;
        if (dwarf_attr(&item.die, DW_AT_call_file, &a) && dwarf_formudata(&a, &v) == 0 &&
            files != nullptr && v < nfiles) {
          n.call_file = dwarf_filesrc(files, v, nullptr, nullptr);
        }
        if (dwarf_attr(&item.die, DW_AT_call_line, &a) && dwarf_formudata(&a, &v) == 0)
          n.call_line = v;
        if (dwarf_attr(&item.die, DW_AT_call_column, &a) && dwarf_formudata(&a, &v) == 0)
          n.call_column = v;
      }
      const uint32_t id = static_cast<uint32_t>(out->nodes.size());
      Dwarf_Addr base, lo, hi;
      ptrdiff_t off = 0;
      bool first = true;
      while ((off = dwarf_ranges(&item.die, off, &base, &lo, &hi)) > 0) {
        if (first) n.low_pc = lo;
        first = false;
        if (hi > lo) out->ranges.push_back({lo, hi, id});
      }
      out->nodes.push_back(n);
      node_die.push_back(item.die);
      node = id;
    } else if (LibdwNoCode(tag) ||
               (item.node < 0 && (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                                  tag == DW_TAG_union_type))) {
      continue;
    }
    if (item.depth < 512 && dwarf_haschildren(&item.die) && dwarf_child(&item.die, &child) == 0) {
      stack.push_back({child, node, item.depth + 1});
    }
  }
  // Preorder by DIE offset, as the walk of daemon/dwarf gives them (libdw's stack pops siblings
  // after children, the same order).
  std::vector<bool> used(out->nodes.size(), false);
  for (const FlatRange& r : out->ranges) {
    for (int64_t n = r.node; n >= 0 && !used[n]; n = out->nodes[n].parent) used[n] = true;
  }
  for (size_t i = 0; i < out->nodes.size(); ++i) {
    if (!used[i]) continue;
    const char* linkage = LibdwString(&node_die[i], DW_AT_linkage_name);
    if (linkage == nullptr) linkage = LibdwString(&node_die[i], DW_AT_MIPS_linkage_name);
    const char* raw = linkage ? linkage : LibdwString(&node_die[i], DW_AT_name);
    if (raw != nullptr) out->nodes[i].name = raw;
  }
}

// Every compile, partial and skeleton unit of `path` as libdw reads it (`alt`: the dwz file).
inline std::vector<FlatUnit> LibdwUnits(const std::string& path, const std::string& alt = "") {
  std::vector<FlatUnit> units;
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return units;
  Dwarf* dwarf = dwarf_begin(fd, DWARF_C_READ);
  int alt_fd = -1;
  Dwarf* alt_dwarf = nullptr;
  if (dwarf != nullptr && !alt.empty()) {
    alt_fd = ::open(alt.c_str(), O_RDONLY | O_CLOEXEC);
    alt_dwarf = dwarf_begin(alt_fd, DWARF_C_READ);
    if (alt_dwarf != nullptr) dwarf_setalt(dwarf, alt_dwarf);
  }
  Dwarf_CU* cu = nullptr;
  Dwarf_CU* next = nullptr;
  Dwarf_Half version;
  uint8_t unit_type;
  Dwarf_Die cudie;
  while (dwarf != nullptr &&
         dwarf_get_units(dwarf, cu, &next, &version, &unit_type, &cudie, nullptr) == 0) {
    cu = next;
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial && unit_type != DW_UT_skeleton) {
      continue;
    }
    FlatUnit u;
    u.offset = dwarf_dieoffset(&cudie);
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0)
      u.unit_ranges.push_back({lo, hi});
    Dwarf_Die die = cudie;
    if (unit_type == DW_UT_skeleton) {
      Dwarf_Die split;
      if (dwarf_cu_info(cudie.cu, nullptr, nullptr, nullptr, &split, nullptr, nullptr, nullptr) ==
              0 &&
          split.addr != nullptr) {
        die = split;
        u.split_found = true;
      }
    }
    LibdwTree(&die, &u);
    units.push_back(std::move(u));
  }
  if (dwarf != nullptr) dwarf_end(dwarf);
  if (alt_dwarf != nullptr) dwarf_end(alt_dwarf);
  if (alt_fd >= 0) ::close(alt_fd);
  ::close(fd);
  return units;
}

// ---- daemon/dwarf ------------------------------------------------------------------------

inline void FlattenSymbols(const dwarf::Unit& unit, const dwarf::UnitSymbols& s, FlatUnit* out) {
  const std::vector<std::string>* call_files = s.call_files();
  for (const dwarf::SymbolNode& n : s.nodes) {
    FlatNode f;
    f.offset = n.offset - unit.header().first_die;
    f.tag = n.tag;
    f.parent = n.parent == dwarf::SymbolNode::kNone ? int64_t{-1} : int64_t{n.parent};
    f.name = std::string(n.name);
    if (n.has_call_file && call_files != nullptr && n.call_file < call_files->size()) {
      f.call_file = (*call_files)[n.call_file];
    }
    f.call_line = n.call_line;
    f.call_column = n.call_column;
    f.low_pc = n.low_pc;
    out->nodes.push_back(f);
  }
  for (const dwarf::SymbolRange& r : s.ranges) out->ranges.push_back({r.lo, r.hi, r.node});
  if (s.lines) {
    for (const dwarf::LineRow& r : s.lines->rows) {
      out->rows.push_back({r.addr,
                           r.file < s.lines->files.size() ? s.lines->files[r.file] : "(none)",
                           r.line, r.column, r.end_sequence});
    }
  }
}

// Every compile, partial and skeleton unit of `m`'s main file as daemon/dwarf reads it.
inline std::vector<FlatUnit> OurUnits(DwarfModule& m) {
  std::vector<FlatUnit> units;
  if (m.main->context == nullptr) return units;
  const dwarf::Context& ctx = *m.main->context;
  for (const dwarf::UnitHeader& h : ctx.units()) {
    if (h.unit_type != dwarf::DW_UT_compile && h.unit_type != dwarf::DW_UT_partial &&
        h.unit_type != dwarf::DW_UT_skeleton) {
      continue;
    }
    FlatUnit u;
    u.offset = h.first_die;
    Result<dwarf::Unit> unit = dwarf::Unit::Open(ctx, h, m.budget);
    if (!unit) {
      u.error = unit.error().message;
      units.push_back(std::move(u));
      continue;
    }
    for (const dwarf::AddressRange& r : unit->unit_ranges()) u.unit_ranges.push_back({r.lo, r.hi});
    std::optional<dwarf::Unit> split;
    if (unit->unit_type() == dwarf::DW_UT_skeleton) {
      if (const dwarf::Context* sc = m.SplitContext(unit->comp_dir(), unit->dwo_name())) {
        Result<std::optional<dwarf::Unit>> s = dwarf::OpenSplitUnit(*unit, *sc, m.budget);
        if (!s) {
          u.error = s.error().message;
        } else if (*s) {
          split = std::move(**s);
          u.split_found = true;
        }
      }
    }
    Result<dwarf::UnitSymbols> symbols = dwarf::ReadUnitSymbols(split ? *split : *unit, m.budget);
    if (!symbols) {
      u.error = symbols.error().message;
    } else {
      FlattenSymbols(split ? *split : *unit, *symbols, &u);
    }
    units.push_back(std::move(u));
  }
  return units;
}

struct Comparison {
  size_t units = 0, nodes = 0, ranges = 0, rows = 0, split_units = 0;
  std::vector<std::string> differences;  // the first few
};

template <typename T>
void CompareLists(const std::vector<T>& ours, const std::vector<T>& theirs, const char* what,
                  const std::string& where, Comparison* c) {
  if (ours == theirs) return;
  size_t i = 0;
  while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
  std::ostringstream os;
  os << where << ": " << what << " differ (" << ours.size() << " ours, " << theirs.size()
     << " libdw's) at " << i;
  if (i < ours.size()) os << "\n  ours:  " << ours[i];
  if (i < theirs.size()) os << "\n  libdw: " << theirs[i];
  c->differences.push_back(os.str());
}

inline Comparison CompareUnits(const std::vector<FlatUnit>& ours,
                               const std::vector<FlatUnit>& theirs, const std::string& file) {
  Comparison c;
  if (ours.size() != theirs.size()) {
    c.differences.push_back(file + ": " + std::to_string(ours.size()) + " units, libdw " +
                            std::to_string(theirs.size()));
  }
  for (size_t i = 0; i < std::min(ours.size(), theirs.size()) && c.differences.size() < 5; ++i) {
    const FlatUnit& a = ours[i];
    const FlatUnit& b = theirs[i];
    std::ostringstream where;
    where << file << " unit DIE 0x" << std::hex << b.offset;
    if (!a.error.empty()) {
      c.differences.push_back(where.str() + ": ours failed: " + a.error);
      continue;
    }
    ++c.units;
    c.split_units += b.split_found;
    if (a.offset != b.offset) c.differences.push_back(where.str() + ": unit offsets differ");
    if (a.split_found != b.split_found) {
      c.differences.push_back(where.str() + ": split unit found by " +
                              (a.split_found ? "us only" : "libdw only"));
    }
    if (a.unit_ranges != b.unit_ranges)
      c.differences.push_back(where.str() + ": unit ranges differ");
    CompareLists(a.nodes, b.nodes, "nodes", where.str(), &c);
    CompareLists(a.ranges, b.ranges, "ranges", where.str(), &c);
    CompareLists(a.rows, b.rows, "rows", where.str(), &c);
    c.nodes += b.nodes.size();
    c.ranges += b.ranges.size();
    c.rows += b.rows.size();
  }
  return c;
}

}  // namespace jitsym::testing

#endif  // JITSYM_TESTS_UNIT_TESTING_DWARF_ORACLE_H_
