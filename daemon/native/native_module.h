// One ELF object opened for symbolization: its loadable segments (file offset <-> virtual
// address), its symbol tables (.symtab, .dynsym, MiniDebugInfo), and its DWARF (in the file or in
// a separate debug file), read lazily one compilation unit at a time into compact sorted tables.
//
// Thread safety: a NativeModule is shared by query threads. Everything built at Open() is
// immutable; a CU's tables are built once (claimed through an atomic state) and published
// through an atomic pointer, so lookups in CUs already read never wait. Prefetch() builds several
// CUs at once.
//
// The parts, one file each: elf_file (opening, sections, build-id), debug_file_locator (separate
// debug files, MiniDebugInfo), symbol_table (ELF symbols, PLT names), symbol_names (versions, clone
// suffixes, the choice among aliases), dwarf_file (one file's DWARF, read by daemon/dwarf/),
// alt_file (dwz's shared file), split_units (a skeleton's split unit, from a .dwo or a .dwp),
// cu_index (which CU holds an address; lazy and parallel building), cu_tables (one CU's tables),
// key_index (the search under every table), demangle. This class decides which part supplies
// what, and answers.
#ifndef JITSYM_DAEMON_NATIVE_NATIVE_MODULE_H_
#define JITSYM_DAEMON_NATIVE_NATIVE_MODULE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/dwarf/budget.h"
#include "daemon/native/alt_file.h"
#include "daemon/native/cu_index.h"
#include "daemon/native/cu_tables.h"
#include "daemon/native/demangle.h"  // Demangle(), part of this interface
#include "daemon/native/dwarf_file.h"
#include "daemon/native/elf_file.h"  // HexBuildId(), part of this interface
#include "daemon/native/key_index.h"
#include "daemon/native/split_units.h"
#include "daemon/native/symbol_table.h"

typedef struct Elf Elf;

namespace jitsym::native {

// Where separate debug files are looked for.
struct DebugSearch {
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};  // roots of .build-id trees
  std::vector<std::string> extra_files;  // debug files known for this build-id (debuginfod)
  // Bytes its compressed debug sections may inflate to, all its files together: the owner's
  // quota (limit-user-bytes), at most kMaxInflatedDebugBytes.
  uint64_t inflate_bytes = kMaxInflatedDebugBytes;
};

struct NativeFrame {
  std::string_view name;  // empty: unknown
  std::string_view file;  // empty: unknown
  uint32_t line = 0;
  uint32_t column = 0;
};

struct NativeAnswer {
  bool found = false;
  std::string_view name;  // the outermost (physical) function: symbol table, else DWARF
  // The symbol's clone suffix (".part.0", ".cold", ...) when addr is in a compiler-made copy of
  // the function; `name` is then the function's own name (the demangled symbol name when it is
  // mangled, else DWARF's, else the symbol's without the suffix).
  std::string_view clone;
  uint64_t start = 0;  // its start address (virtual) and size, when known
  uint64_t size = 0;
  std::vector<NativeFrame> frames;  // innermost first; views into the module's tables
  // The DWARF of addr's unit is split and its split part could not be read: which file is
  // missing, for a person (then there are no inlined frames). Empty otherwise.
  std::string_view missing;
};

class NativeModule {
 public:
  ~NativeModule();
  NativeModule(const NativeModule&) = delete;
  NativeModule& operator=(const NativeModule&) = delete;

  // Opens an ELF file. nullptr and *error set ("PATH: not an ELF file", ...) on failure.
  static std::shared_ptr<NativeModule> Open(const std::string& path, const DebugSearch& search,
                                            std::string* error);

