// Split DWARF (-gsplit-dwarf): the binary keeps a small skeleton unit per compilation unit (its
// address ranges, line table, DW_AT_dwo_name or, in the GNU extension to DWARF 4,
// DW_AT_GNU_dwo_name, and the dwo id), and the unit's DIEs (functions, inlined subroutines)
// live in a split unit in a .dwo file, or in a .dwp package that collects many.
//
// SplitUnits finds a skeleton's split unit for the module: in the package <binary>.dwp (or
// <debug file>.dwp) when there is one (a package wins over a .dwo, as in llvm-symbolizer: the
// .dwo files left behind may be older), else in the first .dwo file at the places
// DwoCandidates lists that holds a unit with the skeleton's dwo id. Each file is read with the
// companion checks (ReadCompanion: non-blocking open, a regular file, owned by root or by the
// binary's owner, a size bound, read into memory with pread, never mapped) and parsed by
// daemon/dwarf/ in memory (dwarf_file.h); nothing is written to disk. When no file holds the
// unit, the answer comes from the skeleton's line table and the symbol table, and says which
// files are missing or why they were refused.
#ifndef JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_
#define JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/unit.h"
#include "daemon/native/dwarf_file.h"

namespace jitsym::native {

// The paths a skeleton's .dwo is looked for at, in order: `dwo_name` itself when absolute, else
// `binary_dir`/`dwo_name` (beside the binary), `skeleton_dir`/`dwo_name` (beside the file the
// skeletons are read from: the binary or its debug file), then `comp_dir`/`dwo_name` (a relative
// `comp_dir` under `skeleton_dir`). Empty directories are skipped, duplicates dropped. Pure.
std::vector<std::string> DwoCandidates(std::string_view binary_dir, std::string_view skeleton_dir,
                                       std::string_view comp_dir, std::string_view dwo_name);

// The directory of the file open as `fd` (through /proc/self/fd), with a
// trailing '/'; "" when unknown.
std::string DirectoryOfFd(int fd);

// Earlier daemons copied split units into $TMPDIR/jitsymd-split-<pid>-XXXXXX (or /tmp), and
// one that was killed left its copies behind. RemoveLeftoverSplitCopies removes those of
// processes that are gone, owned by this effective uid, without following any symlink (run at
// start-up). Returns how many directories and bytes it removed.
struct RemovedCopies {
  size_t directories = 0;
  uint64_t bytes = 0;
};
RemovedCopies RemoveLeftoverSplitCopies();

// Reads a companion file of a module (a .dwo, a .dwp) into *bytes: opened without blocking (a
// FIFO), owned by root or by `owner` (the binary's owner: another user's file is not read for
// him), a regular file, at most `max_bytes`. False and *note (for a person) otherwise; *note is
// empty when the file is absent, cannot be opened or is another user's (logged): a miss never
// tells whether a path the asker may not see exists.
bool ReadCompanion(const std::string& path, uint32_t owner, uint64_t max_bytes, std::string* bytes,
                   std::string* note);

// A skeleton unit's split unit, or why there is none.
struct SplitUnit {
  std::optional<dwarf::Unit> unit;  // when found; it reads the skeleton, which must outlive it
  std::string missing;  // when not found: which files are missing or were not read, for a person
};

// Limits on what a module reads (every input is hostile): one .dwo, and all files together.
inline constexpr uint64_t kMaxDwoBytes = uint64_t{512} << 20;
inline constexpr uint64_t kMaxSplitBytes = uint64_t{2} << 30;

// The split units of one module's skeletons: the package, and the .dwo files read so far.
class SplitUnits {
 public:
  SplitUnits(const SplitUnits&) = delete;
  SplitUnits& operator=(const SplitUnits&) = delete;

  // For the module `binary` (open as `binary_fd`) whose skeletons are read from
  // `skeleton_file` (open as `skeleton_fd`: the binary or its debug file). Reads the package
  // <binary>.dwp (or <skeleton_file>.dwp) when there is one. `budget` (the module's) bounds
  // what is inflated and decoded, and must outlive this object.
  static std::unique_ptr<SplitUnits> Open(const std::string& binary, int binary_fd,
                                          const std::string& skeleton_file, int skeleton_fd,
                                          dwarf::Budget* budget);

  const std::string& dwp_file() const;  // "" when no package is read
  // Bytes held: the package's and the .dwo files' (their copies and what they inflated).
  size_t Bytes() const;

  // The split unit of `skeleton` (a skeleton unit of the module). Thread-safe.
  SplitUnit Find(const dwarf::Unit& skeleton);

 private:
  SplitUnits() = default;
  // One .dwo name's file: the first candidate that held a unit, or why none did.
  struct Dwo {
    std::unique_ptr<DwarfFile> file;
    std::string notes;  // what was refused or missing, for a person
  };
  // Reads the candidates of `dwo_name` until one holds a unit with `skeleton`'s dwo id; under
  // mu_.
  Dwo Read(const dwarf::Unit& skeleton, const std::vector<std::string>& candidates);

  std::string binary_, skeleton_file_;
  std::string binary_dir_, skeleton_dir_;
  uint32_t owner_ = 0;  // the binary's owner
  dwarf::Budget* budget_ = nullptr;
  std::unique_ptr<DwarfFile> dwp_;
  std::string dwp_note_;  // why <binary>.dwp is not read, when it is there but unreadable
  std::atomic<size_t> read_bytes_{0};
  std::mutex mu_;
  std::unordered_map<std::string, Dwo> dwos_;  // by dwo name
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_SPLIT_UNITS_H_
