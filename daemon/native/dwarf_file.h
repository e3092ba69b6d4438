// One file's DWARF as daemon/dwarf/ reads it: the file's bytes (the image libelf holds of an
// opened file, or a copy in memory), its debug sections (compressed ones inflated within the
// module's budget) and the Context over them. The files of one module (its debug file, the dwz
// file, .dwo files, a .dwp package) are each one DwarfFile; the module links their contexts.
//
// Nothing here opens a file: the callers opened them with their checks (elf_file.h,
// split_units.h, alt_file.h).
#ifndef JITSYM_DAEMON_NATIVE_DWARF_FILE_H_
#define JITSYM_DAEMON_NATIVE_DWARF_FILE_H_

#include <libelf.h>

#include <memory>
#include <string>

#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/context.h"
#include "daemon/dwarf/elf_image.h"
#include "daemon/dwarf/sections.h"
#include "daemon/native/elf_file.h"
#include "daemon/util/result.h"

namespace jitsym::native {

class DwarfFile {
 public:
  DwarfFile(const DwarfFile&) = delete;
  DwarfFile& operator=(const DwarfFile&) = delete;

  // Over the file `file` (named `name` in errors): the mapping libelf made of it when it was
  // mapped (it must then outlive the result), else its bytes read from its descriptor (libelf's
  // elf_rawfile on a file it did not map would read it whole and lose the sections it had read).
  static Result<std::unique_ptr<DwarfFile>> FromElf(const OpenedElf& file, const std::string& name,
                                                    dwarf::Budget& budget);
  // Over bytes read into memory, which the result keeps.
  static Result<std::unique_ptr<DwarfFile>> FromBytes(std::string bytes, const std::string& name,
                                                      dwarf::Budget& budget);

  const std::string& name() const { return name_; }
  const dwarf::ElfImage& image() const { return image_; }
  const dwarf::Context& context() const { return *context_; }
  dwarf::Context& context() { return *context_; }
  // Whether the file has units (.debug_info, or .debug_info.dwo).
  bool has_units() const { return !context_->units().empty(); }
  // Bytes this object holds: a copy it owns, and the sections it inflated.
  size_t Bytes() const;

 private:
  DwarfFile() = default;
  static Result<std::unique_ptr<DwarfFile>> Load(std::unique_ptr<DwarfFile> f,
                                                 std::string_view bytes, dwarf::Budget& budget);

  std::string name_;
  std::string owned_;  // FromBytes' bytes
  dwarf::ElfImage image_;
  dwarf::LoadedSections sections_;
  std::unique_ptr<dwarf::Context> context_;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_DWARF_FILE_H_
