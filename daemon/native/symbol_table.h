// The ELF symbols of one native module, sorted by address for lookup: functions and objects from
// .symtab or .dynsym (and MiniDebugInfo's .symtab), names stored demangled without their version
// ("@GLIBC_2.28") and with a clone suffix (".part.0", ".cold") kept apart, each local symbol with
// the STT_FILE that precedes it, and "function@plt" names for x86 PLT entries, which have no
// symbols of their own. One symbol per address (symbol_names.h chooses). Filled while the module
// opens, read-only after Finish().
#ifndef JITSYM_DAEMON_NATIVE_SYMBOL_TABLE_H_
#define JITSYM_DAEMON_NATIVE_SYMBOL_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/native/demangle.h"
#include "daemon/native/key_index.h"

typedef struct Elf Elf;

namespace jitsym::native {

class SymbolTable {
 public:
  struct Symbol {
    uint64_t addr, size;
    uint32_t name;  // offset into names_; the clone suffix follows the name's NUL
    uint32_t file;  // the STT_FILE before a local symbol (offset into names_), or kNoFile
    uint32_t name_size;
    uint16_t file_size;  // longer STT_FILE names are not kept
    uint8_t clone_size;  // 0: no clone suffix (longer suffixes stay part of the name)
    uint8_t facts;       // kLocal | kFunction | kMangled | version << kVersionShift
  };

  // The module's file (for log lines) and demangling budget (demangle.h), which must outlive the
  // table. Without a budget, demangling is unbounded.
  void SetContext(std::string path, DemangleBudget* budget) {
    path_ = std::move(path);
    budget_ = budget;
  }

  // Adds the symbols of the file's SHT_SYMTAB sections (SHT_DYNSYM ones when `dynamic`). True if
  // it found any. Symbols that name the same string of the string table share one stored name;
  // the names stored are bounded by what the string tables hold (see Demangled), and a name is
  // cut at kMaxNameBytes: a symbol table is written by anyone.
  bool Load(Elf* elf, bool dynamic);
  // No symbol name is longer (longer ones keep their first bytes).
  static constexpr size_t kMaxNameBytes = kMaxDemangledBytes;
  // x86: "function@plt" for each PLT entry, named through its .rela.plt (or .rel.plt) relocation.
  void AddPltEntries(Elf* elf);
  // Forgets every symbol (a debug file's full table replaces what the stripped binary had).
  void Clear();
  // Keeps one symbol per address (BetterAlias in symbol_names.h) and builds the index.
  void Finish();

  bool empty() const { return symbols_.empty(); }
  size_t size() const { return symbols_.size(); }
  // The symbol whose range holds addr (or, size 0, the last one starting at or below it).
  const Symbol* Find(uint64_t addr) const {
    const ptrdiff_t i = index_.LastAtMost(addr);
    if (i < 0) return nullptr;
    const Symbol& s = symbols_[i];
    if (s.size != 0 && addr - s.addr >= s.size) return nullptr;
    return &s;
  }
  std::string_view Name(const Symbol& s) const {
    return std::string_view(names_.data() + s.name, s.name_size);
  }
  // The symbol's name was mangled (Itanium "_Z", Rust "_R"): Name() is then fully qualified.
  bool Mangled(const Symbol& s) const { return (s.facts & kMangled) != 0; }
  // The clone suffix the symbol's name had (".part.0", ".constprop.0.isra.0"); empty if none.
  std::string_view Clone(const Symbol& s) const {
    if (s.clone_size == 0) return {};
    return std::string_view(names_.data() + s.name + s.name_size + 1, s.clone_size);
  }
  // The source file named by the symbol's STT_FILE; empty if none.
  std::string_view File(const Symbol& s) const {
    if (s.file == kNoFile) return {};
    return std::string_view(names_.data() + s.file, s.file_size);
  }
  // The symbols and their names (the index is not counted).
  size_t Bytes() const { return symbols_.capacity() * sizeof(Symbol) + names_.capacity(); }

 private:
  static constexpr uint32_t kNoFile = 0xffffffffu;
  static constexpr uint8_t kLocal = 1, kFunction = 2, kMangled = 16, kVersionShift = 2;

  // `raw` demangled (within the module's budget, which bounds the time spent printing) while the
  // names stored stay within NamesBudget(); past it, `raw` as it is. Cut at kMaxNameBytes.
  std::string Demangled(std::string_view raw);
  // What demangled names may take: kNamesBudget plus 8 times the string tables read. Past it,
  // names are stored as written, up to twice the string tables more (what distinct names can
  // take); past that, the rest of the table is not read (a hostile table makes thousands of
  // symbols name suffixes of one long string).
  uint64_t NamesBudget() const { return kNamesBudget + 8 * strtab_bytes_; }
  bool HasRoomFor(size_t bytes) const {
    return names_.size() + bytes <= NamesBudget() + 2 * strtab_bytes_;
  }
  static constexpr size_t kNamesBudget = size_t{32} << 20;

  // Appends one symbol whose name is `base` (demangled) + `clone`; false when names_ is full.
  bool Add(uint64_t addr, uint64_t size, const std::string& base, std::string_view clone,
           uint32_t file, uint32_t file_size, uint8_t facts);

  std::vector<Symbol> symbols_;
  KeyIndex index_;  // over symbols_[].addr
  std::string names_;
  uint64_t strtab_bytes_ = 0;  // of the string tables the symbols read name into
  std::string path_;
  DemangleBudget* budget_ = nullptr;
  // A symbol naming (string table, offset) stored before: the name and clone of its first one.
  struct Stored {
    uint32_t name, name_size;
    uint8_t clone_size;
  };
  std::unordered_map<uint64_t, Stored> stored_;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_SYMBOL_TABLE_H_
