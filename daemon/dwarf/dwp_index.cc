// Reading a package's unit index (dwp_index.h).
#include "daemon/dwarf/dwp_index.h"

#include <string>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"

namespace jitsym::dwarf {

const Contribution& DwpIndex::UnitPart(const DwpRow& row, bool types) const {
  return row.parts[types && version == 2 ? DW_SECT_V2_TYPES : DW_SECT_INFO];
}

PackageShare DwpIndex::Share(const DwpRow& row) const {
  PackageShare s;
  s.abbrev = row.parts[DW_SECT_ABBREV];
  s.line = row.parts[DW_SECT_LINE];
  s.str_offsets = row.parts[DW_SECT_STR_OFFSETS];
  if (version == 5) s.rnglists = row.parts[DW_SECT_RNGLISTS];
  return s;
}

Result<DwpIndex> ReadDwpIndex(std::string_view bytes, ByteOrder order, std::string_view section) {
  ByteReader r(bytes, order);
  DwpIndex index;
  const uint16_t low = r.U16();
  const uint16_t high = r.U16();
  // Version 5 is a u16 and padding; version 2 a u32 (in either byte order, the same test).
  if (low == 5 && high == 0) {
    index.version = 5;
  } else if ((order == ByteOrder::kLittle && low == 2 && high == 0) ||
             (order == ByteOrder::kBig && low == 0 && high == 2)) {
    index.version = 2;
  } else if (r.ok()) {
    return DwarfError(ErrorKind::kUnsupported, section, 0, "package index version not 2 or 5");
  }
  const uint32_t columns = r.U32();
  const uint32_t units = r.U32();
  const uint32_t slots = r.U32();
  if (!r.ok()) return Malformed(section, 0, "header truncated");
  // Every table must fit in what is left, before anything is allocated by its size.
  const uint64_t need =
      uint64_t{slots} * 12 + uint64_t{columns} * 4 + uint64_t{units} * columns * 8;
  if (columns > 8 || units > slots || need > r.remaining()) {
    return Malformed(section, 16,
                     std::to_string(columns) + " columns, " + std::to_string(units) + " units, " +
                         std::to_string(slots) + " slots do not fit the index");
  }
  if (units == 0) return index;
  if (columns == 0) return Malformed(section, 4, "units but no columns");
  const size_t sig_at = 16, row_at = sig_at + size_t{slots} * 8,
               col_at = row_at + size_t{slots} * 4;
  const size_t off_at = col_at + size_t{columns} * 4;
  const size_t size_at = off_at + size_t{units} * columns * 4;
  auto u32_at = [&](size_t at) {
    ByteReader a(bytes.substr(at, 4), order);
    return a.U32();
  };
  std::vector<uint32_t> ids(columns);
  bool info = false;
  for (uint32_t c = 0; c < columns; ++c) {
    ids[c] = u32_at(col_at + c * 4);
    const bool known = index.version == 5 ? (ids[c] >= 1 && ids[c] <= 8 && ids[c] != 2)
                                          : (ids[c] >= 1 && ids[c] <= 8);
    if (!known) {
      return Malformed(section, col_at + c * 4,
                       "section id " + std::to_string(ids[c]) + " unknown");
    }
    for (uint32_t d = 0; d < c; ++d) {
      if (ids[d] == ids[c]) return Malformed(section, col_at + c * 4, "a section id twice");
    }
    info |= ids[c] == DW_SECT_INFO || (index.version == 2 && ids[c] == DW_SECT_V2_TYPES);
  }
  if (!info) return Malformed(section, col_at, "no column of units (info or types)");
  std::vector<bool> named(units, false);
  for (uint32_t s = 0; s < slots; ++s) {
    const uint32_t row = u32_at(row_at + size_t{s} * 4);
    if (row == 0) continue;
    if (row > units) {
      return Malformed(section, row_at + size_t{s} * 4,
                       "row " + std::to_string(row) + " of " + std::to_string(units));
    }
    if (named[row - 1]) return Malformed(section, row_at + size_t{s} * 4, "a row named twice");
    named[row - 1] = true;
    DwpRow out;
    ByteReader sig(bytes.substr(sig_at + size_t{s} * 8, 8), order);
    out.signature = sig.U64();
    for (uint32_t c = 0; c < columns; ++c) {
      const size_t cell = (size_t{row} - 1) * columns + c;
      Contribution& part = out.parts[ids[c]];
      part.offset = u32_at(off_at + cell * 4);
      part.size = u32_at(size_at + cell * 4);
      part.present = true;
    }
    index.rows.push_back(out);
  }
  return index;
}

}  // namespace jitsym::dwarf
