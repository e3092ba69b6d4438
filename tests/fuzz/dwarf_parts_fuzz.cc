// The DWARF reader's small parsers from hostile bytes: a package index (.debug_cu_index), a
// unit header, an abbreviation table, compressed sections (SHF_COMPRESSED, .zdebug) inflated
// within a budget, address range sets (.debug_aranges). The first byte picks the byte order and
// which part reads the rest.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/dwarf/abbrev.h"
#include "daemon/dwarf/aranges.h"
#include "daemon/dwarf/dwp_index.h"
#include "daemon/dwarf/inflate.h"
#include "daemon/dwarf/unit_header.h"
#include "tests/fuzz/dwarf_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jitsym;
  if (size == 0) return 0;
  const ByteOrder order = (data[0] & 1) ? ByteOrder::kBig : ByteOrder::kLittle;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  dwarf::Budget budget(dwarf::BudgetLimits{16 << 20, 1 << 20});
  switch ((data[0] >> 1) % 6) {
    case 0:
      if (Result<dwarf::DwpIndex> index = dwarf::ReadDwpIndex(in, order, "cu_index")) {
        for (const dwarf::DwpRow& row : index->rows) {
          (void)index->UnitPart(row, true);
          (void)index->Share(row);
        }
      }
      break;
    case 1:
      for (uint64_t offset = 0; offset < in.size();) {
        Result<dwarf::UnitHeader> h =
            dwarf::ReadUnitHeader(in, offset, order, (data[0] & 0x10) != 0, (data[0] & 0x20) != 0);
        if (!h) break;
        if (h->end <= offset || h->end > in.size() || h->first_die > h->end) __builtin_trap();
        offset = h->end;
      }
      break;
    case 2: {
      const dwarf::FormParams p{static_cast<uint16_t>(2 + (data[0] >> 4) % 4),
                                static_cast<uint8_t>((data[0] & 0x40) ? 4 : 8),
                                static_cast<uint8_t>((data[0] & 0x80) ? 8 : 4)};
      if (Result<dwarf::AbbrevTable> t = dwarf::AbbrevTable::Read(in, 0, p, order)) {
        if (t->end_offset() > in.size()) __builtin_trap();
      }
      break;
    }
    case 3:
      if (Result<std::string> s =
              dwarf::InflateElfSection(in, (data[0] & 0x10) != 0, order, budget)) {
        if (s->size() > (16u << 20)) __builtin_trap();
      }
      break;
    case 4:
      if (Result<std::string> s = dwarf::InflateZdebugSection(in, budget)) {
        if (s->size() > (16u << 20)) __builtin_trap();
      }
      break;
    case 5: {
      const dwarf::Aranges a = dwarf::ReadAranges(in, order);
      if (a.ranges.size() > in.size() / 4) __builtin_trap();
      for (const dwarf::ArangeSet& set : a.sets) {
        if (set.first + uint64_t{set.count} > a.ranges.size()) __builtin_trap();
      }
      for (const dwarf::AddressRange& r : a.ranges) {
        if (r.lo >= r.hi) __builtin_trap();
      }
      if (a.first_error.has_value() != (a.bad_sets != 0)) __builtin_trap();
      break;
    }
  }
  return 0;
}
