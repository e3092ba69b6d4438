// Reading one unit's subprogram/inline tree and line table (unit_symbols.h).
#include "daemon/dwarf/unit_symbols.h"

#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/die_cursor.h"
#include "daemon/dwarf/errors.h"
#include "daemon/util/flat_map.h"

namespace jitsym::dwarf {
namespace {

constexpr uint32_t kNone = SymbolNode::kNone;
constexpr size_t kMaxNotes = 8;
// DIEs a name chain looks at: the node and 16 more, as libdw's dwarf_attr_integrate.
constexpr int kMaxChain = 17;

// Tags whose children never hold code (daemon/native/cu_tables.cc skips the same).
bool NoCodeInside(uint16_t tag) {
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

// The attributes a name chain reads of one DIE, as values (first of each name).
struct ChainAttrs {
  AttrValue linkage, mips, name, origin, spec;
  bool has_linkage = false, has_mips = false, has_name = false, has_origin = false,
       has_spec = false;

  // Takes `v` when it is one of them; true when it was.
  bool Take(const AttrValue& v) {
    switch (v.name) {
      case DW_AT_linkage_name:
        return Keep(v, &linkage, &has_linkage);
      case DW_AT_MIPS_linkage_name:
        return Keep(v, &mips, &has_mips);
      case DW_AT_name:
        return Keep(v, &name, &has_name);
      case DW_AT_abstract_origin:
        return Keep(v, &origin, &has_origin);
      case DW_AT_specification:
        return Keep(v, &spec, &has_spec);
      default:
        return false;
    }
  }
  static bool Keep(const AttrValue& v, AttrValue* slot, bool* has) {
    if (!*has) *slot = v;
    *has = true;
    return true;
  }
};

// One DIE of a chain, its strings resolved.
struct ChainDie {
  std::string_view linkage, mips, name;
  bool has_linkage = false, has_mips = false, has_name = false;
  std::optional<DieRef> next;
};

class Notes {
 public:
  explicit Notes(UnitSymbols* out) : out_(out) {}
  void Add(Error e) {
    ++out_->problems;
    if (out_->notes.size() < kMaxNotes) out_->notes.push_back(std::move(e));
  }

 private:
  UnitSymbols* out_;
};

// Names through abstract_origin/specification chains, each DIE decoded once (see the header).
class NameResolver {
 public:
  NameResolver(const Unit& unit, Budget& budget, Notes& notes)
      : unit_(unit), budget_(budget), notes_(notes) {}

  // The name of a node from its own attributes (read by the walk) and its chain.
  void Name(const ChainAttrs& own, SymbolNode* node) { NameFrom(Resolve(unit_, own), node); }

  // The name of the node whose DIE (of the unit read) is at `offset`, decoded again: for the
  // few nodes named only because a descendant has ranges (the walk kept their offsets only).
  void Name(uint64_t offset, SymbolNode* node) {
    DieCursor c(unit_, budget_);
    ChainAttrs own;
    Status s = c.Seek(offset);
    if (s.ok()) s = c.ForEachAttr([&own](const AttrValue& v) { own.Take(v); });
    if (!s.ok()) {
      notes_.Add(std::move(s).error());
      return;
    }
    Name(own, node);
  }

 private:
  void NameFrom(ChainDie first, SymbolNode* node) {
    const ChainDie* d = &first;
    const std::string_view* linkage = nullptr;
    const std::string_view* mips = nullptr;
    const std::string_view* name = nullptr;
    for (int step = 0; d != nullptr && step < kMaxChain; ++step) {
      if (d->has_linkage && linkage == nullptr) linkage = &d->linkage;
      if (d->has_mips && mips == nullptr) mips = &d->mips;
      if (d->has_name && name == nullptr) name = &d->name;
      if (!d->next || step + 1 == kMaxChain) break;
      d = Lookup(*d->next);
    }
    // A linkage name found wins even when empty (then the node has none), as in
    // daemon/native/cu_tables.cc.
    if (linkage == nullptr) linkage = mips;
    if (linkage != nullptr) {
      node->name = *linkage;
      node->linkage = !linkage->empty();
    } else if (name != nullptr) {
      node->name = *name;
    }
  }

  struct Key {
    const Context* context;
    uint64_t offset;
    bool types;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return MixBits((k.offset * 2 + k.types) ^ reinterpret_cast<uintptr_t>(k.context));
    }
  };

  ChainDie Resolve(const Unit& u, const ChainAttrs& a) {
    ChainDie d;
    auto str = [&](const AttrValue& v, std::string_view* out, bool* has) {
      Result<std::string_view> s = u.String(v);
      if (!s) {
        notes_.Add(std::move(s).error());
        return;
      }
      *out = *s;
      *has = true;
    };
    if (a.has_linkage) str(a.linkage, &d.linkage, &d.has_linkage);
    if (a.has_mips) str(a.mips, &d.mips, &d.has_mips);
    if (a.has_name) str(a.name, &d.name, &d.has_name);
    if (a.has_origin || a.has_spec) {
      Result<DieRef> r = u.Reference(a.has_origin ? a.origin : a.spec);
      if (r) {
        d.next = *r;
      } else {
        notes_.Add(std::move(r).error());
      }
    }
    return d;
  }

  // The unit holding `ref`, opened once per resolver.
  const Unit* UnitOf(const DieRef& ref) {
    if (ref.context == &unit_.context() && ref.types == unit_.header().in_types &&
        unit_.Holds(ref.offset)) {
      return &unit_;
    }
    const UnitHeader* h = ref.context->UnitContaining(ref.offset, ref.types);
    if (h == nullptr) {
      notes_.Add(Malformed(ref.types ? "types" : "info", ref.offset, "reference to no unit"));
      return nullptr;
    }
    const Key key{ref.context, h->offset, ref.types};
    auto it = units_.find(key);
    if (it == units_.end()) {
      // Units of the same (split) file share the skeleton's bases.
      const Unit* skeleton = ref.context == &unit_.context() ? unit_.skeleton() : nullptr;
      Result<Unit> u = Unit::Open(*ref.context, *h, budget_, skeleton);
      std::unique_ptr<Unit> opened;
      if (u) {
        opened = std::make_unique<Unit>(std::move(*u));
      } else {
        notes_.Add(std::move(u).error());
      }
      it = units_.emplace(key, std::move(opened)).first;
    }
    return it->second.get();
  }

  const ChainDie* Lookup(const DieRef& ref) {
    const Key key{ref.context, ref.offset, ref.types};
    if (const uint32_t* i = dies_.Find(key)) return *i == kNoDie ? nullptr : &die_store_[*i];
    uint32_t found = kNoDie;
    if (const Unit* u = UnitOf(ref); u != nullptr) {
      DieCursor c(*u, budget_);
      ChainAttrs a;
      Status s = c.Seek(ref.offset);
      if (s.ok()) s = c.ForEachAttr([&a](const AttrValue& v) { a.Take(v); });
      if (s.ok()) {
        found = static_cast<uint32_t>(die_store_.size());
        die_store_.push_back(Resolve(*u, a));
      } else {
        notes_.Add(std::move(s).error());
      }
    }
    dies_.Insert(key, found);
    return found == kNoDie ? nullptr : &die_store_[found];
  }

  const Unit& unit_;
  Budget& budget_;
  Notes& notes_;
  std::unordered_map<Key, std::unique_ptr<Unit>, KeyHash> units_;
  // The DIEs looked up, each once: their index in die_store_ (which never moves them), or
  // kNoDie for one that could not be read.
  static constexpr uint32_t kNoDie = UINT32_MAX;
  FlatMap32<Key, KeyHash> dies_;
  std::deque<ChainDie> die_store_;
};

// The node DIE's attributes the tree keeps.
struct NodeAttrs {
  AttrValue low, high, ranges, call_file, call_line, call_column;
  bool has_low = false, has_high = false, has_ranges = false, has_call_file = false,
       has_call_line = false, has_call_column = false;
  ChainAttrs chain;

