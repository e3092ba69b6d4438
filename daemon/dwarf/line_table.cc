// Reading a unit's line table (line_table.h).
#include "daemon/dwarf/line_table.h"

#include <algorithm>
#include <limits>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/errors.h"
#include "daemon/dwarf/form.h"

namespace jitsym::dwarf {
namespace {

constexpr std::string_view kSection = "line";

struct Header {
  uint16_t version = 0;
  uint8_t offset_size = 4;
  uint8_t min_inst_length = 1;
  uint8_t max_ops = 1;
  int8_t line_base = 0;
  uint8_t line_range = 0;
  uint8_t opcode_base = 0;
  const uint8_t* opcode_lengths = nullptr;  // [opcode_base - 1]
};

// libdw's join of a directory and a name (see line_table.h).
std::string JoinName(std::optional<std::string_view> dir, std::string_view name) {
  if (!name.empty() && name[0] == '/') return std::string(name);
  if (!dir) return std::string(name);
  std::string out(*dir);
  out.push_back('/');
  out.append(name);
  return out;
}

Status ReadFilesV4(ByteReader& r, uint64_t base, std::optional<std::string_view> comp_dir,
                   std::vector<std::string>* files) {
  std::vector<std::string_view> dirs;  // include_directories[1..]
  for (;;) {
    const std::string_view dir = r.CString();
    if (!r.ok()) return Malformed(kSection, base + r.pos(), "include directories without end");
    if (dir.empty()) break;
    dirs.push_back(dir);
  }
  files->emplace_back("???");  // DWARF 2-4 define no file 0
  for (;;) {
    const uint64_t at = base + r.pos();
    const std::string_view name = r.CString();
    if (!r.ok()) return Malformed(kSection, at, "file names without end");
    if (name.empty()) break;
    const uint64_t dir = r.Uleb();
    r.Uleb();  // modification time
    r.Uleb();  // length
    if (!r.ok()) return Malformed(kSection, at, "file entry cut short");
    if (dir > dirs.size()) {
      return Malformed(kSection, at, "directory index " + std::to_string(dir) + " out of range");
    }
    files->push_back(JoinName(dir == 0 ? comp_dir : std::optional(dirs[dir - 1]), name));
  }
  return OkStatus();
}

// A path of a DWARF 5 entry: inline, or in a string section.
Result<std::string_view> EntryString(const Context& ctx, const AttrValue& v, uint64_t at) {
  switch (v.form) {
    case DW_FORM_string:
      return v.bytes;
    case DW_FORM_line_strp:
      return ctx.StringAt(SectionId::kLineStr, v.u);
    case DW_FORM_strp:
      return ctx.StringAt(SectionId::kStr, v.u);
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_strp_alt:
      if (ctx.supplementary() == nullptr) {
        return DwarfError(ErrorKind::kUnsupported, kSection, at,
                          "path in the supplementary file, which is not there");
      }
      return ctx.supplementary()->StringAt(SectionId::kStr, v.u);
    default:
      return DwarfError(ErrorKind::kUnsupported, kSection, at,
                        "path of DW_FORM " + Hex(v.form) + " not read");
  }
}

Status ReadFilesV5(const Context& ctx, ByteReader& r, uint64_t base, const Header& h,
                   unsigned address_size, std::vector<std::string>* files) {
  struct Format {
    uint64_t content;
    uint32_t form;
  };
  const FormParams params{5, static_cast<uint8_t>(address_size), h.offset_size};
  std::vector<Format> formats;
  auto read_formats = [&]() -> Status {
    formats.clear();
    const uint64_t at = base + r.pos();
    const uint8_t n = r.U8();
    for (unsigned i = 0; i < n && r.ok(); ++i) {
      const uint64_t content = r.Uleb();
      const uint64_t form = r.Uleb();
      if (form == DW_FORM_indirect || form == DW_FORM_implicit_const ||
          !KnownForm(static_cast<uint32_t>(std::min<uint64_t>(form, 0xffffffffu)))) {
        return DwarfError(ErrorKind::kUnsupported, kSection, at,
                          "entry format of DW_FORM " + Hex(form) + " not read");
      }
      formats.push_back({content, static_cast<uint32_t>(form)});
    }
    if (!r.ok()) return Malformed(kSection, at, "entry formats cut short");
    return OkStatus();
  };
  // Reads `count` entries: the path, and the directory index of each.
  auto read_entries = [&](std::vector<std::pair<std::string_view, uint64_t>>* out) -> Status {
    const uint64_t count = r.Uleb();
    // Each entry takes a byte at least, unless no format gives it any: then none is kept.
    if (!r.ok() || (count > r.remaining() && !formats.empty())) {
      return Malformed(kSection, base + r.pos(), "entry count past the header's end");
    }
    if (formats.empty()) return OkStatus();
    for (uint64_t i = 0; i < count; ++i) {
      std::string_view path;
      uint64_t dir = 0;
      for (const Format& f : formats) {
        AttrValue v;
        const uint64_t at = base + r.pos();
        if (Status s = ReadForm(r, f.form, 0, params, base, kSection, &v); !s.ok()) return s;
        if (f.content == DW_LNCT_path) {
          Result<std::string_view> p = EntryString(ctx, v, at);
          if (!p) return std::move(p).error();
          path = *p;
        } else if (f.content == DW_LNCT_directory_index) {
          dir = v.u;
        }
      }
      out->emplace_back(path, dir);
    }
    return OkStatus();
  };
  std::vector<std::pair<std::string_view, uint64_t>> dirs, names;
  if (Status s = read_formats(); !s.ok()) return s;
  if (Status s = read_entries(&dirs); !s.ok()) return s;
  if (Status s = read_formats(); !s.ok()) return s;
  if (Status s = read_entries(&names); !s.ok()) return s;
  for (const auto& [name, dir] : names) {
    if (dir >= dirs.size()) {
      return Malformed(kSection, base, "directory index " + std::to_string(dir) + " out of range");
    }
    files->push_back(JoinName(dirs[dir].first, name));
  }
  if (files->empty()) files->emplace_back("???");  // libdw's name of file 0 then
  return OkStatus();
}

uint32_t ClampLine(int64_t line) {
  if (line < 0) return 0;
  return line > std::numeric_limits<uint32_t>::max() ? std::numeric_limits<uint32_t>::max()
                                                     : static_cast<uint32_t>(line);
}

// The state machine (DWARF 5 section 6.2.2): a row per special opcode, DW_LNS_copy and
// DW_LNE_end_sequence. Every opcode takes a byte at least: rows <= program bytes.
Status RunProgram(ByteReader& r, uint64_t base, const Header& h, unsigned address_size,
                  std::vector<std::string>* files, std::vector<LineRow>* rows) {
  uint64_t addr = 0, op_index = 0, file = 1, column = 0;
  // The line register wraps modulo 2^64 (unsigned arithmetic: hostile deltas never overflow a
  // signed integer); a row reads it as signed (ClampLine).
  uint64_t line = 1;
  auto emit = [&](bool end) {
    rows->push_back({addr, static_cast<uint32_t>(std::min<uint64_t>(file, 0xffffffffu)),
                     ClampLine(static_cast<int64_t>(line)),
                     static_cast<uint32_t>(std::min<uint64_t>(column, 0xffffffffu)), end});
  };
  // Advances by `n` operations (addresses and, for VLIW, op_index).
  auto advance = [&](uint64_t n) {
    if (h.max_ops == 1) {
      addr += uint64_t{h.min_inst_length} * n;
    } else {
      addr += uint64_t{h.min_inst_length} * ((op_index + n) / h.max_ops);
      op_index = (op_index + n) % h.max_ops;
    }
  };
  while (!r.at_end()) {
    const uint64_t at = base + r.pos();
    const uint8_t opcode = r.U8();
    if (opcode >= h.opcode_base) {
      const unsigned adjusted = opcode - h.opcode_base;
      advance(adjusted / h.line_range);
      line += static_cast<uint64_t>(int64_t{h.line_base} + adjusted % h.line_range);
      emit(false);
      continue;
    }
    if (opcode == 0) {
      const uint64_t len = r.Uleb();
      if (!r.ok() || len == 0 || len > r.remaining()) {
        return Malformed(kSection, at, "extended opcode's length past the program's end");
      }
      const size_t end = r.pos() + len;
      const uint8_t sub = r.U8();
      switch (sub) {
        case DW_LNE_end_sequence:
          emit(true);
          addr = op_index = column = 0;
          file = line = 1;
          break;
        case DW_LNE_set_address:
          if (len - 1 != address_size) {
            return Malformed(kSection, at,
                             "DW_LNE_set_address of " + std::to_string(len - 1) + " bytes");
          }
          addr = r.Word(address_size);
          op_index = 0;
          break;
        case DW_LNE_define_file: {
          const std::string_view name = r.CString();
          const uint64_t dir = r.Uleb();
          r.Uleb();
          r.Uleb();
          if (!r.ok() || r.pos() > end)
            return Malformed(kSection, at, "DW_LNE_define_file cut short");
          // Its directory is an index into the header's list, which files[] no longer holds:
          // the name alone (absolute names are the common case).
          (void)dir;
          files->emplace_back(name);
          break;
        }
        default:  // DW_LNE_set_discriminator, vendor opcodes: nothing a row keeps
          break;
      }
      if (!r.ok() || r.pos() > end) return Malformed(kSection, at, "extended opcode cut short");
      r.Skip(end - r.pos());
      continue;
    }
    switch (opcode) {
      case DW_LNS_copy:
        emit(false);
        break;
      case DW_LNS_advance_pc:
        advance(r.Uleb());
        break;
      case DW_LNS_advance_line:
        line += static_cast<uint64_t>(r.Sleb());
        break;
      case DW_LNS_set_file:
        file = r.Uleb();
        break;
      case DW_LNS_set_column:
        column = r.Uleb();
        break;
      case DW_LNS_const_add_pc:
        advance((255u - h.opcode_base) / h.line_range);
        break;
      case DW_LNS_fixed_advance_pc:
        addr += r.U16();
        op_index = 0;
        break;
      default:
        // negate_stmt, basic_block, prologue_end, epilogue_begin, set_isa and opcodes of later
        // versions: operands as the header says, nothing a row keeps.
        for (unsigned i = 0; i < h.opcode_lengths[opcode - 1]; ++i) (void)r.Uleb();
        break;
    }
    if (!r.ok()) return Malformed(kSection, at, "operand past the program's end");
  }
  return OkStatus();
}

// Puts rows in libdw's order (line_table.h: a stable sort by RowBefore). Programs hold sequences
// sorted within (but for a sequence's end, which RowBefore puts before the rows at its address)
// and out of order among them. Each sequence is put in order on its own first (for the usual
// case, the end moved before the rows at its address); then, ordered by their first rows,
// sequences that lie wholly before the next keep their rows as they are, and only those that
// overlap (the functions a linker discarded, all at address 0, say) are sorted among themselves.
// A stable sort restricted to a part of the rows orders it as the whole sort does, and rows of
// different clusters never tie: the result is the stable sort's.
void SortRows(std::vector<LineRow>* rows) {
  if (std::is_sorted(rows->begin(), rows->end(), RowBefore)) return;
  struct Sequence {
    size_t begin, end;
  };
  std::vector<Sequence> sequences;
  for (size_t i = 0, begin = 0; i < rows->size(); ++i) {
    if ((*rows)[i].end_sequence || i + 1 == rows->size()) {
      sequences.push_back({begin, i + 1});
      begin = i + 1;
    }
  }
  for (const Sequence& q : sequences) {
    auto b = rows->begin() + q.begin, e = rows->begin() + q.end;
    if (std::is_sorted(b, e, RowBefore)) continue;
    if ((e - 1)->end_sequence) {
      // The end after rows at its own address: before them.
      auto tail = e - 1;
      while (tail != b && (tail - 1)->addr == (e - 1)->addr) --tail;
      std::rotate(tail, e - 1, e);
    }
    if (!std::is_sorted(b, e, RowBefore)) std::stable_sort(b, e, RowBefore);
  }
  const std::vector<LineRow>& in = *rows;
  std::sort(sequences.begin(), sequences.end(), [&](const Sequence& a, const Sequence& b) {
    if (RowBefore(in[a.begin], in[b.begin])) return true;
    if (RowBefore(in[b.begin], in[a.begin])) return false;
    return a.begin < b.begin;
  });
  std::vector<LineRow> out;
  out.reserve(in.size());
  for (size_t i = 0; i < sequences.size();) {
    // The cluster from i: the sequences that start before all rows before them have ended.
    size_t j = i + 1;
    const LineRow* last = &in[sequences[i].end - 1];
    while (j < sequences.size() && !RowBefore(*last, in[sequences[j].begin])) {
      if (RowBefore(*last, in[sequences[j].end - 1])) last = &in[sequences[j].end - 1];
      ++j;
    }
    const size_t from = out.size();
    if (j > i + 1) {
      // In the program's order, then stably sorted: as the whole sort would place them.
      std::sort(sequences.begin() + i, sequences.begin() + j,
                [](const Sequence& a, const Sequence& b) { return a.begin < b.begin; });
    }
    for (size_t k = i; k < j; ++k) {
      out.insert(out.end(), in.begin() + sequences[k].begin, in.begin() + sequences[k].end);
    }
    if (j > i + 1) std::stable_sort(out.begin() + from, out.end(), RowBefore);
    i = j;
  }
  *rows = std::move(out);
}

}  // namespace

Result<LineTable> ReadLineTable(const Context& context, uint64_t offset, unsigned address_size,
                                std::optional<std::string_view> comp_dir, bool files_only) {
  const std::string_view section = context.section(SectionId::kLine);
  if (offset >= section.size()) return Malformed(kSection, offset, "table past the section's end");
  if (address_size != 4 && address_size != 8) {
    return DwarfError(ErrorKind::kUnsupported, kSection, offset, "address size not 4 or 8");
  }
  ByteReader unit(section.substr(offset), context.order());
  Header h;
  uint64_t length = unit.U32();
  if (length == 0xffffffffu) {
    h.offset_size = 8;
    length = unit.U64();
  } else if (length >= 0xfffffff0u) {
    return Malformed(kSection, offset, "reserved unit length");
  }
  if (!unit.ok() || length > unit.remaining()) {
    return Malformed(kSection, offset, "unit length past the section's end");
  }
  const uint64_t base = offset + unit.pos();
  ByteReader r(section.substr(base, length), context.order());
  LineTable t;
  h.version = t.version = r.U16();
  if (!r.ok()) return Malformed(kSection, base, "header cut short");
  if (h.version < 2 || h.version > 5) {
    return DwarfError(ErrorKind::kUnsupported, kSection, offset,
                      "line table version " + std::to_string(h.version) + " not read");
  }
  if (h.version >= 5) {
    const uint8_t line_address_size = r.U8();
    const uint8_t segment_selector_size = r.U8();
    if (r.ok() && (line_address_size != address_size || segment_selector_size != 0)) {
      return DwarfError(ErrorKind::kUnsupported, kSection, offset,
                        "address size " + std::to_string(line_address_size) + " / segment " +
                            std::to_string(segment_selector_size) + " not the unit's");
    }
  }
  const uint64_t header_length = r.Word(h.offset_size);
  if (!r.ok() || header_length > r.remaining()) {
    return Malformed(kSection, offset, "header length past the table's end");
  }
  const size_t program_start = r.pos() + header_length;
  h.min_inst_length = r.U8();
  if (h.version >= 4) h.max_ops = r.U8();
  r.U8();  // default_is_stmt: rows do not keep is_stmt
  h.line_base = static_cast<int8_t>(r.U8());
  h.line_range = r.U8();
  h.opcode_base = r.U8();
  if (!r.ok()) return Malformed(kSection, offset, "header cut short");
  if (h.line_range == 0 || h.opcode_base == 0 || h.max_ops == 0) {
    return Malformed(kSection, offset, "line_range, opcode_base or maximum operations is 0");
  }
  h.opcode_lengths = r.Bytes(h.opcode_base - 1u).data();
  if (!r.ok()) return Malformed(kSection, offset, "standard opcode lengths cut short");
  const Status files = h.version >= 5 ? ReadFilesV5(context, r, base, h, address_size, &t.files)
                                      : ReadFilesV4(r, base, comp_dir, &t.files);
  if (!files.ok()) return files.error();
  if (r.pos() > program_start) return Malformed(kSection, offset, "file names past the header");
  if (files_only) return t;
  r.Skip(program_start - r.pos());
  t.rows.reserve((length - program_start) / 3 + 16);
  if (Status s = RunProgram(r, base, h, address_size, &t.files, &t.rows); !s.ok()) {
    return std::move(s).error();
  }
  SortRows(&t.rows);
  if (!t.rows.empty()) t.rows.back().end_sequence = true;
  return t;
}

}  // namespace jitsym::dwarf
