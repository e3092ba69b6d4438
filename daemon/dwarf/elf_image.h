// The section table of an ELF image in memory: what the DWARF reader needs of an ELF file (its
// byte order, and its sections by name), read from bytes alone. Tests, fuzz targets and the
// processes that map a file they were handed read sections through this; a caller with a
// section table of its own fills Sections (sections.h) directly instead.
//
//   ELF header   e_ident (magic, class 32/64, data LSB/MSB), ..., e_shoff, e_shentsize,
//                e_shnum (0: in section 0's sh_size), e_shstrndx (0xffff: in section 0's sh_link)
//   section header table: e_shnum entries of e_shentsize bytes (40 or 64 bytes used)
//
// Pure: no file I/O. Every section's bytes lie inside the image (SHT_NOBITS ones have none) and
// every name ends inside the section name table, or the image is malformed.
#ifndef JITSYM_DAEMON_DWARF_ELF_IMAGE_H_
#define JITSYM_DAEMON_DWARF_ELF_IMAGE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

inline constexpr uint32_t kShtNobits = 8;
inline constexpr uint64_t kShfCompressed = 0x800;
inline constexpr uint32_t kElfCompressZlib = 1;
inline constexpr uint32_t kElfCompressZstd = 2;

struct ElfSection {
  std::string_view name;
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;      // sh_size (of the bytes in the file, compressed or not)
  std::string_view data;  // the section's bytes in the image; empty for SHT_NOBITS
};

struct ElfImage {
  bool is64 = true;
  ByteOrder order = ByteOrder::kLittle;
  uint16_t type = 0;
  uint16_t machine = 0;
  std::vector<ElfSection> sections;  // in table order; [0] is the null section

  // The first section named `name`, or null.
  const ElfSection* Find(std::string_view name) const;
};

// kNotThisFormat when `bytes` does not start as an ELF file of class 32 or 64 and byte order LSB
// or MSB; kMalformed (with the offset) when its section table or a section lies outside it.
Result<ElfImage> ReadElfImage(std::string_view bytes);

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_ELF_IMAGE_H_
