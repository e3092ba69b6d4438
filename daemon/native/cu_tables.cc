// Building one CU's tables from what daemon/dwarf/ read of it (cu_tables.h).
#include "daemon/native/cu_tables.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <memory_resource>
#include <new>
#include <utility>

#include "daemon/native/demangle.h"
#include "daemon/native/string_pool.h"
#include "daemon/util/flat_map.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

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

// libdw's order of line rows: by address, an end_sequence row before others at its address,
// else as the program wrote them (dwarf::RowBefore, for our rows).
bool RowBefore(const CuTables::Row& a, const CuTables::Row& b) {
  return a.addr != b.addr ? a.addr < b.addr : a.end_sequence > b.end_sequence;
}

}  // namespace

size_t CuTables::Bytes() const {
  size_t n = sizeof(*this) + intervals.capacity() * sizeof(Interval) +
             nodes.capacity() * sizeof(Node) + rows.capacity() * sizeof(Row) +
             interval_index.Bytes() + row_index.Bytes();
  return n + strings.capacity() * sizeof(std::string_view) + missing.capacity();
}

std::unique_ptr<CuTables> BuildCuTables(const dwarf::UnitSymbols& symbols,
                                        std::string_view comp_dir, std::string missing,
                                        DemangledNames* demangled, StringPool* pool) {
  auto t = std::make_unique<CuTables>();
  t->missing = std::move(missing);
  const std::string comp(comp_dir);
  // t->strings' texts, pooled at the end: views of the unit's sections and of `demangled`'s
  // names, and of the paths made here.
  std::vector<std::string_view> strings;
  std::deque<std::string> paths;
  // A file table's entries -> our strings, made once each.
  auto table_ids = [&](const std::vector<std::string>* files) {
    std::vector<uint32_t> ids(files != nullptr ? files->size() : 0, kNone);
    return ids;
  };
  auto intern_file = [&](const std::vector<std::string>& files, std::vector<uint32_t>& ids,
                         uint64_t file) -> uint32_t {
    if (file >= files.size()) return kNone;
    uint32_t& id = ids[file];
    if (id == kNone) {
      id = static_cast<uint32_t>(strings.size());
      strings.push_back(paths.emplace_back(AbsolutePath(files[file].c_str(), comp.c_str())));
    }
    return id;
  };

  if (symbols.lines) {
    const dwarf::LineTable& lines = *symbols.lines;
    std::vector<uint32_t> ids = table_ids(&lines.files);
    t->rows.reserve(lines.rows.size());
    for (const dwarf::LineRow& r : lines.rows) {
      t->rows.push_back(
          {r.addr, intern_file(lines.files, ids, r.file), r.line, r.column, r.end_sequence});
    }
    // In libdw's order (line_table.h); checked, to be sure.
    if (!std::is_sorted(t->rows.begin(), t->rows.end(), RowBefore)) {
      std::stable_sort(t->rows.begin(), t->rows.end(), RowBefore);
    }
  }

  // The subprogram and inlined-subroutine tree; each node's ranges are laid over its parent's
  // as llvm-symbolizer's address-to-DIE map does (a child splits its parent's range), so that
  // an address maps to the deepest node covering it.
  const std::vector<std::string>* call_files = symbols.call_files();
  std::vector<uint32_t> call_ids = table_ids(call_files);
  t->nodes.reserve(symbols.nodes.size());
  for (const dwarf::SymbolNode& s : symbols.nodes) {
    CuTables::Node n{};
    n.parent = s.parent == dwarf::SymbolNode::kNone ? kNone : s.parent;
    n.name = kNone;
    n.call_file = s.has_call_file && call_files != nullptr
                      ? intern_file(*call_files, call_ids, s.call_file)
                      : kNone;
    n.call_line = static_cast<uint32_t>(s.call_line);
    n.call_column = static_cast<uint32_t>(s.call_column);
    n.low_pc = s.low_pc;
    t->nodes.push_back(n);
  }
  AddressDieMap addr_map;
  for (const dwarf::SymbolRange& r : symbols.ranges) addr_map.Add(r.lo, r.hi, r.node);
  t->intervals.reserve(addr_map.size());
  std::vector<bool> used(t->nodes.size(), false);
  for (const auto& [lo, v] : addr_map.entries()) {
    t->intervals.push_back({lo, v.first, v.second});
    for (uint32_t n = v.second; n != kNone && !used[n]; n = t->nodes[n].parent) used[n] = true;
  }
  // Names: the linkage name (through abstract origins and specifications) demangled, else the
  // plain name, as llvm-symbolizer chooses; only for the nodes an address can reach. A string
  // of .debug_str is one pointer for all CUs: demangled once per module per thread
  // (DemangledNames), interned once per CU.
  FlatMap32<const char*> name_ids(t->nodes.size() / 2);
  for (size_t i = 0; i < t->nodes.size(); ++i) {
    const dwarf::SymbolNode& s = symbols.nodes[i];
    if (!used[i] || s.name.empty()) continue;
    if (const uint32_t* id = name_ids.Find(s.name.data())) {
      t->nodes[i].name = *id;
      continue;
    }
    const uint32_t id = static_cast<uint32_t>(strings.size());
    name_ids.Insert(s.name.data(), id);
    if (!s.linkage) {
      strings.push_back(s.name);
    } else {
      auto [d, fresh] = demangled->names.try_emplace(s.name.data());
      if (fresh) d->second = Demangle(s.name, demangled->budget);
      strings.push_back(d->second);
    }
    t->nodes[i].name = id;
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
