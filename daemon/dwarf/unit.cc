// Opening a unit and resolving its values (unit.h). Range lists are in ranges.cc.
#include "daemon/dwarf/unit.h"

#include <algorithm>
#include <string>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/die_cursor.h"
#include "daemon/dwarf/errors.h"
#include "daemon/util/byte_reader.h"

namespace jitsym::dwarf {

Result<Unit> Unit::Open(const Context& context, const UnitHeader& header, Budget& budget,
                        const Unit* skeleton, bool unit_die_only) {
  Unit u;
  u.ctx_ = &context;
  u.h_ = header;
  u.skeleton_ = skeleton;
  u.info_ = context.section(header.in_types ? SectionId::kTypes : SectionId::kInfo);
  uint64_t abbrev_offset = header.abbrev_offset;
  if (header.share.abbrev.present) {
    if (abbrev_offset >= header.share.abbrev.size) {
      return Malformed(u.info_name(), header.offset,
                       "abbreviation offset past the unit's share of the package");
    }
    abbrev_offset += header.share.abbrev.offset;
  }
  if (unit_die_only) {
    // The unit DIE's code, then the table up to it.
    ByteReader r(u.info_.substr(std::min<uint64_t>(header.first_die, u.info_.size())),
                 context.order());
    const uint64_t code = r.Uleb();
    if (!r.ok()) return Malformed(u.info_name(), header.first_die, "unit DIE cut short");
    // The entry of that code found by skipping the others (GCC puts the unit's last), in at
    // most the table's first 64 KiB per unit (however many units name one table), and read
    // alone; a code further in, or a table that does not parse, is read through the shared
    // table below.
    const std::string_view section = context.section(SectionId::kAbbrev);
    if (abbrev_offset < section.size()) {
      ByteReader a(section.substr(abbrev_offset, 64 << 10), context.order());
      for (;;) {
        const size_t at = a.pos();
        const uint64_t c = a.Uleb();
        if (!a.ok() || c == 0) break;
        if (c == code) {
          Result<AbbrevTable> t =
              AbbrevTable::Read(section, abbrev_offset + at, u.params(), context.order(), code);
          if (t) u.abbrevs_ = std::make_shared<const AbbrevTable>(std::move(*t));
          break;
        }
        a.Uleb();  // tag
        a.U8();    // children
        for (uint64_t name = 1, form = 1; a.ok() && (name != 0 || form != 0);) {
          name = a.Uleb();
          form = a.Uleb();
          if (form == DW_FORM_implicit_const) a.Sleb();
        }
        if (!a.ok()) break;
      }
    }
  }
  if (u.abbrevs_ == nullptr) {
    Result<std::shared_ptr<const AbbrevTable>> abbrevs = context.Abbrevs(abbrev_offset, u.params());
    if (!abbrevs) return std::move(abbrevs).error();
    u.abbrevs_ = std::move(*abbrevs);
  }
  if (Status s = u.ReadUnitDie(budget); !s.ok()) return std::move(s).error();
  return u;
}

Status Unit::ReadUnitDie(Budget& budget) {
  DieCursor c(*this, budget);
  Result<bool> found = c.Next();
  if (!found) return std::move(found).error();
  if (!*found) return Malformed(info_name(), h_.offset, "unit without a unit DIE");
  unit_tag_ = c.die().tag();
  has_children_ = c.die().has_children();
  switch (unit_tag_) {
    case DW_TAG_compile_unit:
    case DW_TAG_partial_unit:
    case DW_TAG_type_unit:
    case DW_TAG_skeleton_unit:
      break;
    default:
      return Malformed(info_name(), c.die().offset,
                       "unit DIE with tag " + Hex(unit_tag_) + ", not a unit's");
  }
  AttrValue name, comp_dir, low, high, ranges, dwo_name;
  bool has_name = false, has_low = false, has_high = false, has_ranges = false,
       has_dwo_name = false;
  std::optional<uint64_t> str_offsets_base, addr_base, rnglists_base;
  if (Status s = c.ForEachAttr([&](const AttrValue& v) {
        switch (v.name) {
          case DW_AT_name:
            if (!has_name) name = v;
            has_name = true;
            break;
          case DW_AT_comp_dir:
            if (!has_comp_dir_) comp_dir = v;
            has_comp_dir_ = true;
            break;
          case DW_AT_low_pc:
            if (!has_low) low = v;
            has_low = true;
            break;
          case DW_AT_high_pc:
            if (!has_high) high = v;
            has_high = true;
            break;
          case DW_AT_ranges:
            if (!has_ranges) ranges = v;
            has_ranges = true;
            break;
          case DW_AT_stmt_list:
            if (!stmt_list_) stmt_list_ = v.u;
            break;
          case DW_AT_str_offsets_base:
            if (!str_offsets_base) str_offsets_base = v.u;
            break;
          case DW_AT_addr_base:
          case DW_AT_GNU_addr_base:
            if (!addr_base) addr_base = v.u;
            break;
          case DW_AT_rnglists_base:
            if (!rnglists_base) rnglists_base = v.u;
            break;
          case DW_AT_GNU_ranges_base:
            gnu_ranges_base_ = v.u;
            break;
          case DW_AT_dwo_name:
          case DW_AT_GNU_dwo_name:
            if (!has_dwo_name) dwo_name = v;
            has_dwo_name = true;
            break;
          case DW_AT_GNU_dwo_id:
            if (!dwo_id_) dwo_id_ = v.u;
            break;
          default:
            break;
        }
      });
      !s.ok()) {
    return s;
  }
  if (h_.has_dwo_id) dwo_id_ = h_.dwo_id;
  unit_type_ = h_.unit_type;
  if (h_.version < 5 && unit_type_ == DW_UT_compile && dwo_id_) unit_type_ = DW_UT_skeleton;
  const uint64_t header_size = h_.offset_size == 8 ? 16 : 8;  // of str_offsets and addr tables
  const bool split = unit_type_ == DW_UT_split_compile || unit_type_ == DW_UT_split_type;
  // Indexed strings: the unit's base, else (a split unit's, or a producer's omission) just
  // past the table's header at the start of the unit's share of the section.
  str_offsets_base_ = h_.share.str_offsets.offset + (str_offsets_base  ? *str_offsets_base
                                                     : h_.version >= 5 ? header_size
                                                                       : 0);
  if (skeleton_ != nullptr) {
    addr_base_ = skeleton_->addr_base_;
    ranges_base_ = skeleton_->gnu_ranges_base_;
    base_address_ = skeleton_->base_address_;
  } else {
    addr_base_ = addr_base ? *addr_base : h_.version >= 5 ? header_size : 0;
  }
  has_rnglists_base_ = rnglists_base.has_value() || split;
  rnglists_base_ = h_.share.rnglists.offset + (rnglists_base         ? *rnglists_base
                                               : h_.offset_size == 8 ? 20
                                                                     : 12);
  if (has_low && skeleton_ == nullptr) {
    Result<uint64_t> a = Address(low);
    if (!a) return std::move(a).error();
    base_address_ = *a;
  }
  if (has_name) {
    Result<std::string_view> s = String(name);
    if (!s) return std::move(s).error();
    name_ = *s;
  }
  if (has_comp_dir_) {
    Result<std::string_view> s = String(comp_dir);
    if (!s) return std::move(s).error();
    comp_dir_ = *s;
  } else if (skeleton_ != nullptr && skeleton_->has_comp_dir_) {
    comp_dir_ = skeleton_->comp_dir_;
    has_comp_dir_ = true;
  }
  if (has_dwo_name) {
    Result<std::string_view> s = String(dwo_name);
    if (!s) return std::move(s).error();
    dwo_name_ = *s;
  }
  return PcRanges(has_low ? &low : nullptr, has_high ? &high : nullptr,
                  has_ranges ? &ranges : nullptr, &unit_ranges_);
}

Result<std::string_view> Unit::String(const AttrValue& v) const {
  switch (v.form) {
    case DW_FORM_string:
      return v.bytes;
    case DW_FORM_strp:
      return ctx_->StringAt(SectionId::kStr, v.u);
    case DW_FORM_line_strp:
      return ctx_->StringAt(SectionId::kLineStr, v.u);
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_strp_alt:
      if (ctx_->supplementary() == nullptr) {
        return DwarfError(ErrorKind::kUnsupported, "str", v.u,
                          "string of the supplementary file, which is not there");
      }
      return ctx_->supplementary()->StringAt(SectionId::kStr, v.u);
    case DW_FORM_strx:
    case DW_FORM_strx1:
    case DW_FORM_strx2:
    case DW_FORM_strx3:
    case DW_FORM_strx4:
    case DW_FORM_GNU_str_index: {
      const std::string_view offsets = ctx_->section(SectionId::kStrOffsets);
      const std::optional<uint64_t> rel = CheckedMul(v.u, h_.offset_size);
      const std::optional<uint64_t> at = rel ? CheckedAdd(str_offsets_base_, *rel) : std::nullopt;
      uint64_t limit = offsets.size();
      if (h_.share.str_offsets.present) {
        limit = std::min(limit, h_.share.str_offsets.offset + h_.share.str_offsets.size);
      }
      if (!at || *at > limit || limit - *at < h_.offset_size) {
        return Malformed("str_offsets", str_offsets_base_,
                         "string index " + std::to_string(v.u) + " past the table's end");
      }
      ByteReader r(offsets.substr(*at, h_.offset_size), order());
      return ctx_->StringAt(SectionId::kStr, r.Word(h_.offset_size));
    }
    default:
      return Malformed(info_name(), h_.offset, "DW_FORM " + Hex(v.form) + " is not a string's");
  }
}

Result<uint64_t> Unit::Address(const AttrValue& v) const {
  switch (v.form) {
    case DW_FORM_addr:
      return v.u;
    case DW_FORM_addrx:
    case DW_FORM_addrx1:
    case DW_FORM_addrx2:
    case DW_FORM_addrx3:
    case DW_FORM_addrx4:
    case DW_FORM_GNU_addr_index:
      return IndexedAddress(v.u);
    default:
      return Malformed(info_name(), h_.offset, "DW_FORM " + Hex(v.form) + " is not an address's");
  }
}

Result<uint64_t> Unit::IndexedAddress(uint64_t index) const {
  // A split unit's addresses are in its skeleton's file.
  const Context& where = skeleton_ != nullptr ? skeleton_->context() : *ctx_;
  const std::string_view addr = where.section(SectionId::kAddr);
  const std::optional<uint64_t> rel = CheckedMul(index, h_.address_size);
  const std::optional<uint64_t> at = rel ? CheckedAdd(addr_base_, *rel) : std::nullopt;
  if (!at || *at > addr.size() || addr.size() - *at < h_.address_size) {
    return Malformed("addr", addr_base_,
                     "address index " + std::to_string(index) + " past the section's end");
  }
  ByteReader r(addr.substr(*at, h_.address_size), order());
  return r.Word(h_.address_size);
}

Result<DieRef> Unit::Reference(const AttrValue& v) const {
  switch (v.form) {
    case DW_FORM_ref1:
    case DW_FORM_ref2:
    case DW_FORM_ref4:
    case DW_FORM_ref8:
    case DW_FORM_ref_udata: {
      const std::optional<uint64_t> at = CheckedAdd(h_.offset, v.u);
      if (!at || !Holds(*at)) {
        return Malformed(info_name(), h_.offset,
                         "reference " + Hex(v.u) + " outside its unit's DIEs");
      }
      return DieRef{ctx_, *at, h_.in_types};
    }
    case DW_FORM_ref_addr:
      return DieRef{ctx_, v.u, false};
    case DW_FORM_ref_sig8: {
      const UnitHeader* tu = ctx_->TypeUnit(v.u);
      if (tu == nullptr) {
        return DwarfError(ErrorKind::kUnsupported, info_name(), h_.offset,
                          "no type unit of signature " + Hex(v.u));
      }
      return DieRef{ctx_, tu->offset + tu->type_offset, tu->in_types};
    }
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_ref_sup4:
    case DW_FORM_ref_sup8:
      if (ctx_->supplementary() == nullptr) {
        return DwarfError(ErrorKind::kUnsupported, info_name(), h_.offset,
                          "DIE of the supplementary file, which is not there");
      }
      return DieRef{ctx_->supplementary(), v.u, false};
    default:
      return Malformed(info_name(), h_.offset, "DW_FORM " + Hex(v.form) + " is not a reference's");
  }
}

Status Unit::PcRanges(const AttrValue* low, const AttrValue* high, const AttrValue* ranges,
                      std::vector<AddressRange>* out) const {
  if (low != nullptr && high != nullptr) {
    Result<uint64_t> lo = Address(*low);
    if (!lo) return std::move(lo).error();
    if (IsAddressForm(high->form)) {
      Result<uint64_t> hi = Address(*high);
      if (!hi) return std::move(hi).error();
      out->push_back({*lo, *hi});
      return OkStatus();
    }
    if (IsConstantForm(high->form)) {
      out->push_back({*lo, *lo + high->u});  // wraps as libdw's does
      return OkStatus();
    }
  }
  if (ranges != nullptr) return Ranges(*ranges, out);
  return OkStatus();
}

}  // namespace jitsym::dwarf
