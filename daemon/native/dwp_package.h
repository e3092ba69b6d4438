// DWARF package files (.dwp: `dwp`, `llvm-dwp`), read for libdw, which before elfutils 0.191 reads
// no .dwp but finds a skeleton's .dwo by path. A package holds the split units of many .dwo
// files, each one's contributions to the .dwo sections listed in the unit index
// (.debug_cu_index; DWARF 5 section 7.3.5, and the GNU version 2 that DWARF 4 packages use):
//
//   header   version (u32 2, or u16 5 + u16 0), columns N, units U, slots S (u32 each)
//   S u64    dwo ids (hash table), S u32 row numbers (1-based; 0 = empty slot)
//   N u32    the section id of each column
//   U*N u32  offsets of each unit's contributions, then U*N u32 sizes
//
// DwpPackage writes one unit's contributions as a .dwo file of its own (with only the strings it
// uses) where split_units.h asks: in its private directory, at the skeleton's DW_AT_dwo_name,
// where libdw then finds and links it like any .dwo; WriteDebugSections writes the copy of the
// skeletons' sections libdw reads there (it looks for a .dwo beside the file it reads).
// Every input is hostile: the index is checked against the sections before anything is cut.
#ifndef JITSYM_DAEMON_NATIVE_DWP_PACKAGE_H_
#define JITSYM_DAEMON_NATIVE_DWP_PACKAGE_H_

#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/native/elf_file.h"

namespace jitsym::native {

// One unit of a package index: its dwo id and its contributions, by section id.
struct DwpUnit {
  uint64_t id = 0;
  struct Part {
    uint32_t section = 0;  // DW_SECT_* (of the index's version)
    uint32_t offset = 0, size = 0;
  };
  std::vector<Part> parts;
};
struct DwpIndex {
  uint32_t version = 0;  // 2 (GNU, DWARF 4) or 5
  std::vector<DwpUnit> units;
};

// Parses a .debug_cu_index section (pure). nullopt and *error ("offset N: ...") when malformed.
std::optional<DwpIndex> ParseDwpIndex(std::string_view bytes, bool big_endian, std::string* error);

// The .dwo section a column holds, for the index's version; empty for one not read.
std::string_view DwpSectionName(uint32_t version, uint32_t section);

// One unit's strings: its .debug_str_offsets.dwo contribution `offsets` (with the DWARF 5
// header when `header`) rewritten into *new_offsets to point into *new_strings, which holds
// only the strings it names from the package's `strings`; a unit's .dwo then does not carry
// the whole package's strings. False when an offset is past `strings` or the contribution is
// malformed or 64-bit (then the whole table is used). Pure.
bool CompactStrings(std::string_view offsets, std::string_view strings, bool big_endian,
                    bool header, std::string* new_offsets, std::string* new_strings);

// Whether `name` (a DW_AT_dwo_name) can be placed under a directory: relative, no "..", no
// empty component, not too long. Pure.
bool SafeRelativeName(std::string_view name);

class DwpPackage {
 public:
  ~DwpPackage() { elf_.Close(); }
  DwpPackage(const DwpPackage&) = delete;
  DwpPackage& operator=(const DwpPackage&) = delete;

  // Opens a package (OpenElf's checks: read into memory, never mapped) and its index. nullptr
  // and *error on failure.
  static std::unique_ptr<DwpPackage> Open(const std::string& path, std::string* error);

  const std::string& path() const { return path_; }
  // Bytes of the package's sections held in memory.
  size_t Bytes() const;

  // Writes the new file `out` (O_EXCL) as a .dwo holding the unit `id`. False (and *error) when
  // the package has no such unit or writing fails; the bytes written are added to *written.
  // Thread-safe (const).
  bool WriteUnit(uint64_t id, const std::string& out, size_t* written, std::string* error) const;

 private:
  DwpPackage() = default;
  struct Section {
    std::string name;
    const char* data = nullptr;
    size_t size = 0;
  };
  const Section* Find(std::string_view name) const;

  std::string path_;
  OpenedElf elf_;
  unsigned char elf_class_ = 0, elf_data_ = 0;
  uint16_t machine_ = 0;
  DwpIndex index_;
  std::unordered_map<uint64_t, size_t> by_id_;  // dwo id -> index_.units
  std::vector<Section> sections_;               // the package's .dwo sections
};

// Writes the .debug_* sections of `elf` (the skeletons' file) to the new file `out` as an ELF
// file of their own (what libdw needs to read them); false and *error on failure.
bool WriteDebugSections(Elf* elf, const std::string& out, std::string* error);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_DWP_PACKAGE_H_
