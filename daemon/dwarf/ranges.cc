// Range lists (unit.h: Unit::Ranges): .debug_ranges (DWARF 2-4: address pairs, a base address
// selection entry, (0, 0) at the end) and .debug_rnglists (DWARF 5 section 7.25: an entry kind
// byte, then its operands, DW_RLE_end_of_list at the end). Every entry takes at least one byte,
// so a list costs at most its section's size; one that runs past the section is malformed.
#include <limits>
#include <string>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"
#include "daemon/dwarf/unit.h"

namespace jitsym::dwarf {
namespace {

Status ReadRanges4(std::string_view section, uint64_t offset, ByteOrder order,
                   unsigned address_size, uint64_t base, std::vector<AddressRange>* out) {
  if (offset >= section.size()) return Malformed("ranges", offset, "list past the section's end");
  const uint64_t max = address_size == 8 ? std::numeric_limits<uint64_t>::max() : 0xffffffffu;
  ByteReader r(section.substr(offset), order);
  for (;;) {
    const uint64_t begin = r.Word(address_size);
    const uint64_t end = r.Word(address_size);
    if (!r.ok()) return Malformed("ranges", offset, "list without its end");
    if (begin == 0 && end == 0) return OkStatus();
    if (begin == max) {
      base = end;
      continue;
    }
    out->push_back({base + begin, base + end});
  }
}

}  // namespace

Status Unit::Ranges(const AttrValue& v, std::vector<AddressRange>* out) const {
  const bool split = unit_type_ == DW_UT_split_compile || unit_type_ == DW_UT_split_type;
  if (h_.version < 5) {
    if (v.form != DW_FORM_sec_offset && !IsConstantForm(v.form)) {
      return Malformed(info_name(), h_.offset, "DW_AT_ranges of DW_FORM " + Hex(v.form));
    }
    // GNU split DWARF 4: a split unit's lists are in its skeleton's file, from its base.
    const Context& where = skeleton_ != nullptr ? skeleton_->context() : *ctx_;
    const std::optional<uint64_t> at = CheckedAdd(v.u, ranges_base_);
    if (!at) return Malformed("ranges", v.u, "offset overflows");
    return ReadRanges4(where.section(SectionId::kRanges), *at, order(), h_.address_size,
                       base_address_, out);
  }
  const std::string_view section = ctx_->section(SectionId::kRngLists);
  uint64_t offset = 0;
  if (v.form == DW_FORM_rnglistx) {
    const std::optional<uint64_t> rel = CheckedMul(v.u, h_.offset_size);
    const std::optional<uint64_t> at = rel ? CheckedAdd(rnglists_base_, *rel) : std::nullopt;
    if (!at || *at > section.size() || section.size() - *at < h_.offset_size) {
      return Malformed("rnglists", rnglists_base_,
                       "range list index " + std::to_string(v.u) + " past the section's end");
    }
    ByteReader r(section.substr(*at, h_.offset_size), order());
    const std::optional<uint64_t> list = CheckedAdd(rnglists_base_, r.Word(h_.offset_size));
    if (!list) return Malformed("rnglists", *at, "offset overflows");
    offset = *list;
  } else if (v.form == DW_FORM_sec_offset) {
    // A split unit's offsets are from its share of a package's section.
    offset = v.u + (split ? h_.share.rnglists.offset : 0);
  } else {
    return Malformed(info_name(), h_.offset, "DW_AT_ranges of DW_FORM " + Hex(v.form));
  }
  if (offset >= section.size()) return Malformed("rnglists", offset, "list past the section's end");
  ByteReader r(section.substr(offset), order());
  uint64_t base = base_address_;
  const unsigned size = h_.address_size;
  auto indexed = [this](uint64_t index, uint64_t* out) {
    Result<uint64_t> a = IndexedAddress(index);
    if (!a) return false;
    *out = *a;
    return true;
  };
  for (;;) {
    const uint64_t at = offset + r.pos();
    const uint8_t kind = r.U8();
    uint64_t a = 0, b = 0;
    switch (kind) {
      case DW_RLE_end_of_list:
        if (!r.ok()) return Malformed("rnglists", offset, "list without its end");
        return OkStatus();
      case DW_RLE_base_addressx:
        if (!indexed(r.Uleb(), &base) && r.ok()) {
          return Malformed("rnglists", at, "base address index past .debug_addr");
        }
        break;
      case DW_RLE_startx_endx:
        if (r.ok() && (!indexed(r.Uleb(), &a) || !indexed(r.Uleb(), &b)) && r.ok()) {
          return Malformed("rnglists", at, "address index past .debug_addr");
        }
        out->push_back({a, b});
        break;
      case DW_RLE_startx_length:
        if (!indexed(r.Uleb(), &a) && r.ok()) {
          return Malformed("rnglists", at, "address index past .debug_addr");
        }
        b = r.Uleb();
        out->push_back({a, a + b});
        break;
      case DW_RLE_offset_pair:
        a = r.Uleb();
        b = r.Uleb();
        out->push_back({base + a, base + b});
        break;
      case DW_RLE_base_address:
        base = r.Word(size);
        break;
      case DW_RLE_start_end:
        a = r.Word(size);
        b = r.Word(size);
        out->push_back({a, b});
        break;
      case DW_RLE_start_length:
        a = r.Word(size);
        b = r.Uleb();
        out->push_back({a, a + b});
        break;
      default:
        if (!r.ok()) break;
        return Malformed("rnglists", at, "range list entry kind " + Hex(kind) + " unknown");
    }
    if (!r.ok()) return Malformed("rnglists", offset, "list without its end");
  }
}

}  // namespace jitsym::dwarf
