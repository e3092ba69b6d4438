// A unit's line table from hostile bytes (daemon/dwarf/line_table.h). The first byte picks the
// byte order, the address size and whether only the file names are read; the next two (LE) how
// many of the last bytes are the string sections DWARF 5 entries point into, the rest
// .debug_line, read at every unit it holds.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "daemon/dwarf/line_table.h"
#include "tests/fuzz/dwarf_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jitsym;
  if (size < 3) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 3, size - 3);
  const size_t strings = std::min<size_t>(in.size(), data[1] | (data[2] << 8));
  dwarf::Sections s;
  s.order = (data[0] & 1) ? ByteOrder::kBig : ByteOrder::kLittle;
  s[dwarf::SectionId::kLine] = in.substr(0, in.size() - strings);
  s[dwarf::SectionId::kLineStr] = s[dwarf::SectionId::kStr] = in.substr(in.size() - strings);
  dwarf::Context ctx(s);
  const unsigned address_size = (data[0] & 2) ? 4 : 8;
  const bool files_only = (data[0] & 4) != 0;
  const std::optional<std::string_view> comp_dir =
      (data[0] & 8) ? std::nullopt : std::optional<std::string_view>("/build");
  // Every unit of the section, one after the other, as units' DW_AT_stmt_list name them.
  for (uint64_t offset = 0; offset < s[dwarf::SectionId::kLine].size();) {
    Result<dwarf::LineTable> t =
        dwarf::ReadLineTable(ctx, offset, address_size, comp_dir, files_only);
    if (!t) break;
    for (const std::string& f : t->files) fuzz::TouchAll(f);
    // In libdw's order; the last row is marked an end after sorting (as libdw does), so it
    // alone may follow a row at its address.
    for (size_t i = 1; i + 1 < t->rows.size(); ++i) {
      if (dwarf::RowBefore(t->rows[i], t->rows[i - 1])) __builtin_trap();
    }
    if (!t->rows.empty() && !t->rows.back().end_sequence) __builtin_trap();
    // The next unit: past this one's length.
    const std::string_view rest = s[dwarf::SectionId::kLine].substr(offset);
    if (rest.size() < 4) break;
    uint32_t length;
    std::memcpy(&length, rest.data(), 4);
    if (s.order == ByteOrder::kBig) length = __builtin_bswap32(length);
    if (length >= 0xfffffff0u) break;
    offset += 4 + uint64_t{length};
  }
  return 0;
}
