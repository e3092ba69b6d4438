// A unit's header in .debug_info or .debug_types (DWARF 5 section 7.5.1; DWARF 2 to 4's three
// layouts, and .debug_types' type units):
//
//   unit_length   4 bytes, or 0xffffffff + 8 bytes (64-bit DWARF: offsets are 8 bytes)
//   version       2 bytes, 2 to 5
//   v5:  unit_type 1, address_size 1, debug_abbrev_offset (offset size),
//        then by type: skeleton/split_compile: dwo_id 8; type/split_type: signature 8, type_offset
//   v2-4: debug_abbrev_offset (offset size), address_size 1;
//        in .debug_types: signature 8, type_offset (offset size)
//   the unit's DIEs follow, up to unit_length
#ifndef JITSYM_DAEMON_DWARF_UNIT_HEADER_H_
#define JITSYM_DAEMON_DWARF_UNIT_HEADER_H_

#include <cstdint>
#include <string_view>

#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

// A unit's share of a package's sections (a .dwp's index row): offsets into these sections
// that the unit reads are relative to these.
struct Contribution {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool present = false;
};
struct PackageShare {
  Contribution abbrev, line, str_offsets, rnglists;
};

struct UnitHeader {
  uint64_t offset = 0;     // of the unit's first byte in its section
  uint64_t end = 0;        // just past the unit
  uint64_t first_die = 0;  // of the unit DIE
  uint16_t version = 0;
  uint8_t unit_type = 0;  // DW_UT_*; before DWARF 5, from the section and the file's kind
  uint8_t address_size = 0;
  uint8_t offset_size = 4;
  bool in_types = false;  // a unit of .debug_types
  uint64_t abbrev_offset = 0;
  uint64_t dwo_id = 0;  // DWARF 5 skeleton and split units
  bool has_dwo_id = false;
  uint64_t type_signature = 0;  // type units
  uint64_t type_offset = 0;     // type units: of the type's DIE, from the unit's start
  PackageShare share;           // units of a .dwp package
};

// The header of the unit at `offset` of `section` (.debug_info, or .debug_types when
// `in_types`). `split`: the section is a .dwo file's or package's (DWARF 2-4 units are then
// split units). kMalformed with the offset when the header does not fit or contradicts itself;
// kUnsupported for a version or address size this reader does not read.
Result<UnitHeader> ReadUnitHeader(std::string_view section, uint64_t offset, ByteOrder order,
                                  bool in_types, bool split);

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_UNIT_HEADER_H_
