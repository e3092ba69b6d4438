// Attribute values by form (DWARF 5 section 7.5.6), for the forms GCC, clang and dwz emit and
// the rest of DWARF 5: read, or skipped by size. A value is kept as read (an index, an offset,
// a unit-relative reference); the unit (unit.h) resolves it, because resolving needs the unit's
// bases and the context's other sections.
#ifndef JITSYM_DAEMON_DWARF_FORM_H_
#define JITSYM_DAEMON_DWARF_FORM_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "daemon/dwarf/constants.h"
#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

// What a form's size depends on: the unit header's.
struct FormParams {
  uint16_t version = 4;
  uint8_t address_size = 8;
  uint8_t offset_size = 4;
};

// How deep DW_FORM_indirect may nest (a form read from the data naming DW_FORM_indirect
// again): one level is all a producer needs.
inline constexpr int kMaxIndirect = 4;

// The size of a form's value when the unit header alone decides it (0 for flag_present and
// implicit_const), or nullopt (LEB128, strings, blocks, indirect, and unknown forms).
inline std::optional<uint8_t> FixedFormSize(uint32_t form, const FormParams& p) {
  switch (form) {
    case DW_FORM_flag_present:
    case DW_FORM_implicit_const:
      return 0;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1:
      return 1;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2:
      return 2;
    case DW_FORM_strx3:
    case DW_FORM_addrx3:
      return 3;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_ref_sup4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4:
      return 4;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8:
      return 8;
    case DW_FORM_data16:
      return 16;
    case DW_FORM_addr:
      return p.address_size;
    case DW_FORM_ref_addr:
      return p.version <= 2 ? p.address_size : p.offset_size;
    case DW_FORM_strp:
    case DW_FORM_line_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt:
      return p.offset_size;
    default:
      return std::nullopt;
  }
}

// Whether this reader knows `form` at all.
bool KnownForm(uint32_t form);

struct AttrValue {
  uint16_t name = 0;
  uint16_t form = 0;       // after DW_FORM_indirect
  uint64_t u = 0;          // unsigned value, address, offset, index or reference
  int64_t s = 0;           // DW_FORM_sdata, DW_FORM_implicit_const (also in u)
  std::string_view bytes;  // DW_FORM_string (without its NUL), blocks, exprloc, data16
};

// Reads a value of `form` (`implicit_const`: the abbreviation's, for DW_FORM_implicit_const)
// from `r`. On failure returns an error whose offset is r's position plus `base` (the reader's
// start in its section) and whose message names `section`.
Status ReadForm(ByteReader& r, uint32_t form, int64_t implicit_const, const FormParams& p,
                uint64_t base, std::string_view section, AttrValue* out);

// Skips a value of `form`; errors as ReadForm's.
Status SkipForm(ByteReader& r, uint32_t form, const FormParams& p, uint64_t base,
                std::string_view section);

// Value classes, for the unit's resolvers.
bool IsStringForm(uint16_t form);
bool IsAddressForm(uint16_t form);    // addr, addrx*, GNU_addr_index
bool IsConstantForm(uint16_t form);   // data1..8, udata, sdata, implicit_const
bool IsReferenceForm(uint16_t form);  // ref1..8, ref_udata, ref_addr, ref_sig8, alt, sup

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_FORM_H_
