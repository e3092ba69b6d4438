// dwz's shared debug file: a debug file that dwz shrank names, in its .gnu_debugaltlink section,
// a second file holding the DIEs and strings several debug files share (DW_FORM_GNU_ref_alt,
// DW_FORM_GNU_strp_alt, DW_TAG_imported_unit). Debian's -dbg packages are made so.
//
// libdw (elfutils 0.188) finds that file itself on first use, with a plain open() and a mapping:
// a path a hostile binary names could be a FIFO (the open blocks a query thread forever) or a
// file its owner truncates while it is mapped (SIGBUS). So it is found here instead, opened with
// OpenElf's checks (regular file, read into memory: it is small, and a copy outlives the file)
// and its build id checked, and handed to libdw with dwarf_setalt before libdw could look; when
// it is missing, libdw gets a stand-in with no DIEs and no strings, so that it never looks on its
// own and such references read as absent.
#ifndef JITSYM_DAEMON_NATIVE_ALT_FILE_H_
#define JITSYM_DAEMON_NATIVE_ALT_FILE_H_

#include <elfutils/libdw.h>
#include <libelf.h>

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The stand-in's ELF image: sections libdw accepts, and no DIEs or strings.
std::string AltStandInImage();

// A Dwarf that some other Dwarf uses as its alt file, ended after it.
class AltDwarf {
 public:
  AltDwarf() = default;
  explicit AltDwarf(Dwarf* dwarf) : dwarf_(dwarf) {}
  AltDwarf(AltDwarf&& other) noexcept : dwarf_(other.dwarf_) { other.dwarf_ = nullptr; }
  AltDwarf& operator=(AltDwarf&& other) noexcept;
  AltDwarf(const AltDwarf&) = delete;
  AltDwarf& operator=(const AltDwarf&) = delete;
  ~AltDwarf();

 private:
  Dwarf* dwarf_ = nullptr;
};

class AltFile {
 public:
  AltFile() = default;
  AltFile(const AltFile&) = delete;
  AltFile& operator=(const AltFile&) = delete;
  ~AltFile();

  // Reads `debug_elf`'s .gnu_debugaltlink (from the file `debug_file`) and opens the file it
  // names. Without such a section, nothing is done and Attach() gives nothing. A missing or
  // refused file is logged once, with what was tried.
  void Open(Elf* debug_elf, const std::string& debug_file);
  // Makes `dwarf` (over the file given to Open) read its alt references from the alt file, or
  // from the stand-in; call before any DIE of `dwarf` is read. The result must outlive `dwarf`'s
  // use and is ended after it. Thread-safe.
  AltDwarf Attach(Dwarf* dwarf);

  const std::string& path() const { return path_; }  // the alt file read ("" when none)
  size_t Bytes() const;                              // the alt file's bytes held in memory

 private:
  bool linked_ = false;  // the debug file names an alt file
  std::string path_;
  OpenedElf file_;
  Elf* stand_in_ = nullptr;  // over stand_in_image_, when the alt file is missing
  std::string stand_in_image_;
  std::mutex mu_;  // libdw reads an Elf's section data lazily
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_ALT_FILE_H_
