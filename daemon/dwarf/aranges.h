// .debug_aranges (DWARF 5 section 6.1.2; the same layout since DWARF 2): for each compilation
// unit that has a set, the address ranges of its code, without reading the unit. A set:
//
//   unit_length            4 bytes, or 0xffffffff + 8 bytes (64-bit DWARF)
//   version                2 bytes (2)
//   debug_info_offset      the unit's offset in .debug_info (offset size)
//   address_size           1 byte
//   segment_selector_size  1 byte (only 0 is read: no target of ours has segments)
//   padding                to a multiple of the tuple's size from the set's start
//   tuples                 (address, length) of address_size bytes each, up to (0, 0)
//
// Producers differ: GCC writes a set for every unit that has code, listing all of its ranges;
// clang writes none unless asked (-gdwarf-aranges). A unit without a set is not said to have no
// code: the caller reads its unit DIE instead.
#ifndef JITSYM_DAEMON_DWARF_ARANGES_H_
#define JITSYM_DAEMON_DWARF_ARANGES_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "daemon/dwarf/unit.h"
#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

struct ArangeSet {
  uint64_t info_offset = 0;  // of the unit in .debug_info
  uint8_t address_size = 0;  // what the set says; the unit's must be the same
  uint32_t first = 0;        // its ranges: Aranges::ranges[first, first + count)
  uint32_t count = 0;
};

struct Aranges {
  std::vector<ArangeSet> sets;       // in the section's order; only sets read whole
  std::vector<AddressRange> ranges;  // non-empty ones (lo < hi), a set's in its order
  // The first set that could not be read (the error), and how many could not. A set that is
  // not read whole is left out: its unit's ranges are not known from here. A set whose length
  // does not fit ends the reading (the rest are in bad_sets as one).
  std::optional<Error> first_error;
  size_t bad_sets = 0;
};

// Every set of `section`. Work and memory are linear in the section's size.
Aranges ReadAranges(std::string_view section, ByteOrder order);

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_ARANGES_H_