  const std::string& path() const { return path_; }
  const std::string& build_id() const { return build_id_; }  // hex; empty if none
  // The binary's owner: its companion files count only when they are his or root's, and a
  // lookup by build id is answered from it only for him or when it is root's.
  uint32_t owner() const { return owner_; }
  // Where the DWARF came from ("" when there is none): the file itself or a debug file.
  const std::string& debug_file() const { return debug_file_; }
  // The DWARF package split units are read from ("" when none is used).
  const std::string& dwp_file() const { return split_ ? split_->dwp_file() : empty_; }
  bool has_dwarf() const { return dwarf_ != nullptr; }
  // What reading this module's DWARF has cost so far (bytes inflated, DIEs decoded).
  const dwarf::Budget& dwarf_budget() const { return *budget_; }
  // A file it maps (the binary, its debug file) shrank under it: pages past the new end read as
  // zeros (mapping_guard.h), so the module cache opens the files again.
  bool damaged() const { return main_.guard.faults() != 0 || debug_.guard.faults() != 0; }
  size_t symbol_count() const { return symbols_.size(); }
  // Stripped: no full symbol table (.symtab, MiniDebugInfo's, a debug file's) and no DWARF;
  // at most its dynamic symbols name anything.
  bool stripped() const { return !full_symbols_ && dwarf_ == nullptr; }
  // Why the module's DWARF was not read although it has some (a bound it exceeds); "" else.
  const std::string& dwarf_refusal() const { return dwarf_refusal_; }

  // A file offset (as in /proc/<pid>/maps, perf's dso offsets) -> virtual address, through the
  // PT_LOAD segment that contains it.
  std::optional<uint64_t> FileOffsetToAddress(uint64_t offset) const;

  // Symbolizes a virtual address. Thread-safe.
  void Symbolize(uint64_t addr, NativeAnswer* out);

  // Reads ahead the tables of the CUs that `addrs` (virtual addresses, in any order) fall in and
  // that are not read yet, on this thread and up to `extra_threads` more. A first batch over a
  // large binary touches most of its CUs, which Symbolize would read one after the other.
  // Thread-safe; returns when they are built.
  void Prefetch(const std::vector<uint64_t>& addrs, unsigned extra_threads);
  // CUs not read yet (nor being read): once it is below 2, Prefetch has nothing to do.
  size_t unread_cus() const { return cus_.unread(); }

  // Bytes held (tables read so far, symbol tables, the debug sections read and inflated).
  size_t Bytes() const { return bytes_ + cus_.TablesBytes() + (split_ ? split_->Bytes() : 0); }

 private:
  struct Segment {
    uint64_t vaddr, memsz, offset, filesz;
  };

  NativeModule() = default;
  void LoadMiniDebugInfo(Elf* elf);
  bool OpenDwarf(Elf* main, const DebugSearch& search);
  bool InSegment(uint64_t addr) const;

  std::string path_;
  std::string build_id_;
  uint32_t owner_ = 0;
  std::string debug_file_;
  std::string dwarf_refusal_;
  bool full_symbols_ = false;  // a .symtab was read (stripped())
  std::vector<Segment> segments_;
  // What demangling may cost this module, symbols and debug info together (demangle.h);
  // declared before what charges it.
  DemangleBudget demangle_;
  SymbolTable symbols_;

  // Owned libelf handles and their file descriptors.
  OpenedElf main_;         // the binary
  OpenedElf debug_;        // its separate debug file, when the DWARF is there
  std::string minidebug_;  // decompressed .gnu_debugdata (libelf reads it in place)
  Elf* mini_elf_ = nullptr;
  // What reading the DWARF of this module may cost (its files together): inflation is bounded
  // as CompressedDebugRefusal bounds what a file may claim (elf_file.h), by the owner's quota
  // (DebugSearch::inflate_bytes). Made at Open.
  std::optional<dwarf::Budget> budget_;
  std::unique_ptr<DwarfFile> dwarf_;  // the DWARF of the binary or of its debug file
  AltFile alt_;                       // dwz's shared file, when the debug file names one
  // Split DWARF: where skeletons' split units come from; null without skeleton units.
  std::unique_ptr<SplitUnits> split_;
  static inline const std::string empty_;

  CuIndex cus_;       // over dwarf_ (empty without DWARF)
  size_t bytes_ = 0;  // set by Open(): all but the CU tables, which cus_ counts
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_NATIVE_MODULE_H_
