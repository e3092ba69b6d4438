// Split DWARF (-gsplit-dwarf): the binary keeps a small skeleton unit per compilation unit (its
// address ranges, line table, DW_AT_dwo_name or, in the GNU extension to DWARF 4,
// DW_AT_GNU_dwo_name, and the dwo id), and the unit's DIEs (functions, inlined subroutines)
// live in a split unit in a .dwo file, or in a .dwp package that collects many.
//
// libdw (elfutils 0.188, Debian 12) links a skeleton to its split unit itself when asked
// (dwarf_cu_info): it opens <its debugdir>/<dwo_name>, then <comp_dir>/<dwo_name>, with a plain
// open() (a FIFO blocks it) and maps the file (one its owner truncates raises SIGBUS). So libdw
// never opens a user's path here. For a module with skeleton units, SplitUnits makes a private
// 0700 directory and a copy of the skeletons' debug sections in it, which libdw then reads: its
// debugdir is that directory. Before libdw is asked for a split unit, the unit's file is put
// there at its DW_AT_dwo_name: the unit cut from a .dwp package, or a .dwo read by this code
// (non-blocking open, regular file, size limit, read with pread into memory, never mapped) and
// written there; it is checked to hold the skeleton's dwo id as libdw checks it, so libdw takes
// it and looks no further. When no copy can be placed, libdw is not asked: the answer comes
// from the skeleton's line table and the symbol table, and says which files are missing. An
// absolute DW_AT_dwo_name cannot be redirected (libdw opens it as it is): it is read only when
// root alone can change it (file_trust.h). Reads no .debug_tu_index.
#ifndef JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_
#define JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_

#include <elfutils/libdw.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/native/elf_file.h"

namespace jitsym::native {

class DwpPackage;

// The paths a skeleton's .dwo is looked for at, in order: `dwo_name` itself when absolute, else
// `binary_dir`/`dwo_name` (beside the binary), `skeleton_dir`/`dwo_name` (beside the file the
// skeletons are read from: the binary or its debug file), then `comp_dir`/`dwo_name` (a relative
// `comp_dir` under `skeleton_dir`). Empty directories are skipped, duplicates dropped. Pure.
std::vector<std::string> DwoCandidates(std::string_view binary_dir, std::string_view skeleton_dir,
                                       std::string_view comp_dir, std::string_view dwo_name);

// The directory of the file open as `fd` (through /proc/self/fd, as libdw finds it), with a
// trailing '/'; "" when unknown.
std::string DirectoryOfFd(int fd);

// The private directories of split-unit copies are $TMPDIR/jitsymd-split-<pid>-XXXXXX (or under
// /tmp). A daemon that is killed leaves its copies behind (hundreds of MiB for a large split
// binary, and a user can make it crash): at start-up, RemoveLeftoverSplitCopies removes those
// of processes that are gone, owned by this effective uid, without following any symlink.
// Returns how many directories and bytes it removed.
struct RemovedCopies {
  size_t directories = 0;
  uint64_t bytes = 0;
};
RemovedCopies RemoveLeftoverSplitCopies();

// Whether `dwarf` has a skeleton unit (a split DWARF build). Reads unit headers only (libdw
// keeps them for the walk that follows); opens nothing.
bool HasSkeletonUnits(Dwarf* dwarf);

// A skeleton unit and its split unit.
struct SplitUnit {
  bool found = false;
  Dwarf_Die die{};      // the split unit's CU DIE, when found
  std::string missing;  // when not found: which files are missing or were not read, for a person
};

// Limits on what a module copies (every input is hostile): one .dwo, and all copies together.
inline constexpr uint64_t kMaxDwoBytes = uint64_t{512} << 20;
inline constexpr uint64_t kMaxCopiedBytes = uint64_t{2} << 30;

// The split units of one module's skeletons: the private directory, the skeletons' copy libdw
// reads, the package, and the copies placed so far (all removed with this object, which must
// outlive the Dwarf over skeletons()).
class SplitUnits {
 public:
  ~SplitUnits();
  SplitUnits(const SplitUnits&) = delete;
  SplitUnits& operator=(const SplitUnits&) = delete;

  // For the module `binary` whose skeletons are read from `source` (the file `skeleton_file`,
  // open as `skeleton_fd`; the binary's own descriptor is `binary_fd`). Makes the directory
  // under $TMPDIR (or /tmp), copies the skeletons' debug sections there, and opens the package
  // <binary>.dwp (or <skeleton_file>.dwp) when there is one. nullptr and *error on failure.
  static std::unique_ptr<SplitUnits> Open(const std::string& binary, int binary_fd,
                                          const std::string& skeleton_file, int skeleton_fd,
                                          Elf* source, std::string* error);

  Elf* skeletons() const { return skeletons_.elf; }  // what libdw is to read, from the directory
  int skeletons_fd() const { return skeletons_.fd; }
  const std::string& dwp_file() const;             // "" when no package is read
  const std::string& dir() const { return dir_; }  // with a trailing '/'
  // Bytes held: the package's sections, the skeletons' copy and the copies placed (libdw maps
  // them: the module cache's budget counts them).
  size_t Bytes() const;

  // The split unit of the skeleton CU DIE `skeleton`, from a Dwarf over skeletons(). Places its
  // file first (or refuses, then libdw is not asked). Thread-safe for different Dwarf handles
  // over the same copy; not for one Dwarf (the caller serializes).
  SplitUnit Find(Dwarf_Die* skeleton);

 private:
  SplitUnits() = default;
  // One placed name: the dwo ids of the split units its file holds, or why nothing is there.
  struct Placed {
    std::vector<uint64_t> ids;
    std::string notes;  // what was refused or missing, for a person
  };
  // Puts a file at <dir_>/<dwo_name> holding `id` (see the file comment); under mu_.
  Placed Place(std::string_view dwo_name, uint64_t id, const std::vector<std::string>& candidates);
  bool MakeParents(std::string_view dwo_name, std::string* error);
  // Reads `path` into memory with the checks above; false and *note when refused or absent.
  bool ReadDwo(const std::string& path, std::string* bytes, std::string* note);
  void Forget(const std::string& path);  // unlinks a file written here

  std::string binary_, skeleton_file_;
  std::string binary_dir_, skeleton_dir_;
  std::string dir_;
  OpenedElf skeletons_;
  std::unique_ptr<DwpPackage> dwp_;
  std::string dwp_note_;  // why <binary>.dwp is not read, when it is there but unreadable
  size_t fixed_bytes_ = 0;
  std::atomic<size_t> copied_bytes_{0};
  std::mutex mu_;
  std::unordered_map<std::string, Placed> placed_;  // by dwo name
  std::vector<std::string> written_;                // files and directories made, in order
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_
