// Building one CU's tables from its DIEs and line program (cu_tables.h).
#include "daemon/native/cu_tables.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory_resource>
#include <new>
#include <utility>

#include "daemon/native/demangle.h"
#include "daemon/native/line_program.h"
#include "daemon/native/split_units.h"
#include "daemon/native/string_pool.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

constexpr int kMaxDieDepth = 512;
constexpr uint32_t kNone = CuTables::kNone;

// libdw's file names are directory + name; a relative directory is taken, as llvm-symbolizer
// does, relative to the compilation directory.
std::string AbsolutePath(const char* name, const char* comp_dir) {
  if (name == nullptr) return {};
  if (name[0] == '/' || comp_dir == nullptr || comp_dir[0] == '\0') return name;
  std::string out = comp_dir;
  if (out.back() != '/') out.push_back('/');
  out += name;
  return out;
}

// llvm-symbolizer's address-to-DIE map (DWARFUnit::updateAddressDieMap), rule for rule: ranges
// are added parent first; a range that starts inside an entry splits it (the entry keeps what is
// before and after), and the newest entry at an address replaces the one there. Its results on
// overlapping ranges that do not nest (as compilers sometimes emit) are llvm-symbolizer's too.
//
// A cold lookup adds a few million ranges; with a plain std::map that was an eighth of its CPU
// (a node allocated per entry, a search from the root per range, a walk to free them all).
// Here nodes come from an arena released at once, a range's entry is looked for first next to
// the last one added (a child starts inside its parent, usually right after it), and the map
// is never destroyed node by node: its entries are trivially destructible and live in the arena.
class AddressDieMap {
 public:
  using Entry = std::pair<uint64_t, uint32_t>;  // (end, node), keyed by start
  using Map = std::pmr::map<uint64_t, Entry>;

  AddressDieMap() : map_(new (storage_) Map(&arena_)), last_(map_->end()) {}
  AddressDieMap(const AddressDieMap&) = delete;
  AddressDieMap& operator=(const AddressDieMap&) = delete;
  // ~AddressDieMap: arena_ frees every node; map_'s destructor is not run (see above).

  void Add(uint64_t lo, uint64_t hi, uint32_t node) {
    const Map::iterator b = EntryAtOrBefore(lo);
    if (b != map_->end() && lo < b->second.first) {
      if (hi < b->second.first) map_->insert_or_assign(std::next(b), hi, b->second);
      if (lo > b->first) b->second.first = lo;
    }
    if (b != map_->end() && b->first == lo) {
      b->second = {hi, node};
      last_ = b;
    } else {
      last_ = map_->insert_or_assign(b == map_->end() ? map_->begin() : std::next(b), lo,
                                     Entry{hi, node});
    }
  }
  size_t size() const { return map_->size(); }
  const Map& entries() const { return *map_; }

 private:
  // The entry with the greatest start <= lo, or end().
  Map::iterator EntryAtOrBefore(uint64_t lo) {
    if (last_ != map_->end() && last_->first <= lo) {
      for (int step = 0; step < 4; ++step, ++last_) {
        const Map::iterator next = std::next(last_);
        if (next == map_->end() || next->first > lo) return last_;
      }
    }
    const Map::iterator after = map_->upper_bound(lo);
    return after == map_->begin() ? map_->end() : std::prev(after);
  }

  std::pmr::monotonic_buffer_resource arena_{size_t{64} << 10};
  alignas(Map) unsigned char storage_[sizeof(Map)];
  Map* map_;
  Map::iterator last_;
};

// libdw finds a DIE's abbreviation by its code in a hash table behind a read-write lock, for
// each DIE it hands out (elfutils 0.188): the lock alone was a seventh of a cold lookup's CPU.
// Within one unit a code always names the same abbreviation, so the walk keeps libdw's answer
// for each one-byte code (98% of DIEs in a large C++ binary) and sets it in the DIEs it meets
// (Dwarf_Die's public `abbrev` member); libdw then uses it instead of looking again.
class UnitAbbrevs {
 public:
  void Fill(Dwarf_Die* die) {
    if (die->abbrev != nullptr) return;
    // libdw hands out a DIE only when its first byte is inside the unit.
    const uint8_t code = *static_cast<const uint8_t*>(die->addr);
    if (code == 0 || code >= kCodes) return;
    if (known_[code] != nullptr) {
      die->abbrev = known_[code];
      return;
    }
    dwarf_tag(die);  // looks it up, and leaves it in die->abbrev
    known_[code] = die->abbrev;
  }

