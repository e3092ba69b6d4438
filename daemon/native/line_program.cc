// Reading a unit's line program as libdw does (line_program.h).
#include "daemon/native/line_program.h"

#include <dwarf.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "daemon/util/byte_reader.h"

namespace jitsym::native {
namespace {

// What libdw keeps of a row's registers fits these (its Dwarf_Line holds a column in 16 bits and
// cuts LEB128 operands to 32): a program past them is left to libdw.
constexpr uint64_t kMaxOperand = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kMaxColumn = 0xffff;

// libdw keeps a row's line, and reads DW_LNS_advance_line's operand, in an int.
bool FitsLine(int64_t line) {
  return line >= std::numeric_limits<int32_t>::min() && line <= std::numeric_limits<int32_t>::max();
}

struct Header {
  unsigned version = 0;
  unsigned offset_size = 4;
  uint8_t min_inst_length = 1;
  int8_t line_base = 0;
  uint8_t line_range = 0;
  uint8_t opcode_base = 0;
  const uint8_t* opcode_lengths = nullptr;  // [opcode_base - 1], for opcodes 1..opcode_base-1
};

// A string of a DWARF 5 directory or file entry: inline, or an offset into a string section.
bool FormString(ByteReader& r, uint64_t form, unsigned offset_size, const LineSections& s,
                std::string_view* out) {
  std::string_view section;
  switch (form) {
    case DW_FORM_string:
      *out = r.CString();
      return r.ok();
    case DW_FORM_line_strp:
      section = s.line_str;
      break;
    case DW_FORM_strp:
      section = s.str;
      break;
    default:
      return false;
  }
  const uint64_t offset = r.Word(offset_size);
  if (!r.ok() || offset >= section.size()) return false;
  const size_t nul = section.find('\0', offset);
  if (nul == std::string_view::npos) return false;
  *out = section.substr(offset, nul - offset);
  return true;
}

bool FormUnsigned(ByteReader& r, uint64_t form, uint64_t* out) {
  switch (form) {
    case DW_FORM_data1:
      *out = r.U8();
      break;
    case DW_FORM_data2:
      *out = r.U16();
      break;
    case DW_FORM_udata:
      *out = r.Uleb();
      break;
    default:
      return false;
  }
  return r.ok();
}

// The forms of directory and file entries this reader takes (GCC and clang use the first six).
bool KnownForm(uint64_t form) {
  switch (form) {
    case DW_FORM_string:
    case DW_FORM_line_strp:
    case DW_FORM_strp:
    case DW_FORM_udata:
    case DW_FORM_data1:
    case DW_FORM_data2:
    case DW_FORM_data16:
    case DW_FORM_data4:
    case DW_FORM_data8:
    case DW_FORM_block:
      return true;
    default:
      return false;
  }
}

bool SkipForm(ByteReader& r, uint64_t form, unsigned offset_size) {
  switch (form) {
    case DW_FORM_data1:
      r.Skip(1);
      break;
    case DW_FORM_data2:
      r.Skip(2);
      break;
    case DW_FORM_data4:
      r.Skip(4);
      break;
    case DW_FORM_data8:
      r.Skip(8);
      break;
    case DW_FORM_data16:
      r.Skip(16);
      break;
    case DW_FORM_udata:
      r.Uleb();
      break;
    case DW_FORM_block:
      r.Skip(r.Uleb());
      break;
    case DW_FORM_string:
      r.CString();
      break;
    case DW_FORM_line_strp:
    case DW_FORM_strp:
      r.Skip(offset_size);
      break;
    default:
      return false;
  }
  return r.ok();
}

// libdw's name of a file: an absolute name as it is, else its directory, '/', the name (or the
// name alone when the directory is unknown: no DW_AT_comp_dir for directory 0 before DWARF 5).
std::string JoinName(const char* dir, std::string_view name) {
  if (!name.empty() && name[0] == '/') return std::string(name);
  if (dir == nullptr) return std::string(name);
  std::string out = dir;
  out.push_back('/');
  out.append(name);
  return out;
}

// DWARF 2-4: include_directories and file_names, NUL-terminated lists.
bool ReadFilesV4(ByteReader& r, const char* comp_dir, std::vector<std::string>* files) {
  std::vector<std::string> dirs;  // [0] is comp_dir, kept apart (it may be null)
  for (std::string_view dir; !(dir = r.CString()).empty();) dirs.emplace_back(dir);
  if (!r.ok()) return false;
  files->emplace_back("???");  // libdw's name for file 0, which DWARF 4 does not define
  for (std::string_view name; !(name = r.CString()).empty();) {
    const uint64_t dir = r.Uleb();
    r.Uleb();  // modification time
    r.Uleb();  // length
    if (!r.ok() || dir > dirs.size()) return false;
    files->push_back(JoinName(dir == 0 ? comp_dir : dirs[dir - 1].c_str(), name));
  }
  return r.ok();
}

// DWARF 5: directory and file entry formats, then the entries.
bool ReadFilesV5(ByteReader& r, const Header& h, const LineSections& s,
                 std::vector<std::string>* files) {
  struct Format {
    uint64_t content, form;
  };
  // A list of entry formats, every form one this reader reads or skips, and the contents libdw
  // insists on (a path; for files, a directory index too) when there is any format at all.
  auto read_formats = [&r](std::vector<Format>* formats, bool files) {
    const uint8_t n = r.U8();
    bool path = false, dir = false;
    for (unsigned i = 0; i < n && r.ok(); ++i) {
      const uint64_t content = r.Uleb();
      const uint64_t form = r.Uleb();
      if (!r.ok() || !KnownForm(form)) return false;
      path |= content == DW_LNCT_path;
      dir |= content == DW_LNCT_directory_index;
      formats->push_back({content, form});
    }
    return r.ok() && (n == 0 || (path && (dir || !files)));
  };
  std::vector<Format> formats;
  if (!read_formats(&formats, false)) return false;
  std::vector<std::string> dirs;
  const uint64_t ndirs = r.Uleb();
  if (!r.ok() || ndirs > r.remaining()) return false;
  for (uint64_t i = 0; i < ndirs; ++i) {
    bool have = false;
    std::string_view dir;
    for (const Format& f : formats) {
      if (f.content == DW_LNCT_path) {
        if (!FormString(r, f.form, h.offset_size, s, &dir)) return false;
        have = true;
      } else if (!SkipForm(r, f.form, h.offset_size)) {
        return false;
      }
    }
    if (!have) return false;
    dirs.emplace_back(dir);
  }
  formats.clear();
  if (!read_formats(&formats, true)) return false;
  const uint64_t nfiles = r.Uleb();
  if (!r.ok() || nfiles > r.remaining()) return false;
  for (uint64_t i = 0; i < nfiles; ++i) {
    bool have_name = false;
    std::string_view name;
    uint64_t dir = std::numeric_limits<uint64_t>::max();
    for (const Format& f : formats) {
      if (f.content == DW_LNCT_path) {
        if (!FormString(r, f.form, h.offset_size, s, &name)) return false;
        have_name = true;
      } else if (f.content == DW_LNCT_directory_index) {
        if (!FormUnsigned(r, f.form, &dir)) return false;
      } else if (!SkipForm(r, f.form, h.offset_size)) {
        return false;
      }
    }
    if (!have_name || dir >= dirs.size()) return false;
    files->push_back(JoinName(dirs[dir].c_str(), name));
  }
  // libdw gives file 0 a name of its own when the table is empty.
  if (files->empty()) files->emplace_back("???");
  return true;
}

// The state machine (DWARF 5 section 6.2.2) over the program, one row per special opcode,
// DW_LNS_copy and DW_LNE_end_sequence.
bool RunProgram(ByteReader& r, const Header& h, unsigned address_size,
                std::vector<CuTables::Row>* rows) {
  uint64_t addr = 0;
  uint32_t file = 1, column = 0;
  int64_t line = 1;
  auto emit = [&](bool end) {
    if (!FitsLine(line) || column > kMaxColumn) return false;
    rows->push_back({addr, file, static_cast<uint32_t>(std::max<int64_t>(line, 0)), column, end});
    return true;
  };
  auto operand = [&r](uint64_t* v) {
    *v = r.Uleb();
    return r.ok() && *v <= kMaxOperand;
  };
  const unsigned opcode_base = h.opcode_base;
  while (!r.at_end()) {
    const uint8_t opcode = r.U8();
    if (opcode >= opcode_base) {
      const unsigned adjusted = opcode - opcode_base;
      line += h.line_base + static_cast<int>(adjusted % h.line_range);
      addr += uint64_t{h.min_inst_length} * (adjusted / h.line_range);
      if (!emit(false)) return false;  // checks the line too
      continue;
    }
    if (opcode == 0) {  // extended: libdw reads the length as one byte
      const uint8_t len = r.U8();
      if (!r.ok() || (len & 0x80) || len == 0 || len > r.remaining()) return false;
      const uint8_t sub = r.U8();
      switch (sub) {
        case DW_LNE_end_sequence:
          if (len != 1 || !emit(true)) return false;
          addr = 0;
          file = 1;
          line = 1;
          column = 0;
          break;
        case DW_LNE_set_address:
          if (len != 1 + address_size) return false;
          addr = r.Word(address_size);
          break;
        case DW_LNE_set_discriminator: {
          // libdw checks the operand count of standard opcode 4 here, and reads one LEB128.
          if (opcode_base <= 4 || h.opcode_lengths[3] != 1) return false;
          const size_t before = r.pos();
          // libdw 0.188 keeps a discriminator in 24 bits and refuses the table past them.
          if (r.Uleb() > 0xffffff || r.pos() - before != len - 1u) return false;
          break;
        }
        default:  // DW_LNE_define_file, vendor opcodes: libdw's business
          return false;
      }
      if (!r.ok()) return false;
      continue;
    }
    // A standard opcode, its operands as many as the header says (libdw wants the standard
    // count for the ones it knows).
    const uint8_t nargs = h.opcode_lengths[opcode - 1];
    uint64_t v = 0;
    switch (opcode) {
      case DW_LNS_copy:
        if (nargs != 0 || !emit(false)) return false;
        break;
      case DW_LNS_advance_pc:
        if (nargs != 1 || !operand(&v)) return false;
        addr += uint64_t{h.min_inst_length} * v;
        break;
      case DW_LNS_advance_line: {
        if (nargs != 1) return false;
        const int64_t delta = r.Sleb();  // libdw reads it into an int
        if (!r.ok() || !FitsLine(delta)) return false;
        line += delta;
        if (!FitsLine(line)) return false;
        break;
      }
      case DW_LNS_set_file:
        if (nargs != 1 || !operand(&v)) return false;
        file = static_cast<uint32_t>(v);
        break;
      case DW_LNS_set_column:
        if (nargs != 1 || !operand(&v)) return false;
        column = static_cast<uint32_t>(v);
        break;
      case DW_LNS_negate_stmt:
      case DW_LNS_set_basic_block:
      case DW_LNS_set_prologue_end:
      case DW_LNS_set_epilogue_begin:
        if (nargs != 0) return false;
        break;
      case DW_LNS_const_add_pc:
        if (nargs != 0) return false;
        addr += uint64_t{h.min_inst_length} * ((255u - opcode_base) / h.line_range);
        break;
      case DW_LNS_fixed_advance_pc:
        if (nargs != 1) return false;
        addr += r.U16();
        break;
      case DW_LNS_set_isa:
        if (nargs != 1 || !operand(&v) || v > 0xff) return false;
        break;
      default:  // a standard opcode of a later version: skipped, operands as the header says
        for (unsigned i = 0; i < nargs; ++i) r.Uleb();
        break;
    }
    if (!r.ok()) return false;
  }
  return r.ok();
}

}  // namespace

LineSections FindLineSections(Elf* elf) {
  LineSections s;
  size_t shstrndx;
  if (elf == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) return s;
  const char* ident = elf_getident(elf, nullptr);
  s.big_endian = ident != nullptr && ident[EI_DATA] == ELFDATA2MSB;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name == nullptr) continue;
    std::string_view* slot = nullptr;
    if (std::strcmp(name, ".debug_line") == 0 || std::strcmp(name, ".zdebug_line") == 0) {
      slot = &s.line;
    } else if (std::strcmp(name, ".debug_line_str") == 0 ||
               std::strcmp(name, ".zdebug_line_str") == 0) {
      slot = &s.line_str;
    } else if (std::strcmp(name, ".debug_str") == 0 || std::strcmp(name, ".zdebug_str") == 0) {
      slot = &s.str;
    }
    if (slot == nullptr) continue;
    // Still compressed: libdw did not read this section (nor would it the program).
    if ((shdr.sh_flags & SHF_COMPRESSED) != 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr) continue;
    if (name[1] == 'z' && data->d_size >= 4 && std::memcmp(data->d_buf, "ZLIB", 4) == 0) continue;
    *slot = std::string_view(static_cast<const char*>(data->d_buf), data->d_size);
  }
  return s;
}

