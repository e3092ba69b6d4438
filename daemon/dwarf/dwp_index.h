// A package's unit index (.debug_cu_index, .debug_tu_index: DWARF 5 section 7.3.5, and the GNU
// version 2 of DWARF 4 packages made by `dwp`):
//
//   header   v5: version u16 (5), padding u16; v2: version u32 (2); then
//            columns N u32, units U u32, slots S u32
//   S u64    signatures (a dwo id, or a type signature), hash table
//   S u32    row numbers (1-based; 0: empty slot)
//   N u32    the DW_SECT id of each column
//   U*N u32  offsets of each unit's contribution to each column's section, then U*N u32 sizes
//
// Checked as a whole before any row is used: the tables fit, the row numbers are in range and
// each row is named by one slot at most, a column is named once and one of the ids of its
// version, and an info column is there.
#ifndef JITSYM_DAEMON_DWARF_DWP_INDEX_H_
#define JITSYM_DAEMON_DWARF_DWP_INDEX_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "daemon/dwarf/unit_header.h"
#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

struct DwpRow {
  uint64_t signature = 0;
  // By DW_SECT id (1 to 8; [0] unused), in the index's version's numbering.
  std::array<Contribution, 9> parts{};
};

struct DwpIndex {
  uint32_t version = 0;      // 2 or 5
  std::vector<DwpRow> rows;  // the rows a slot names, in slot order

  // The section of units: DW_SECT_INFO, or in a version 2 .debug_tu_index DW_SECT_V2_TYPES.
  const Contribution& UnitPart(const DwpRow& row, bool types) const;
  // The unit's share of the other sections (abbrev, line, str_offsets, rnglists).
  PackageShare Share(const DwpRow& row) const;
};

// `section` is named in messages ("cu_index" or "tu_index").
Result<DwpIndex> ReadDwpIndex(std::string_view bytes, ByteOrder order, std::string_view section);

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_DWP_INDEX_H_
