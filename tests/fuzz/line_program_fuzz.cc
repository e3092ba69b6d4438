// A unit's line program from hostile bytes (daemon/native/line_program.h). The first byte picks
// the byte order and the address size; the next two (little-endian) how many of the last bytes
// are the string sections DWARF 5 file tables point into, the rest being .debug_line. A program
// read has its rows in libdw's order, the last one ended, and at least file 0.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/native/line_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  using jitsym::native::CuTables;
  const std::string_view in(reinterpret_cast<const char*>(data) + 3, size - 3);
  const size_t strings = std::min<size_t>(in.size(), data[1] | (data[2] << 8));
  const size_t cut = in.size() - strings;
  jitsym::native::LineSections s;
  s.big_endian = (data[0] & 1) != 0;
  s.line = in.substr(0, cut);
  s.line_str = s.str = in.substr(cut);
  const unsigned address_size = (data[0] & 2) != 0 ? 4 : 8;
  jitsym::native::LineProgram p;
  for (const char* comp_dir : {"/build", static_cast<const char*>(nullptr)}) {
    if (!jitsym::native::ReadLineProgram(s, 0, address_size, comp_dir, &p)) continue;
    if (p.files.empty()) __builtin_trap();
    // By address, end rows first at an address; the last row is marked an end after sorting
    // (as libdw does), so it alone may follow a row at its address.
    for (size_t i = 1; i < p.rows.size(); ++i) {
      const CuTables::Row& a = p.rows[i - 1];
      const CuTables::Row& b = p.rows[i];
      const bool last = i + 1 == p.rows.size();
      if (a.addr > b.addr || (!last && a.addr == b.addr && !a.end_sequence && b.end_sequence)) {
        __builtin_trap();
      }
    }
    if (!p.rows.empty() && !p.rows.back().end_sequence) __builtin_trap();
  }
  return 0;
}