bool ReadLineProgram(const LineSections& s, uint64_t offset, unsigned address_size,
                     const char* comp_dir, LineProgram* out) {
  out->rows.clear();
  out->files.clear();
  if (offset >= s.line.size() || (address_size != 4 && address_size != 8)) return false;
  const ByteOrder byte_order = s.big_endian ? ByteOrder::kBig : ByteOrder::kLittle;
  ByteReader unit(s.line.substr(offset), byte_order);
  Header h;
  uint64_t length = unit.U32();
  if (length == 0xffffffffu) {
    h.offset_size = 8;
    length = unit.U64();
  } else if (length >= 0xfffffff0u) {
    return false;
  }
  if (!unit.ok() || length > unit.remaining()) return false;
  ByteReader r(std::string_view(reinterpret_cast<const char*>(unit.cursor()), length), byte_order);
  h.version = r.U16();
  if (!r.ok() || h.version < 2 || h.version > 5) return false;
  if (h.version >= 5) {
    const uint8_t line_address_size = r.U8();
    const uint8_t segment_selector_size = r.U8();
    if (line_address_size != address_size || segment_selector_size != 0) return false;
  }
  const uint64_t header_length = r.Word(h.offset_size);
  if (!r.ok() || header_length > r.remaining()) return false;
  const size_t program_start = r.pos() + header_length;
  h.min_inst_length = r.U8();
  // VLIW programs (op_index) are libdw's.
  if (h.version >= 4 && r.U8() != 1) return false;
  r.U8();  // default_is_stmt: rows do not keep is_stmt
  h.line_base = static_cast<int8_t>(r.U8());
  h.line_range = r.U8();
  h.opcode_base = r.U8();
  if (!r.ok() || h.line_range == 0 || h.opcode_base == 0) return false;
  h.opcode_lengths = r.Bytes(h.opcode_base - 1u).data();
  if (!r.ok()) return false;
  const bool files_ok =
      h.version >= 5 ? ReadFilesV5(r, h, s, &out->files) : ReadFilesV4(r, comp_dir, &out->files);
  // The entries must end where the header says the program starts, as libdw checks.
  if (!files_ok || !r.ok() || r.pos() != program_start) return false;
  // About one row per three bytes of program in GCC's and clang's output.
  out->rows.reserve((length - program_start) / 3 + 16);
  if (!RunProgram(r, h, address_size, &out->rows)) return false;
  // libdw's order: by address, an end_sequence row before others at its address, else in
  // program order; and the last row marked end_sequence (compilers that forget it).
  std::vector<CuTables::Row>& rows = out->rows;
  if (!std::is_sorted(rows.begin(), rows.end(), RowBefore)) {
    std::stable_sort(rows.begin(), rows.end(), RowBefore);
  }
  if (!rows.empty()) rows.back().end_sequence = true;
  return true;
}

}  // namespace jitsym::native
