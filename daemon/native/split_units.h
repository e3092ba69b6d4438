// Split DWARF (-gsplit-dwarf): the binary keeps a small skeleton unit per compilation unit (its
// address ranges, line table, DW_AT_dwo_name or, in the GNU extension to DWARF 4,
// DW_AT_GNU_dwo_name, and the dwo id), and the unit's DIEs (functions, inlined subroutines)
// live in a split unit in a .dwo file, or in a .dwp package that collects many.
//
// libdw (elfutils 0.188, Debian 12) finds a skeleton's .dwo itself when asked for its split
// unit, and links the two (addresses, strings and the line table then come from the skeleton):
// it tries DW_AT_dwo_name beside the file it reads the skeleton from, then under DW_AT_comp_dir,
// keeping the first file whose split unit has the skeleton's dwo id. It reads no .dwp package
// (dwarf_cu_dwp_section_info came with 0.191). This file computes the same candidate paths
// (pure: DwoCandidates), refuses to let libdw open one that is not a regular file (libdw's
// open() would block on a FIFO), then asks libdw, and says what is missing when it is.
#ifndef JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_
#define JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_

#include <elfutils/libdw.h>

#include <string>
#include <string_view>
#include <vector>

namespace jitsym::native {

class DwpPackage;

// The paths libdw tries for a skeleton's .dwo, in its order: `dwo_name` itself when absolute,
// else `skeleton_dir`/`dwo_name` (the directory of the file holding the skeleton; empty when
// unknown); then `comp_dir`/`dwo_name` (`comp_dir` relative: under `skeleton_dir`). Duplicates
// are dropped. Pure.
std::vector<std::string> DwoCandidates(std::string_view skeleton_dir, std::string_view comp_dir,
                                       std::string_view dwo_name);

// The directory libdw resolves a Dwarf's relative names against: that of the file open as `fd`
// (through /proc/self/fd, as libdw does), with a trailing '/'; "" when unknown.
std::string DirectoryOfFd(int fd);

// A skeleton unit and its split unit.
struct SplitUnit {
  bool found = false;
  Dwarf_Die die{};      // the split unit's CU DIE, when found
  std::string missing;  // when not found: which file is missing, for a person
};

// The split unit of the skeleton CU DIE `skeleton`, read from a Dwarf over the file `file`
// (`skeleton_dir` from DirectoryOfFd). With a package `dwp` (dwp_package.h; then the Dwarf reads
// the skeletons' copy in its directory, `skeleton_dir`), the unit is written from the package
// there first, so that libdw takes it before a .dwo under comp_dir. Not thread-safe for one
// Dwarf.
SplitUnit FindSplitUnit(Dwarf_Die* skeleton, const std::string& file,
                        const std::string& skeleton_dir, DwpPackage* dwp);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_
