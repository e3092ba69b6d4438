// A compilation unit's line table read straight from .debug_line (DWARF 2 to 5): the rows and
// file names libdw's dwarf_getsrclines and dwarf_getsrcfiles give for the unit, without their
// cost. libdw allocates every row on the heap, sorts pointers to them with qsort and keeps the
// whole table for the life of the handle: on a cold batch over a large C++ binary that was a
// fifth of the daemon's CPU (malloc, qsort, the page faults of memory used once).
//
// The contract is libdw's answer, not the DWARF standard's: where libdw reads a program in its
// own way (an extended opcode's length as one byte, LEB128 operands cut to 32 bits, columns in 16
// bits, file names joined to their directory with '/'), a program whose reading would depend on
// it is not read here. ReadLineProgram then returns false and the caller asks libdw, so the
// tables are libdw's whenever this reader is unsure, and equal to libdw's otherwise (tested
// against libdw on real binaries, tests/unit/native_line_program_test.cc).
//
// Pure: bytes in, rows out. Every read is bounds-checked (daemon/util/byte_reader.h).
#ifndef JITSYM_DAEMON_NATIVE_LINE_PROGRAM_H_
#define JITSYM_DAEMON_NATIVE_LINE_PROGRAM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/native/cu_tables.h"

typedef struct Elf Elf;

namespace jitsym::native {

// The sections a line program reads: the programs, and the strings its file table may point
// into (DWARF 5's DW_FORM_line_strp and DW_FORM_strp).
struct LineSections {
  std::string_view line, line_str, str;
  bool big_endian = false;
  bool found() const { return !line.empty(); }
};

// The sections of `elf` as libdw reads them (decompressed: libdw decompresses them in place
// when it opens the file, so call this after dwarf_begin_elf on the same Elf).
LineSections FindLineSections(Elf* elf);

// libdw's order of line rows: by address, an end_sequence row before others at its address,
// else as the program wrote them (a stable sort by this). The one place the order is written.
inline bool RowBefore(const CuTables::Row& a, const CuTables::Row& b) {
  return a.addr != b.addr ? a.addr < b.addr : a.end_sequence > b.end_sequence;
}

struct LineProgram {
  std::vector<CuTables::Row> rows;  // in libdw's order; Row::file is the file register
  std::vector<std::string> files;   // file register -> the name libdw gives it
};

// Reads the line program at `offset` of s.line (a unit's DW_AT_stmt_list). `address_size`: the
// unit's; `comp_dir`: its DW_AT_comp_dir or null. False (and `out` unspecified) when the program
// is malformed or uses what this reader leaves to libdw (see above).
bool ReadLineProgram(const LineSections& s, uint64_t offset, unsigned address_size,
                     const char* comp_dir, LineProgram* out);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_LINE_PROGRAM_H_
