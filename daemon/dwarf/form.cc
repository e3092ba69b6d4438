// Reading and skipping attribute values by form (form.h).
#include "daemon/dwarf/form.h"

#include <span>
#include <string>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"

namespace jitsym::dwarf {
namespace {

Error Truncated(uint64_t at, std::string_view section, uint32_t form) {
  return Malformed(section, at, "value of DW_FORM " + Hex(form) + " past the unit's end");
}

Error Unknown(uint64_t at, std::string_view section, uint32_t form) {
  return DwarfError(ErrorKind::kUnsupported, section, at, "DW_FORM " + Hex(form) + " unknown");
}

}  // namespace

bool KnownForm(uint32_t form) {
  switch (form) {
    case DW_FORM_string:
    case DW_FORM_block:
    case DW_FORM_block1:
    case DW_FORM_block2:
    case DW_FORM_block4:
    case DW_FORM_exprloc:
    case DW_FORM_sdata:
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
    case DW_FORM_indirect:
      return true;
    default:
      return FixedFormSize(form, FormParams{}).has_value();
  }
}

Status ReadForm(ByteReader& r, uint32_t form, int64_t implicit_const, const FormParams& p,
                uint64_t base, std::string_view section, AttrValue* out) {
  const uint64_t at = base + r.pos();
  for (int depth = 0; form == DW_FORM_indirect; ++depth) {
    if (depth >= kMaxIndirect) {
      return Malformed(section, at,
                       "DW_FORM_indirect nested deeper than " + std::to_string(kMaxIndirect));
    }
    const uint64_t f = r.Uleb();
    if (!r.ok()) return Truncated(at, section, DW_FORM_indirect);
    // An indirect form has no abbreviation to hold an implicit constant.
    if (f == DW_FORM_implicit_const || f > 0xffff) {
      return Malformed(section, at, "DW_FORM_indirect names DW_FORM " + Hex(f));
    }
    form = static_cast<uint32_t>(f);
  }
  out->form = static_cast<uint16_t>(form);
  out->s = 0;
  out->bytes = {};
  switch (form) {
    case DW_FORM_string:
      out->bytes = r.CString();
      out->u = 0;
      break;
    case DW_FORM_block1:
    case DW_FORM_block2:
    case DW_FORM_block4:
    case DW_FORM_block:
    case DW_FORM_exprloc: {
      out->u = form == DW_FORM_block1   ? r.U8()
               : form == DW_FORM_block2 ? r.U16()
               : form == DW_FORM_block4 ? r.U32()
                                        : r.Uleb();
      if (!r.ok() || out->u > r.remaining()) return Truncated(at, section, form);
      const std::span<const uint8_t> b = r.Bytes(static_cast<size_t>(out->u));
      out->bytes = {reinterpret_cast<const char*>(b.data()), b.size()};
      break;
    }
    case DW_FORM_data16: {
      const std::span<const uint8_t> b = r.Bytes(16);
      out->bytes = {reinterpret_cast<const char*>(b.data()), b.size()};
      out->u = 0;
      break;
    }
    case DW_FORM_sdata:
      out->s = r.Sleb();
      out->u = static_cast<uint64_t>(out->s);
      break;
    case DW_FORM_implicit_const:
      out->s = implicit_const;
      out->u = static_cast<uint64_t>(implicit_const);
      break;
    case DW_FORM_flag_present:
      out->u = 1;
      break;
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
      out->u = r.Uleb();
      break;
    default: {
      const std::optional<uint8_t> size = FixedFormSize(form, p);
      if (!size) return Unknown(at, section, form);
      out->u = r.Word(*size);
      break;
    }
  }
  if (!r.ok()) return Truncated(at, section, form);
  return OkStatus();
}

Status SkipForm(ByteReader& r, uint32_t form, const FormParams& p, uint64_t base,
                std::string_view section) {
  if (const std::optional<uint8_t> size = FixedFormSize(form, p)) {
    const uint64_t at = base + r.pos();
    r.Skip(*size);
    if (!r.ok()) return Truncated(at, section, form);
    return OkStatus();
  }
  AttrValue ignored;
  return ReadForm(r, form, 0, p, base, section, &ignored);
}

bool IsStringForm(uint16_t form) {
  switch (form) {
    case DW_FORM_string:
    case DW_FORM_strp:
    case DW_FORM_line_strp:
    case DW_FORM_strx:
    case DW_FORM_strx1:
    case DW_FORM_strx2:
    case DW_FORM_strx3:
    case DW_FORM_strx4:
    case DW_FORM_GNU_str_index:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_strp_alt:
      return true;
    default:
      return false;
  }
}

bool IsAddressForm(uint16_t form) {
  switch (form) {
    case DW_FORM_addr:
    case DW_FORM_addrx:
    case DW_FORM_addrx1:
    case DW_FORM_addrx2:
    case DW_FORM_addrx3:
    case DW_FORM_addrx4:
    case DW_FORM_GNU_addr_index:
      return true;
    default:
      return false;
  }
}

bool IsConstantForm(uint16_t form) {
  switch (form) {
    case DW_FORM_data1:
    case DW_FORM_data2:
    case DW_FORM_data4:
    case DW_FORM_data8:
    case DW_FORM_udata:
    case DW_FORM_sdata:
    case DW_FORM_implicit_const:
      return true;
    default:
      return false;
  }
}

bool IsReferenceForm(uint16_t form) {
  switch (form) {
    case DW_FORM_ref1:
    case DW_FORM_ref2:
    case DW_FORM_ref4:
    case DW_FORM_ref8:
    case DW_FORM_ref_udata:
    case DW_FORM_ref_addr:
    case DW_FORM_ref_sig8:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_ref_sup4:
    case DW_FORM_ref_sup8:
      return true;
    default:
      return false;
  }
}

}  // namespace jitsym::dwarf
