// Test-only DWARF fixtures built from readable sources: sections written value by value with
// explicit forms, and an ELF image holding them (optionally compressed), so that a test says
// what each byte is instead of carrying blobs. Little-endian.
//
//   DwarfBuilder b(5);                                   // DWARF 5, 32-bit, 8-byte addresses
//   b.Abbrev(1, DW_TAG_compile_unit, true, {{DW_AT_name, DW_FORM_string}});
//   b.Abbrev(2, DW_TAG_subprogram, false, {{DW_AT_low_pc, DW_FORM_addr},
//                                          {DW_AT_high_pc, DW_FORM_data4}});
//   b.BeginUnit().Die(1).Str("a.c").Die(2).Addr(0x1000).U32(0x10).Null().EndUnit();
//   dwarf::Context ctx(b.sections());
#ifndef JITSYM_TESTS_UNIT_TESTING_DWARF_BUILDER_H_
#define JITSYM_TESTS_UNIT_TESTING_DWARF_BUILDER_H_

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/sections.h"

namespace jitsym::testing {

// Little-endian bytes appended value by value.
struct ByteWriter {
  std::string s;
  ByteWriter& U8(uint64_t v) {
    s.push_back(static_cast<char>(v));
    return *this;
  }
  ByteWriter& Fixed(uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  ByteWriter& Uleb(uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      if (v != 0) b |= 0x80;
      s.push_back(static_cast<char>(b));
    } while (v != 0);
    return *this;
  }
  ByteWriter& Sleb(int64_t v) {
    bool more = true;
    while (more) {
      uint8_t b = v & 0x7f;
      v >>= 7;
      more = !((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40)));
      if (more) b |= 0x80;
      s.push_back(static_cast<char>(b));
    }
    return *this;
  }
  ByteWriter& Str(std::string_view v) {
    s.append(v);
    s.push_back('\0');
    return *this;
  }
  void Patch(size_t at, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) s[at + i] = static_cast<char>(v >> (8 * i));
  }
  size_t size() const { return s.size(); }
};

class DwarfBuilder {
 public:
  struct Attr {
    uint16_t name;
    uint16_t form;
    int64_t implicit = 0;
  };

  explicit DwarfBuilder(uint16_t version = 5, bool dwarf64 = false, uint8_t address_size = 8)
      : version_(version), offset_size_(dwarf64 ? 8 : 4), address_size_(address_size) {}

  // An abbreviation of the current table (tables end at EndAbbrevs or when a unit begins).
  DwarfBuilder& Abbrev(uint64_t code, uint16_t tag, bool children, std::vector<Attr> attrs) {
    abbrev.Uleb(code).Uleb(tag).U8(children ? 1 : 0);
    for (const Attr& a : attrs) {
      abbrev.Uleb(a.name).Uleb(a.form);
      if (a.form == dwarf::DW_FORM_implicit_const) abbrev.Sleb(a.implicit);
    }
    abbrev.Uleb(0).Uleb(0);
    open_table_ = true;
    return *this;
  }
  // Ends the current abbreviation table; the next Abbrev starts a new one at the offset given.
  uint64_t EndAbbrevs() {
    if (open_table_) abbrev.Uleb(0);
    open_table_ = false;
    const uint64_t start = table_start_;
    table_start_ = abbrev.size();
    return start;
  }

  // A unit header (its abbreviation table: the one written last). `id`: the dwo id or type
  // signature; `type_offset` for type units.
  DwarfBuilder& BeginUnit(uint8_t type = dwarf::DW_UT_compile, uint64_t id = 0,
                          uint64_t type_offset = 0) {
    const uint64_t abbrev_offset = open_table_ ? EndAbbrevs() : last_table_;
    last_table_ = abbrev_offset;
    unit_start_ = info.size();
    if (offset_size_ == 8)
      info.Fixed(0xffffffffu, 4).Fixed(0, 8);
    else
      info.Fixed(0, 4);
    info.Fixed(version_, 2);
    if (version_ >= 5) {
      info.U8(type).U8(address_size_).Fixed(abbrev_offset, offset_size_);
      if (type == dwarf::DW_UT_skeleton || type == dwarf::DW_UT_split_compile) info.Fixed(id, 8);
      if (type == dwarf::DW_UT_type || type == dwarf::DW_UT_split_type) {
        info.Fixed(id, 8).Fixed(type_offset, offset_size_);
      }
    } else {
      info.Fixed(abbrev_offset, offset_size_).U8(address_size_);
    }
    return *this;
  }
  DwarfBuilder& EndUnit() {
    const size_t header = offset_size_ == 8 ? 12 : 4;
    const uint64_t length = info.size() - unit_start_ - header;
    if (offset_size_ == 8)
      info.Patch(unit_start_ + 4, length, 8);
    else
      info.Patch(unit_start_, length, 4);
    return *this;
  }
  uint64_t unit_start() const { return unit_start_; }
  uint64_t here() const { return info.size(); }

