// Reading an ELF image's section table from bytes (elf_image.h).
#include "daemon/dwarf/elf_image.h"

#include <cstring>
#include <string>

namespace jitsym::dwarf {
namespace {

Error Malformed(const std::string& what, uint64_t offset) {
  return MakeError(ErrorKind::kMalformed, "ELF image: " + what, offset);
}

struct RawSection {
  uint32_t name, type, link;
  uint64_t flags, addr, offset, size;
};

RawSection ReadSectionHeader(ByteReader& r, bool is64) {
  RawSection s{};
  s.name = r.U32();
  s.type = r.U32();
  s.flags = r.Word(is64 ? 8 : 4);
  s.addr = r.Word(is64 ? 8 : 4);
  s.offset = r.Word(is64 ? 8 : 4);
  s.size = r.Word(is64 ? 8 : 4);
  s.link = r.U32();
  return s;
}

}  // namespace

const ElfSection* ElfImage::Find(std::string_view name) const {
  for (const ElfSection& s : sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Result<ElfImage> ReadElfImage(std::string_view bytes) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(),
                                       "\x7f"
                                       "ELF",
                                       4) != 0) {
    return MakeError(ErrorKind::kNotThisFormat, "not an ELF file (no \\x7fELF magic)");
  }
  const uint8_t elf_class = static_cast<uint8_t>(bytes[4]);
  const uint8_t data = static_cast<uint8_t>(bytes[5]);
  if ((elf_class != 1 && elf_class != 2) || (data != 1 && data != 2)) {
    return MakeError(ErrorKind::kNotThisFormat,
                     "not an ELF file of class 32 or 64, LSB or MSB (class " +
                         std::to_string(elf_class) + ", data " + std::to_string(data) + ")");
  }
  ElfImage image;
  image.is64 = elf_class == 2;
  image.order = data == 2 ? ByteOrder::kBig : ByteOrder::kLittle;
  const size_t word = image.is64 ? 8 : 4;
  ByteReader r(bytes, image.order);
  r.Skip(16);
  image.type = r.U16();
  image.machine = r.U16();
  r.U32();       // e_version
  r.Word(word);  // e_entry
  r.Word(word);  // e_phoff
  const uint64_t shoff = r.Word(word);
  r.U32();  // e_flags
  r.U16();  // e_ehsize
  r.U16();  // e_phentsize
  r.U16();  // e_phnum
  const uint16_t shentsize = r.U16();
  uint64_t shnum = r.U16();
  uint64_t shstrndx = r.U16();
  if (!r.ok()) return Malformed("header truncated", bytes.size());
  if (shoff == 0) return image;  // no section table: no sections
  const size_t min_entsize = image.is64 ? 64 : 40;
  if (shentsize < min_entsize) {
    return Malformed(
        "section header size " + std::to_string(shentsize) + " < " + std::to_string(min_entsize),
        image.is64 ? 58 : 46);
  }
  if (shoff >= bytes.size()) return Malformed("section table past the end", shoff);
  const uint64_t table_room = (bytes.size() - shoff) / shentsize;
  if (table_room == 0) return Malformed("section table past the end", shoff);
  // Section 0 holds the real count and name table index when they do not fit the header.
  ByteReader first(bytes.substr(shoff, shentsize), image.order);
  const RawSection zero = ReadSectionHeader(first, image.is64);
  if (shnum == 0) shnum = zero.size;
  if (shstrndx == 0xffff) shstrndx = zero.link;
  if (shnum > table_room) {
    return Malformed(std::to_string(shnum) + " sections do not fit in the image", shoff);
  }
  std::vector<RawSection> raw;
  raw.reserve(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    ByteReader e(bytes.substr(shoff + i * shentsize, shentsize), image.order);
    raw.push_back(ReadSectionHeader(e, image.is64));
  }
  std::string_view names;
  if (shstrndx != 0) {
    if (shstrndx >= shnum) return Malformed("section name table index out of range", shoff);
    const RawSection& s = raw[shstrndx];
    if (s.type == kShtNobits || s.offset > bytes.size() || s.size > bytes.size() - s.offset) {
      return Malformed("section name table outside the image", s.offset);
    }
    names = bytes.substr(s.offset, s.size);
  }
  image.sections.reserve(raw.size());
  for (uint64_t i = 0; i < raw.size(); ++i) {
    const RawSection& s = raw[i];
    const uint64_t header_at = shoff + i * shentsize;
    ElfSection out;
    out.type = s.type;
    out.flags = s.flags;
    out.addr = s.addr;
    out.offset = s.offset;
    out.size = s.size;
    if (i != 0 && !names.empty()) {
      if (s.name >= names.size())
        return Malformed("section name outside the name table", header_at);
      const size_t nul = names.find('\0', s.name);
      if (nul == std::string_view::npos) {
        return Malformed("section name does not end in the name table", header_at);
      }
      out.name = names.substr(s.name, nul - s.name);
    }
    if (i != 0 && s.type != kShtNobits && s.type != 0) {
      if (s.offset > bytes.size() || s.size > bytes.size() - s.offset) {
        return Malformed("section " + std::string(out.name) + " lies outside the image", header_at);
      }
      out.data = bytes.substr(s.offset, s.size);
    }
    image.sections.push_back(out);
  }
  return image;
}

}  // namespace jitsym::dwarf