 private:
  static constexpr unsigned kCodes = 128;
  Dwarf_Abbrev* known_[kCodes] = {};
};

const char* AttrString(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

// What the walk reads of a subprogram or inlined-subroutine DIE, gathered in one pass over its
// attributes (dwarf_attr scans them from the start for each name asked: six scans per inlined
// DIE were a sixth of a cold lookup's CPU). The first attribute of each name counts, as for
// dwarf_attr.
struct NodeAttrs {
  Dwarf_Attribute low_pc{}, high_pc{}, call_file{}, call_line{}, call_column{};
  bool ranges = false;  // DW_AT_ranges is there

  static int Collect(Dwarf_Attribute* attr, void* arg) {
    auto* a = static_cast<NodeAttrs*>(arg);
    Dwarf_Attribute* slot = nullptr;
    switch (dwarf_whatattr(attr)) {
      case DW_AT_low_pc:
        slot = &a->low_pc;
        break;
      case DW_AT_high_pc:
        slot = &a->high_pc;
        break;
      case DW_AT_call_file:
        slot = &a->call_file;
        break;
      case DW_AT_call_line:
        slot = &a->call_line;
        break;
      case DW_AT_call_column:
        slot = &a->call_column;
        break;
      case DW_AT_ranges:
        a->ranges = true;
        break;
      default:
        break;
    }
    if (slot != nullptr && slot->code == 0) *slot = *attr;
    return DWARF_CB_OK;
  }
  static bool Udata(Dwarf_Attribute& attr, Dwarf_Word* out) {
    return attr.code != 0 && dwarf_formudata(&attr, out) == 0;
  }
  // dwarf_ranges' first answer for a DIE that is not a unit's: [low_pc, high_pc), high_pc an
  // address or an offset from low_pc. False when dwarf_ranges would look at DW_AT_ranges.
  bool Contiguous(Dwarf_Addr* lo, Dwarf_Addr* hi) {
    if (low_pc.code == 0 || high_pc.code == 0 || dwarf_formaddr(&low_pc, lo) != 0) return false;
    if (dwarf_formaddr(&high_pc, hi) == 0) return true;
    Dwarf_Word offset;
    if (dwarf_formudata(&high_pc, &offset) != 0) return false;
    *hi = *lo + offset;
    return true;
  }
};

// Tags whose children never hold code (skipped while walking a CU). Classes may: GCC puts a
// lambda's operator() inside its closure type.
bool NoCodeInside(int tag) {
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

// A unit's line program through line_program.h: false when it has none or leaves it to libdw.
bool ReadOwnLines(Dwarf* dwarf, Dwarf_Die* cudie, unsigned address_size, const char* comp_dir,
                  LineProgram* out) {
  Dwarf_Attribute attr;
  Dwarf_Word offset;
  if (dwarf_attr(cudie, DW_AT_stmt_list, &attr) == nullptr ||
      dwarf_formudata(&attr, &offset) != 0) {
    return false;
  }
  const LineSections sections = FindLineSections(dwarf_getelf(dwarf));
  return sections.found() && ReadLineProgram(sections, offset, address_size, comp_dir, out);
}

}  // namespace

size_t CuTables::Bytes() const {
  size_t n = sizeof(*this) + intervals.capacity() * sizeof(Interval) +
             nodes.capacity() * sizeof(Node) + rows.capacity() * sizeof(Row) +
             interval_index.Bytes() + row_index.Bytes();
  return n + strings.capacity() * sizeof(std::string_view) + missing.capacity();
}

std::unique_ptr<CuTables> BuildCuTables(Dwarf* dwarf, uint64_t die_offset, const std::string& file,
                                        SplitUnits* split, DemangledNames* demangled,
                                        StringPool* pool) {
  Dwarf_Die cudie;
  if (dwarf_offdie(dwarf, die_offset, &cudie) == nullptr) {
    JITSYM_LOG(kWarning, file, ": CU at offset ", die_offset, ": ", dwarf_errmsg(-1));
    return nullptr;
  }
  auto t = std::make_unique<CuTables>();
  const char* comp_dir = AttrString(&cudie, DW_AT_comp_dir);
  uint8_t unit_type = 0;
  uint8_t address_size = 0;
  bool walk_dies = true;
  if (dwarf_cu_info(cudie.cu, nullptr, &unit_type, nullptr, nullptr, nullptr, &address_size,
                    nullptr) == 0 &&
      unit_type == DW_UT_skeleton) {
    // The DIEs are the split unit's; libdw takes its line table (and, through the skeleton,
    // its addresses) from the skeleton. Without it, the skeleton's line table still places
    // addresses, and the symbol table names their functions.
    SplitUnit unit;
    if (split != nullptr) {
      unit = split->Find(&cudie);
    } else {
      unit.missing = file + ": split units not read (see the log)";
    }
    if (unit.found) {
      cudie = unit.die;
    } else {
      t->missing = std::move(unit.missing);
      walk_dies = false;
    }
  }
  std::vector<std::string> strings;                    // t->strings' texts, pooled at the end
  std::unordered_map<const char*, uint32_t> file_ids;  // libdw's strings -> ours
  const char* last_name = nullptr;                     // consecutive rows share their file
  uint32_t last_id = kNone;
  auto intern_path = [&](const char* name) -> uint32_t {
    if (name == nullptr) return kNone;
    if (name == last_name) return last_id;
    auto [it, inserted] = file_ids.try_emplace(name, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(strings.size());
      strings.push_back(AbsolutePath(name, comp_dir));
    }
    last_name = name;
    last_id = it->second;
    return last_id;
  };

  // Line table: read here when this unit's program is one line_program.h reads as libdw would,
  // else through libdw (a split unit's table is its skeleton's: libdw's too).
  LineProgram program;
  std::vector<uint32_t> program_file_ids;  // the program's file register -> our string
  const bool own_lines =
      unit_type != DW_UT_skeleton && ReadOwnLines(dwarf, &cudie, address_size, comp_dir, &program);
  auto program_file = [&](uint64_t file) -> uint32_t {
    if (file >= program.files.size()) return kNone;
    uint32_t& id = program_file_ids[file];
    if (id == kNone) {
      id = static_cast<uint32_t>(strings.size());
      strings.push_back(AbsolutePath(program.files[file].c_str(), comp_dir));
    }
    return id;
  };
  Dwarf_Lines* lines = nullptr;
  size_t nlines = 0;
  if (own_lines) {
    program_file_ids.assign(program.files.size(), kNone);
    t->rows = std::move(program.rows);
    for (CuTables::Row& row : t->rows) row.file = program_file(row.file);
  } else if (dwarf_getsrclines(&cudie, &lines, &nlines) == 0) {
    t->rows.reserve(nlines);
    for (size_t i = 0; i < nlines; ++i) {
      Dwarf_Line* line = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr;
      int lineno = 0, col = 0;
      bool end = false;
      if (line == nullptr || dwarf_lineaddr(line, &addr) != 0) continue;
      dwarf_lineno(line, &lineno);
      dwarf_linecol(line, &col);
      dwarf_lineendsequence(line, &end);
      t->rows.push_back({addr, intern_path(dwarf_linesrc(line, nullptr, nullptr)),
                         static_cast<uint32_t>(std::max(lineno, 0)),
                         static_cast<uint32_t>(std::max(col, 0)), end});
    }
  }
  // In libdw's order either way (line_program.h); checked, to be sure.
  if (!std::is_sorted(t->rows.begin(), t->rows.end(), RowBefore)) {
    std::stable_sort(t->rows.begin(), t->rows.end(), RowBefore);
  }
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (!own_lines && dwarf_getsrcfiles(&cudie, &files, &nfiles) != 0) files = nullptr;

  // Subprogram and inlined-subroutine DIEs, walked in preorder; each one's ranges are laid over
  // its parent's as llvm-symbolizer's address-to-DIE map does (a child splits its parent's
  // range), so that an address maps to the deepest DIE covering it.
  AddressDieMap addr_map;
  std::vector<Dwarf_Die> node_die;  // the nodes' DIEs (names are resolved at the end)
  struct Item {
    Dwarf_Die die;
    uint32_t node;  // the nearest enclosing subprogram/inlined node
    int depth;
  };
  std::vector<Item> stack;
  UnitAbbrevs abbrevs;
  {
    Dwarf_Die child;
    if (walk_dies && dwarf_child(&cudie, &child) == 0) {
      abbrevs.Fill(&child);
      stack.push_back({child, kNone, 1});
    }
  }
  // Each stack entry stands for a DIE and, through dwarf_siblingof, its following siblings.
  while (!stack.empty()) {
    Item item = stack.back();
    stack.pop_back();
    Dwarf_Die sibling;
    if (dwarf_siblingof(&item.die, &sibling) == 0) {
      abbrevs.Fill(&sibling);
      stack.push_back({sibling, item.node, item.depth});
    }
    const int tag = dwarf_tag(&item.die);
    uint32_t node = item.node;
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
      CuTables::Node n{};
      n.parent = tag == DW_TAG_subprogram ? kNone : item.node;
      n.name = kNone;
      n.call_file = kNone;
      n.low_pc = 0;
      NodeAttrs attrs;
      dwarf_getattrs(&item.die, NodeAttrs::Collect, &attrs, 0);
      if (tag == DW_TAG_inlined_subroutine) {
        Dwarf_Word v;
        if (NodeAttrs::Udata(attrs.call_file, &v)) {
          if (own_lines) {
            n.call_file = program_file(v);
          } else if (files != nullptr && v < nfiles) {
            n.call_file = intern_path(dwarf_filesrc(files, v, nullptr, nullptr));
          }
        }
        if (NodeAttrs::Udata(attrs.call_line, &v)) n.call_line = static_cast<uint32_t>(v);
        if (NodeAttrs::Udata(attrs.call_column, &v)) n.call_column = static_cast<uint32_t>(v);
      }
      Dwarf_Addr base, lo, hi;
      const uint32_t id = static_cast<uint32_t>(t->nodes.size());
      if (attrs.Contiguous(&lo, &hi)) {
        n.low_pc = lo;
        if (hi > lo) addr_map.Add(lo, hi, id);
      } else if (attrs.ranges || attrs.low_pc.code != 0 || attrs.high_pc.code != 0) {
        ptrdiff_t off = 0;
        bool first = true;
        int guard = 0;
        while ((off = dwarf_ranges(&item.die, off, &base, &lo, &hi)) > 0 && ++guard < 65536) {
          if (first) n.low_pc = lo;
          first = false;
          if (hi > lo) addr_map.Add(lo, hi, id);
        }
      }
      t->nodes.push_back(n);
      node_die.push_back(item.die);
      node = id;
    } else if (NoCodeInside(tag)) {
      continue;
    } else if (item.node == kNone && (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                                      tag == DW_TAG_union_type)) {
      // A class outside any function holds declarations only: GCC and clang put the code of
      // its member functions (lambdas' included) in DIEs of their own at namespace level,
      // which name the declaration (DW_AT_specification). Classes local to a function do
      // hold code (a lambda's operator() under its closure type) and are walked. C++ headers
      // make these subtrees most of a CU's DIEs: skipping them is a sixth of a cold batch.
      continue;
    }
    Dwarf_Die child;
    if (item.depth < kMaxDieDepth && dwarf_haschildren(&item.die) &&
        dwarf_child(&item.die, &child) == 0) {
      abbrevs.Fill(&child);
      stack.push_back({child, node, item.depth + 1});
    }
    if (stack.size() > (1u << 20)) break;
  }
  t->intervals.reserve(addr_map.size());
  std::vector<bool> used(t->nodes.size(), false);
  for (const auto& [lo, v] : addr_map.entries()) {
    t->intervals.push_back({lo, v.first, v.second});
    for (uint32_t n = v.second; n != kNone && !used[n]; n = t->nodes[n].parent) used[n] = true;
  }
  // Names: the linkage name (through abstract origins and specifications) demangled, else the
  // plain name, as llvm-symbolizer chooses; only for the nodes an address can reach.
  // .debug_str is shared by all CUs, so the same name is the same pointer: demangled once per
  // module per handle (DemangledNames), interned once per CU.
  std::unordered_map<const char*, uint32_t> name_ids;
  for (size_t i = 0; i < t->nodes.size(); ++i) {
    if (!used[i]) continue;
    Dwarf_Die& die = node_die[i];
    const char* linkage = AttrString(&die, DW_AT_linkage_name);
    if (linkage == nullptr) linkage = AttrString(&die, DW_AT_MIPS_linkage_name);
    const char* raw = linkage ? linkage : AttrString(&die, DW_AT_name);
    if (raw == nullptr || raw[0] == '\0') continue;
    auto [it, inserted] = name_ids.try_emplace(raw, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(strings.size());
      if (!linkage) {
        strings.emplace_back(raw);
      } else {
        auto [d, fresh] = demangled->names.try_emplace(raw);
        if (fresh) d->second = Demangle(raw, demangled->budget);
        strings.push_back(d->second);
      }
    }
    t->nodes[i].name = it->second;
  }
  pool->InternAll(strings, &t->strings);
  t->intervals.shrink_to_fit();
  {
    std::vector<uint64_t> keys(t->intervals.size());
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = t->intervals[i].lo;
    t->interval_index.Build(std::move(keys));
    keys.resize(t->rows.size());
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = t->rows[i].addr;
    t->row_index.Build(std::move(keys));
  }
  t->nodes.shrink_to_fit();
  t->rows.shrink_to_fit();
  return t;
}

}  // namespace jitsym::native
