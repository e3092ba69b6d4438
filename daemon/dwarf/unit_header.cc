// Reading unit headers (unit_header.h).
#include "daemon/dwarf/unit_header.h"

#include <string>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"

namespace jitsym::dwarf {
namespace {

Error Bad(ErrorKind kind, std::string_view section, uint64_t unit, const std::string& what,
          uint64_t at) {
  return DwarfError(kind, section, at, "unit at " + Hex(unit) + ": " + what);
}

}  // namespace

Result<UnitHeader> ReadUnitHeader(std::string_view section, uint64_t offset, ByteOrder order,
                                  bool in_types, bool split) {
  const std::string_view name = in_types ? "types" : "info";
  if (offset >= section.size()) {
    return Bad(ErrorKind::kMalformed, name, offset, "offset past the section's end", offset);
  }
  ByteReader r(section.substr(offset), order);
  UnitHeader h;
  h.offset = offset;
  h.in_types = in_types;
  uint64_t length = r.U32();
  if (length == 0xffffffffu) {
    h.offset_size = 8;
    length = r.U64();
  } else if (length >= 0xfffffff0u) {
    return Bad(ErrorKind::kMalformed, name, offset, "reserved unit length", offset);
  }
  if (!r.ok() || length > r.remaining()) {
    return Bad(ErrorKind::kMalformed, name, offset,
               "unit length " + std::to_string(length) + " past the section's end", offset);
  }
  h.end = offset + r.pos() + length;
  ByteReader u(section.substr(offset + r.pos(), length), order);
  const uint64_t base = offset + r.pos();
  h.version = u.U16();
  if (!u.ok()) return Bad(ErrorKind::kMalformed, name, offset, "header truncated", base);
  if (h.version < 2 || h.version > 5) {
    return Bad(ErrorKind::kUnsupported, name, offset,
               "DWARF version " + std::to_string(h.version) + " not read", base);
  }
  if (h.version >= 5) {
    if (in_types) {
      return Bad(ErrorKind::kMalformed, name, offset, "a DWARF 5 unit in .debug_types", base);
    }
    h.unit_type = u.U8();
    h.address_size = u.U8();
    h.abbrev_offset = u.Word(h.offset_size);
    switch (h.unit_type) {
      case DW_UT_compile:
      case DW_UT_partial:
        break;
      case DW_UT_skeleton:
      case DW_UT_split_compile:
        h.dwo_id = u.U64();
        h.has_dwo_id = true;
        break;
      case DW_UT_type:
      case DW_UT_split_type:
        h.type_signature = u.U64();
        h.type_offset = u.Word(h.offset_size);
        break;
      default:
        return Bad(ErrorKind::kUnsupported, name, offset,
                   "unit type " + std::to_string(h.unit_type) + " unknown", base + 2);
    }
  } else {
    h.abbrev_offset = u.Word(h.offset_size);
    h.address_size = u.U8();
    if (in_types) {
      h.type_signature = u.U64();
      h.type_offset = u.Word(h.offset_size);
      h.unit_type = split ? DW_UT_split_type : DW_UT_type;
    } else {
      h.unit_type = split ? DW_UT_split_compile : DW_UT_compile;
    }
  }
  if (!u.ok()) return Bad(ErrorKind::kMalformed, name, offset, "header truncated", base);
  if (h.address_size != 4 && h.address_size != 8) {
    return Bad(ErrorKind::kUnsupported, name, offset,
               "address size " + std::to_string(h.address_size) + " not read", base);
  }
  h.first_die = base + u.pos();
  if ((h.unit_type == DW_UT_type || h.unit_type == DW_UT_split_type) &&
      (h.type_offset < h.first_die - offset || h.type_offset >= h.end - offset)) {
    return Bad(ErrorKind::kMalformed, name, offset, "type offset outside the unit's DIEs", base);
  }
  return h;
}

}  // namespace jitsym::dwarf