  // A DIE's code, then its values in the abbreviation's order.
  DwarfBuilder& Die(uint64_t code) {
    info.Uleb(code);
    return *this;
  }
  DwarfBuilder& Null() { return Die(0); }
  DwarfBuilder& U8(uint64_t v) {
    info.U8(v);
    return *this;
  }
  DwarfBuilder& U16(uint64_t v) {
    info.Fixed(v, 2);
    return *this;
  }
  DwarfBuilder& U32(uint64_t v) {
    info.Fixed(v, 4);
    return *this;
  }
  DwarfBuilder& U64(uint64_t v) {
    info.Fixed(v, 8);
    return *this;
  }
  DwarfBuilder& Uleb(uint64_t v) {
    info.Uleb(v);
    return *this;
  }
  DwarfBuilder& Sleb(int64_t v) {
    info.Sleb(v);
    return *this;
  }
  DwarfBuilder& Str(std::string_view v) {
    info.Str(v);
    return *this;
  }
  DwarfBuilder& Addr(uint64_t v) {
    info.Fixed(v, address_size_);
    return *this;
  }
  DwarfBuilder& Offset(uint64_t v) {
    info.Fixed(v, offset_size_);
    return *this;
  }
  // A DW_FORM_ref4 to be patched: its position.
  size_t Ref4Later() {
    const size_t at = info.size();
    info.Fixed(0, 4);
    return at;
  }
  void PatchRef4(size_t at, uint64_t unit_relative) { info.Patch(at, unit_relative, 4); }

  // A string of .debug_str, its offset.
  uint64_t AddStr(std::string_view v) {
    const uint64_t at = str.size();
    str.Str(v);
    return at;
  }

  dwarf::Sections sections() const {
    dwarf::Sections s;
    s[dwarf::SectionId::kInfo] = info.s;
    s[dwarf::SectionId::kAbbrev] = abbrev.s;
    s[dwarf::SectionId::kStr] = str.s;
    s[dwarf::SectionId::kLine] = line.s;
    s[dwarf::SectionId::kLineStr] = line_str.s;
    s[dwarf::SectionId::kRanges] = ranges.s;
    s[dwarf::SectionId::kRngLists] = rnglists.s;
    s[dwarf::SectionId::kAddr] = addr.s;
    s[dwarf::SectionId::kStrOffsets] = str_offsets.s;
    s[dwarf::SectionId::kTypes] = types.s;
    s.dwo = dwo;
    return s;
  }

  ByteWriter info, abbrev, str, line, line_str, ranges, rnglists, addr, str_offsets, types;
  bool dwo = false;

 private:
  uint16_t version_;
  uint8_t offset_size_;
  uint8_t address_size_;
  size_t unit_start_ = 0;
  bool open_table_ = false;
  uint64_t table_start_ = 0;
  uint64_t last_table_ = 0;
};

// An ELF64 little-endian relocatable image holding `sections` (name, bytes, sh_flags).
struct ElfSectionSpec {
  std::string name;
  std::string bytes;
  uint64_t flags = 0;
  uint32_t type = 1;  // SHT_PROGBITS
};

inline std::string ElfImageOf(const std::vector<ElfSectionSpec>& sections) {
  ByteWriter names;
  names.U8(0);
  std::vector<uint64_t> name_at;
  for (const ElfSectionSpec& s : sections) {
    name_at.push_back(names.size());
    names.Str(s.name);
  }
  const uint64_t shstrtab_name = names.size();
  names.Str(".shstrtab");
  ByteWriter out;
  out.s.assign(
      "\x7f"
      "ELF\x02\x01\x01",
      7);
  out.s.resize(16, '\0');
  out.Fixed(1, 2).Fixed(62, 2).Fixed(1, 4).Fixed(0, 8).Fixed(0, 8);
  const size_t shoff_at = out.size();
  out.Fixed(0, 8).Fixed(0, 4).Fixed(64, 2).Fixed(0, 2).Fixed(0, 2).Fixed(64, 2);
  out.Fixed(sections.size() + 2, 2).Fixed(sections.size() + 1, 2);
  std::vector<uint64_t> offsets;
  for (const ElfSectionSpec& s : sections) {
    offsets.push_back(out.size());
    out.s += s.bytes;
  }
  const uint64_t names_at = out.size();
  out.s += names.s;
  while (out.size() % 8 != 0) out.U8(0);
  out.Patch(shoff_at, out.size(), 8);
  out.s.append(64, '\0');  // the null section
  auto header = [&out](uint64_t name, uint32_t type, uint64_t flags, uint64_t offset,
                       uint64_t size) {
    out.Fixed(name, 4).Fixed(type, 4).Fixed(flags, 8).Fixed(0, 8).Fixed(offset, 8).Fixed(size, 8);
    out.Fixed(0, 4).Fixed(0, 4).Fixed(1, 8).Fixed(0, 8);
  };
  for (size_t i = 0; i < sections.size(); ++i) {
    header(name_at[i], sections[i].type, sections[i].flags, offsets[i], sections[i].bytes.size());
  }
  header(shstrtab_name, 3, 0, names_at, names.size());
  return out.s;
}

// `bytes` as an SHF_COMPRESSED section's contents (ELFCOMPRESS_ZLIB, ELF64), the header
// claiming `claimed` bytes (by default the truth).
inline std::string CompressedSection(std::string_view bytes, uint64_t claimed = UINT64_MAX,
                                     uint32_t type = 1) {
  uLongf n = compressBound(bytes.size());
  std::string z(n, '\0');
  compress2(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(bytes.data()),
            bytes.size(), 9);
  z.resize(n);
  ByteWriter h;
  h.Fixed(type, 4).Fixed(0, 4).Fixed(claimed == UINT64_MAX ? bytes.size() : claimed, 8).Fixed(1, 8);
  return h.s + z;
}

// `bytes` as a .zdebug section's contents ("ZLIB", the size big-endian, the stream).
inline std::string ZdebugSection(std::string_view bytes) {
  uLongf n = compressBound(bytes.size());
  std::string z(n, '\0');
  compress2(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(bytes.data()),
            bytes.size(), 9);
  z.resize(n);
  std::string out = "ZLIB";
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(uint64_t{bytes.size()} >> (8 * i)));
  return out + z;
}

}  // namespace jitsym::testing

#endif  // JITSYM_TESTS_UNIT_TESTING_DWARF_BUILDER_H_
