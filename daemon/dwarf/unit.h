// One unit opened for reading (LLVM's DWARFUnit): its header, its abbreviation table, and what
// its unit DIE says every other read needs: the bases of its indexed strings, addresses and
// range lists, its base address, its name, compilation directory and line program. A split
// unit is opened with its skeleton (split_unit.h), from which it takes its address base, its
// GNU ranges base and its base address, as DWARF 5 section 3.1.3 says.
//
// Values read by the DIE cursor (die_cursor.h) are resolved here: strings (each checked to end
// inside its section), addresses, references (to a DIE of this unit, of another unit of the
// file, of a type unit, or of the supplementary file), and range lists (ranges.h).
#ifndef JITSYM_DAEMON_DWARF_UNIT_H_
#define JITSYM_DAEMON_DWARF_UNIT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "daemon/dwarf/abbrev.h"
#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/context.h"
#include "daemon/dwarf/form.h"
#include "daemon/dwarf/unit_header.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

// Where a reference points: a DIE at `offset` of a context's .debug_info (or .debug_types).
struct DieRef {
  const Context* context = nullptr;
  uint64_t offset = 0;
  bool types = false;
};

struct AddressRange {
  uint64_t lo = 0, hi = 0;
  bool operator==(const AddressRange&) const = default;
};

class Unit {
 public:
  // Opens the unit `header` of `context` (a header of context.units()): reads its abbreviation
  // table and its unit DIE. A split unit needs its skeleton (else its indexed addresses and
  // ranges cannot be read). The skeleton must outlive the unit. With `unit_die_only`, only the
  // abbreviations up to the unit DIE's are read (not shared through the context): enough for
  // the unit's name, type, ranges and bases, not for walking its DIEs.
  static Result<Unit> Open(const Context& context, const UnitHeader& header, Budget& budget,
                           const Unit* skeleton = nullptr, bool unit_die_only = false);

  const Context& context() const { return *ctx_; }
  const UnitHeader& header() const { return h_; }
  const AbbrevTable& abbrevs() const { return *abbrevs_; }
  FormParams params() const { return {h_.version, h_.address_size, h_.offset_size}; }
  // The section of the unit's DIEs, its name in messages.
  std::string_view info() const { return info_; }
  std::string_view info_name() const { return h_.in_types ? "types" : "info"; }
  ByteOrder order() const { return ctx_->order(); }

  // DW_UT_*: a DWARF 4 compile unit with DW_AT_GNU_dwo_id is a skeleton (GNU split DWARF).
  uint8_t unit_type() const { return unit_type_; }
  uint16_t unit_tag() const { return unit_tag_; }
  bool has_children() const { return has_children_; }
  std::optional<uint64_t> dwo_id() const { return dwo_id_; }
  const Unit* skeleton() const { return skeleton_; }

  // The unit DIE's strings (empty when absent or unreadable).
  std::string_view name() const { return name_; }
  std::string_view comp_dir() const { return comp_dir_; }
  bool has_comp_dir() const { return has_comp_dir_; }
  std::string_view dwo_name() const { return dwo_name_; }
  std::optional<uint64_t> stmt_list() const { return stmt_list_; }
  // DW_AT_low_pc of the unit DIE (the skeleton's for a split unit), the base of its ranges.
  uint64_t base_address() const { return base_address_; }
  // The unit DIE's own address ranges (low/high pc, or DW_AT_ranges): what CU lookups use.
  // Empty ranges are kept.
  const std::vector<AddressRange>& unit_ranges() const { return unit_ranges_; }

  // Resolving values read from this unit's DIEs.
  Result<std::string_view> String(const AttrValue& v) const;
  Result<uint64_t> Address(const AttrValue& v) const;
  Result<uint64_t> IndexedAddress(uint64_t index) const;
  Result<DieRef> Reference(const AttrValue& v) const;
  // The ranges DW_AT_ranges `v` names (an offset or DW_FORM_rnglistx), appended to `out`
  // (ranges.h). Empty ranges are kept, as written.
  Status Ranges(const AttrValue& v, std::vector<AddressRange>* out) const;
  // A DIE's pc ranges from its attributes as libdw's dwarf_ranges gives them: [low, high) when
  // both are there (high an address or an offset from low), else DW_AT_ranges' list.
  Status PcRanges(const AttrValue* low, const AttrValue* high, const AttrValue* ranges,
                  std::vector<AddressRange>* out) const;

  // Whether `offset` (of info()) is a DIE offset inside this unit.
  bool Holds(uint64_t offset) const { return offset >= h_.first_die && offset < h_.end; }

 private:
  Unit() = default;
  Status ReadUnitDie(Budget& budget);

  const Context* ctx_ = nullptr;
  const Unit* skeleton_ = nullptr;
  UnitHeader h_;
  std::string_view info_;
  std::shared_ptr<const AbbrevTable> abbrevs_;
  uint8_t unit_type_ = 0;
  uint16_t unit_tag_ = 0;
  bool has_children_ = false;
  std::optional<uint64_t> dwo_id_;
  std::string_view name_, comp_dir_, dwo_name_;
  bool has_comp_dir_ = false;
  std::optional<uint64_t> stmt_list_;
  uint64_t base_address_ = 0;
  std::vector<AddressRange> unit_ranges_;
  // Bases, absolute in their sections (a package's share included).
  uint64_t str_offsets_base_ = 0;
  uint64_t addr_base_ = 0;
  uint64_t rnglists_base_ = 0;
  uint64_t ranges_base_ = 0;      // added to this unit's DW_AT_ranges offsets (a split unit's
                                  // skeleton's DW_AT_GNU_ranges_base, GNU split DWARF 4)
  uint64_t gnu_ranges_base_ = 0;  // this unit's own DW_AT_GNU_ranges_base (for its split unit)
  bool has_rnglists_base_ = false;
};

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_UNIT_H_
