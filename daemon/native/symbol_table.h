// The ELF symbols of one native module, sorted by address for lookup: functions and objects from
// .symtab or .dynsym (and MiniDebugInfo's .symtab), names stored without their version
// ("@GLIBC_2.28") and with a clone suffix (".part.0", ".cold") kept apart, each local symbol with
// the STT_FILE that precedes it, and "function@plt" names for x86 PLT entries, which have no
// symbols of their own. One symbol per address (symbol_names.h chooses). Filled while the module
// opens, read-only after Finish() but for what is worked out when first asked for, once, on
// whichever thread asks: a mangled name's demangled form, and which of the symbols that start at
// one address names it (compared by their demangled names). Demangling all 21,000 symbols of a
// C++ test binary, aliases first, was two thirds of its opening, for a lookup that needs one.
#ifndef JITSYM_DAEMON_NATIVE_SYMBOL_TABLE_H_
#define JITSYM_DAEMON_NATIVE_SYMBOL_TABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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
  // Sorts the symbols by address and builds the index.
  void Finish();

  bool empty() const { return symbols_.empty(); }
  size_t size() const { return symbols_.size(); }
  // The symbol whose range holds addr (or, size 0, the last one starting at or below it). Of
  // the symbols that start at one address, the best by BetterAlias (symbol_names.h), chosen the
  // first time one of them is found. Thread-safe.
  const Symbol* Find(uint64_t addr) const {
    ptrdiff_t i = index_.LastAtMost(addr);
    if (i < 0) return nullptr;
    if ((symbols_[i].facts & kAliased) != 0) {
      const uint32_t c = choice_[i].load(std::memory_order_acquire);
      i = c != 0 ? c - 1 : ChooseAlias(static_cast<size_t>(i));
    }
    const Symbol& s = symbols_[i];
    if (s.size != 0 && addr - s.addr >= s.size) return nullptr;
    return &s;
  }
  // The symbol's name, demangled (the first call for a symbol demangles it). Thread-safe.
  std::string_view Name(const Symbol& s) const {
    if ((s.facts & kMangled) == 0) return Raw(s);
    const std::string* d = demangled_[&s - symbols_.data()].load(std::memory_order_acquire);
    if (d != nullptr) return *d;
    std::lock_guard lock(mu_);
    return DemangledLocked(static_cast<size_t>(&s - symbols_.data()));
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
  // The symbols and their names as the symbol tables spell them (the index is not counted, nor
  // the demangled names, made as they are asked for and bounded by NamesBudget()). Every symbol
  // is kept, aliases too: they are chosen from when first asked for.
  size_t Bytes() const {
    return symbols_.capacity() * (sizeof(Symbol) + sizeof(demangled_[0]) + sizeof(choice_[0])) +
           names_.capacity();
  }

 private:
  static constexpr uint32_t kNoFile = 0xffffffffu;
  // kAliased: on the last of several symbols that start at one address (Find lands there).
  static constexpr uint8_t kLocal = 1, kFunction = 2, kMangled = 16, kAliased = 32,
                           kVersionShift = 2;

  std::string_view Raw(const Symbol& s) const {
    return std::string_view(names_.data() + s.name, s.name_size);
  }
  // Symbol i's name demangled (by another symbol naming the same string, or now), kept. With
  // mu_ held.
  std::string_view DemangledLocked(size_t i) const;
  // The best of the symbols that start where symbol `last` does (it is the last of them), kept
  // in choice_[last].
  size_t ChooseAlias(size_t last) const;
  // `raw` demangled within the module's budget (which bounds the time spent printing) while the
  // demangled names kept stay within NamesBudget(); past it, `raw` as it is. Cut at
  // kMaxNameBytes. Called with mu_ held, or before Finish().
  std::string Demangled(std::string_view raw, uint64_t kept) const;
  // What demangled names may take: kNamesBudget plus 8 times the string tables read; past it,
  // names stay as written. The names as written may take as much and twice the string tables
  // more (what distinct names can take); past that, the rest of the table is not read (a hostile
  // table makes thousands of symbols name suffixes of one long string).
  uint64_t NamesBudget() const { return kNamesBudget + 8 * strtab_bytes_; }
  bool HasRoomFor(size_t bytes) const {
    return names_.size() + bytes <= NamesBudget() + 2 * strtab_bytes_;
  }
  static constexpr size_t kNamesBudget = size_t{32} << 20;

  // Appends one symbol whose name is `base` + `clone`; false when names_ is full.
  bool Add(uint64_t addr, uint64_t size, std::string_view base, std::string_view clone,
           uint32_t file, uint32_t file_size, uint8_t facts);

  std::vector<Symbol> symbols_;
  KeyIndex index_;  // over symbols_[].addr
  std::string names_;
  uint64_t strtab_bytes_ = 0;  // of the string tables the symbols read name into
  std::string path_;
  DemangleBudget* budget_ = nullptr;

  // Per symbol, its demangled name once asked for (null before); the names, by their offset in
  // names_ (symbols naming one string share one), and what they take, under mu_.
  mutable std::unique_ptr<std::atomic<const std::string*>[]> demangled_;
  // At the last of several symbols starting at one address: the best of them + 1, once chosen.
  mutable std::unique_ptr<std::atomic<uint32_t>[]> choice_;
  mutable std::mutex mu_;
  mutable std::unordered_map<uint32_t, std::unique_ptr<const std::string>> demangled_names_;
  mutable uint64_t demangled_bytes_ = 0;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_SYMBOL_TABLE_H_
