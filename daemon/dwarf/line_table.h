// A unit's line table (.debug_line; DWARF 5 section 6.2, and the headers of DWARF 2 to 4): the
// rows of its line program and the names of its files, in the shape jitsym's symbolization uses
// (what libdw's dwarf_getsrclines and dwarf_getsrcfiles give for the unit):
//
//   header   unit_length, version (2-5), [v5: address_size, segment_selector_size],
//            header_length, minimum_instruction_length, [v4+: maximum_operations_per_instruction],
//            default_is_stmt, line_base, line_range, opcode_base, standard_opcode_lengths[]
//   v2-4:    include_directories (strings, an empty one ends them), file_names (name, dir index,
//            mtime, length; an empty name ends them)
//   v5:      directory and file name entry formats (content type, form pairs), then the entries
//   program  from header_length on: special, standard and extended opcodes
//
// Rows come in libdw's order (by address, an end_sequence row before others at its address,
// else in program order; the last row marked end_sequence); file names are joined as libdw
// joins them: an absolute name as it is, else its directory, '/', the name (DWARF 2-4: file 0
// is "???", directory 0 the unit's DW_AT_comp_dir, the name alone when there is none; DWARF 5:
// directory entries as written, "???" for file 0 of an empty table). Unlike libdw, every
// program the standard allows is read (DW_LNE_define_file, vendor extended opcodes skipped by
// their length, LEB128 operands in 64 bits, VLIW op_index), and the program starts where
// header_length says even when the entries end before it (docs/dwarf.md).
#ifndef JITSYM_DAEMON_DWARF_LINE_TABLE_H_
#define JITSYM_DAEMON_DWARF_LINE_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/dwarf/context.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

struct LineRow {
  uint64_t addr = 0;
  uint32_t file = 0;  // the file register: an index into LineTable::files (when it is in range)
  uint32_t line = 0;  // negative lines read as 0, lines past 32 bits as 0xffffffff
  uint32_t column = 0;
  bool end_sequence = false;
  bool operator==(const LineRow&) const = default;
};

struct LineTable {
  uint16_t version = 0;
  std::vector<LineRow> rows;
  std::vector<std::string> files;  // file register -> name
};

// libdw's order of rows (the one place it is written).
inline bool RowBefore(const LineRow& a, const LineRow& b) {
  return a.addr != b.addr ? a.addr < b.addr : a.end_sequence > b.end_sequence;
}

// The line table at `offset` of `context`'s .debug_line (strings from its .debug_line_str and
// .debug_str; its supplementary file's for DW_FORM_strp_sup). `address_size`: the unit's;
// `comp_dir`: its DW_AT_comp_dir, when it has one. With `files_only`, the program is not run
// (a .dwo's table names the files of DW_AT_call_file, and has no program of its own).
Result<LineTable> ReadLineTable(const Context& context, uint64_t offset, unsigned address_size,
                                std::optional<std::string_view> comp_dir, bool files_only = false);

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_LINE_TABLE_H_