  void Take(const AttrValue& v) {
    switch (v.name) {
      case DW_AT_low_pc:
        ChainAttrs::Keep(v, &low, &has_low);
        break;
      case DW_AT_high_pc:
        ChainAttrs::Keep(v, &high, &has_high);
        break;
      case DW_AT_ranges:
        ChainAttrs::Keep(v, &ranges, &has_ranges);
        break;
      case DW_AT_call_file:
        ChainAttrs::Keep(v, &call_file, &has_call_file);
        break;
      case DW_AT_call_line:
        ChainAttrs::Keep(v, &call_line, &has_call_line);
        break;
      case DW_AT_call_column:
        ChainAttrs::Keep(v, &call_column, &has_call_column);
        break;
      default:
        chain.Take(v);
        break;
    }
  }
};

// An unsigned constant as libdw's dwarf_formudata reads one.
bool Udata(const AttrValue& v, uint64_t* out) {
  if (!IsConstantForm(v.form) && v.form != DW_FORM_sec_offset) return false;
  *out = v.u;
  return true;
}

void ReadLines(const Unit& unit, UnitSymbols* out, Notes& notes) {
  // A split unit's rows are its skeleton's; its call files its own (.dwo) table's.
  const Unit& rows_unit = unit.skeleton() != nullptr ? *unit.skeleton() : unit;
  const std::optional<std::string_view> comp_dir =
      unit.has_comp_dir() ? std::optional(unit.comp_dir()) : std::nullopt;
  if (rows_unit.stmt_list()) {
    const uint64_t offset = *rows_unit.stmt_list() + rows_unit.header().share.line.offset;
    Result<LineTable> t =
        ReadLineTable(rows_unit.context(), offset, rows_unit.header().address_size, comp_dir);
    if (t) {
      out->lines = std::move(*t);
    } else {
      notes.Add(std::move(t).error());
    }
  }
  if (unit.skeleton() != nullptr && !unit.context().section(SectionId::kLine).empty()) {
    Result<LineTable> t = ReadLineTable(unit.context(), unit.header().share.line.offset,
                                        unit.header().address_size, comp_dir, true);
    if (t) {
      out->split_files = std::move(t->files);
    } else {
      notes.Add(std::move(t).error());
    }
  }
}

}  // namespace

Result<UnitSymbols> ReadUnitSymbols(const Unit& unit, Budget& budget,
                                    const SymbolOptions& options) {
  UnitSymbols out;
  Notes notes(&out);
  out.comp_dir = unit.comp_dir();
  out.has_comp_dir = unit.has_comp_dir();
  if (options.lines) ReadLines(unit, &out, notes);

  std::vector<uint32_t> enclosing;  // by depth: the nearest node at or above it
  std::vector<AddressRange> ranges;
  std::vector<bool> named;  // by node: named during the walk
  NameResolver names(unit, budget, notes);
  DieCursor c(unit, budget);
  for (;;) {
    Result<bool> more = c.Next();
    if (!more) return std::move(more).error();
    if (!*more) break;
    const Die& die = c.die();
    if (die.depth == 0) {
      enclosing.assign(1, kNone);
      continue;  // the unit DIE; its children follow
    }
    if (enclosing.size() <= die.depth) enclosing.resize(die.depth + 1, kNone);
    const uint32_t outer = enclosing[die.depth - 1];
    enclosing[die.depth] = outer;
    const uint16_t tag = die.tag();
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
      NodeAttrs a;
      if (Status s = c.ForEachAttr([&a](const AttrValue& v) { a.Take(v); }); !s.ok())
        return s.error();
      SymbolNode n;
      n.tag = tag;
      n.offset = die.offset;
      n.parent = tag == DW_TAG_subprogram ? kNone : outer;
      if (tag == DW_TAG_inlined_subroutine) {
        n.has_call_file = a.has_call_file && Udata(a.call_file, &n.call_file);
        if (a.has_call_line) Udata(a.call_line, &n.call_line);
        if (a.has_call_column) Udata(a.call_column, &n.call_column);
      }
      const uint32_t id = static_cast<uint32_t>(out.nodes.size());
      ranges.clear();
      if (a.has_ranges || a.has_low || a.has_high) {
        if (Status s = unit.PcRanges(a.has_low ? &a.low : nullptr, a.has_high ? &a.high : nullptr,
                                     a.has_ranges ? &a.ranges : nullptr, &ranges);
            !s.ok()) {
          notes.Add(std::move(s).error());
          ranges.clear();
        }
      }
      if (!ranges.empty()) n.low_pc = ranges.front().lo;
      const size_t ranges_before = out.ranges.size();
      for (const AddressRange& r : ranges) {
        if (r.hi > r.lo) out.ranges.push_back({r.lo, r.hi, id});
      }
      // A node with ranges is named now, from the attributes just read.
      const bool name_now = options.names && out.ranges.size() > ranges_before;
      if (name_now) names.Name(a.chain, &n);
      named.push_back(name_now);
      out.nodes.push_back(n);
      enclosing[die.depth] = id;
    } else if (NoCodeInside(tag) ||
               (outer == kNone && (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                                   tag == DW_TAG_union_type))) {
      // Classes outside any function hold declarations only (their members' code is in DIEs
      // of its own at namespace level); local ones may hold a lambda's operator().
      c.SkipChildren();
    }
    if (die.depth >= options.max_depth) c.SkipChildren();
  }
  if (options.names) {
    // Only nodes an address can reach are named: those with ranges (named above), and their
    // parents (a parent without ranges of its own is decoded again here: rare).
    std::vector<bool> used(out.nodes.size(), false);
    for (const SymbolRange& r : out.ranges) {
      for (uint32_t n = r.node; n != kNone && !used[n]; n = out.nodes[n].parent) used[n] = true;
    }
    for (size_t i = 0; i < out.nodes.size(); ++i) {
      if (used[i] && !named[i]) names.Name(out.nodes[i].offset, &out.nodes[i]);
    }
  }
  return out;
}

}  // namespace jitsym::dwarf
