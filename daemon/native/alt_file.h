// dwz's shared debug file: a debug file that dwz shrank names, in its .gnu_debugaltlink section,
// a second file holding the DIEs and strings several debug files share (DW_FORM_GNU_ref_alt,
// DW_FORM_GNU_strp_alt, DW_TAG_imported_unit). Debian's -dbg packages are made so.
//
// The file is found here, in libdw's order, opened with OpenElf's checks (regular file, read
// into memory: it is small, and a copy outlives the file), its build id checked against the
// link, and read as a DwarfFile that the module sets as its main file's supplementary file.
// When it is missing, references into it read as absent (the reader's kNotFound), and the
// module says so once in the log.
#ifndef JITSYM_DAEMON_NATIVE_ALT_FILE_H_
#define JITSYM_DAEMON_NATIVE_ALT_FILE_H_

#include <libelf.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/dwarf/budget.h"
#include "daemon/native/dwarf_file.h"
#include "daemon/native/elf_file.h"

namespace jitsym::native {

// A .gnu_debugaltlink section: the file's name (absolute, or relative to the debug file's
// directory) and its build id (hex). nullopt when malformed: no NUL, an empty name, or a build
// id shorter than 3 or longer than 64 bytes (libdw's bounds). Pure.
struct AltLink {
  std::string name;
  std::string build_id;
};
std::optional<AltLink> ParseAltLink(std::string_view section);

// The places an alt file is looked for, in libdw's order: the build id under
// `debug_root`/.build-id/, then the name (relative names under `debug_dir`). Pure.
std::vector<std::string> AltCandidates(const AltLink& link, std::string_view debug_root,
                                       std::string_view debug_dir);

class AltFile {
 public:
  AltFile() = default;
  AltFile(const AltFile&) = delete;
  AltFile& operator=(const AltFile&) = delete;
  ~AltFile();

  // Reads `debug_elf`'s .gnu_debugaltlink (from the file `debug_file`) and opens and reads the
  // file it names, within `budget`, when it is owned by root or by `owner` (the binary's). Without
  // such a section, nothing is done. A missing or refused file is logged once, with what was tried.
  void Open(Elf* debug_elf, const std::string& debug_file, uint32_t owner, dwarf::Budget& budget);

  // The alt file's DWARF, or null when there is none (or it was refused).
  const dwarf::Context* context() const { return dwarf_ ? &dwarf_->context() : nullptr; }
  const std::string& path() const { return path_; }  // the alt file read ("" when none)
  size_t Bytes() const;                              // the alt file's bytes held in memory

 private:
  std::string path_;
  OpenedElf file_;
  std::unique_ptr<DwarfFile> dwarf_;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_ALT_FILE_H_
