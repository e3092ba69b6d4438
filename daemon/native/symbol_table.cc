// Reading ELF symbol tables and naming PLT entries (symbol_table.h).
#include "daemon/native/symbol_table.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>

#include "daemon/native/demangle.h"
#include "daemon/native/elf_file.h"
#include "daemon/native/symbol_names.h"
#include "daemon/util/flat_map.h"
#include "daemon/util/log.h"

namespace jitsym::native {

bool SymbolTable::Load(Elf* elf, bool dynamic) {
  const Elf64_Word want = dynamic ? SHT_DYNSYM : SHT_SYMTAB;
  bool any = false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != want || shdr.sh_entsize == 0) {
      continue;
    }
    Elf_Data* data = SectionData(scn);
    if (data == nullptr) continue;
    GElf_Shdr strtab{};
    if (Elf_Scn* str = elf_getscn(elf, shdr.sh_link); str && gelf_getshdr(str, &strtab)) {
      strtab_bytes_ += strtab.sh_size;
    }
    uint32_t file = kNoFile, file_size = 0;
    const size_t count = std::min<size_t>(shdr.sh_size / shdr.sh_entsize, 1u << 24);
    symbols_.reserve(symbols_.size() + count);
    // Names as long as the string table, rarely more (hostile tables share suffixes: bounded
    // by HasRoomFor), and room for the PLT's names after: one allocation, not a copy of all
    // names per doubling.
    names_.reserve(names_.size() + std::min<uint64_t>(strtab.sh_size, NamesBudget()) + (64 << 10));
    // The first symbol (its index) naming each string table offset, to share its name.
    FlatMap32<uint32_t> first_by_offset(count);
    for (size_t i = 1; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type == STT_FILE) {
        // Names the source of the local symbols after it (llvm-symbolizer shows it as the file
        // of a function without debug info).
        const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
        file = kNoFile;
        file_size = 0;
        const size_t len = name == nullptr ? 0 : std::strlen(name);
        if (len != 0 && len <= 0xffff && names_.size() + len + 1 <= 0xffffffffu) {
          file = static_cast<uint32_t>(names_.size());
          file_size = static_cast<uint32_t>(len);
          names_.append(name, len);
          names_.push_back('\0');
        }
        continue;
      }
      if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT && type != STT_NOTYPE) {
        continue;
      }
      if (sym.st_shndx == SHN_UNDEF ||
          (sym.st_shndx >= SHN_LORESERVE && sym.st_shndx != SHN_XINDEX)) {
        continue;
      }
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (name == nullptr || name[0] == '\0') continue;
      if (type == STT_NOTYPE && name[0] == '$') continue;  // mapping symbols
      any = true;
      // The version (in .symtab names made by .symver) and a clone suffix come off first: the
      // demangler reads neither, and the function is the same function.
      SymbolVersion version;
      const std::string_view unversioned = StripVersion(name, &version);
      const bool local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
      const bool mangled = name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
      const uint8_t facts = static_cast<uint8_t>(
          (local ? kLocal : 0) | (type == STT_FUNC || type == STT_GNU_IFUNC ? kFunction : 0) |
          (mangled ? kMangled : 0) | (static_cast<uint8_t>(version) << kVersionShift));
      const uint32_t sym_file = local ? file : kNoFile;
      const uint32_t sym_file_size = local ? file_size : 0;
      if (const uint32_t* first = first_by_offset.Find(sym.st_name)) {
        // Another symbol with this very string: its stored name, not another copy.
        const Symbol& n = symbols_[*first];
        symbols_.push_back({sym.st_value, sym.st_size, n.name, sym_file, n.name_size,
                            static_cast<uint16_t>(sym_file_size), n.clone_size, facts});
        continue;
      }
      const CloneSplit split = SplitClone(unversioned);
      const bool clone = !split.clone.empty() && split.clone.size() <= 0xff;
      std::string_view base = clone ? split.base : unversioned;
      if (base.size() > kMaxNameBytes) base = base.substr(0, kMaxNameBytes);
      const std::string_view clone_text = clone ? split.clone : std::string_view();
      if (!HasRoomFor(base.size() + clone_text.size() + 2)) {
        JITSYM_LOG(kWarning, "native: ", path_, ": symbol names past ", names_.size() >> 20,
                   " MiB from string tables of ", strtab_bytes_ >> 20,
                   " MiB; the rest of this symbol table is not read");
        return any;
      }
      if (!Add(sym.st_value, sym.st_size, base, clone_text, sym_file, sym_file_size, facts)) {
        return any;
      }
      first_by_offset.Insert(sym.st_name, static_cast<uint32_t>(symbols_.size() - 1));
    }
  }
  return any;
}

void SymbolTable::AddPltEntries(Elf* elf) {
  // x86: the PLT has no symbols; entry i (after the 16-byte header of .plt, or from the start
  // of .plt.sec where IBT splits it) jumps through relocation i of .rela.plt. perf and pprof
  // name such an address "function@plt"; so do we.
  GElf_Ehdr eh;
  if (gelf_getehdr(elf, &eh) == nullptr || (eh.e_machine != EM_X86_64 && eh.e_machine != EM_386)) {
    return;
  }
  GElf_Shdr rel_hdr, plt_hdr, sec_hdr, dynsym_hdr;
  Elf_Scn* rel = FindSection(elf, ".rela.plt", &rel_hdr);
  if (rel == nullptr) rel = FindSection(elf, ".rel.plt", &rel_hdr);
  Elf_Scn* plt = FindSection(elf, ".plt", &plt_hdr);
  Elf_Scn* sec = FindSection(elf, ".plt.sec", &sec_hdr);
  if (rel == nullptr || plt == nullptr || rel_hdr.sh_entsize == 0) return;
  Elf_Scn* dynsym = elf_getscn(elf, rel_hdr.sh_link);
  if (dynsym == nullptr || gelf_getshdr(dynsym, &dynsym_hdr) == nullptr) return;
  Elf_Data* rel_data = SectionData(rel);
  Elf_Data* sym_data = SectionData(dynsym);
  if (rel_data == nullptr || sym_data == nullptr) return;
  if (GElf_Shdr dynstr; Elf_Scn* str = elf_getscn(elf, dynsym_hdr.sh_link)) {
    if (gelf_getshdr(str, &dynstr) != nullptr) strtab_bytes_ += dynstr.sh_size;
  }
  const uint64_t entry = 16;
  const uint64_t first = sec != nullptr ? sec_hdr.sh_addr : plt_hdr.sh_addr + entry;
  const uint64_t end =
      sec != nullptr ? sec_hdr.sh_addr + sec_hdr.sh_size : plt_hdr.sh_addr + plt_hdr.sh_size;
  const size_t count = std::min<size_t>(rel_hdr.sh_size / rel_hdr.sh_entsize, 1u << 20);
  for (size_t i = 0; i < count && first + (i + 1) * entry <= end; ++i) {
    size_t sym_index = 0;
    if (rel_hdr.sh_type == SHT_RELA) {
      GElf_Rela r;
      if (gelf_getrela(rel_data, static_cast<int>(i), &r) == nullptr) break;
      sym_index = GELF_R_SYM(r.r_info);  // gelf converts 32-bit r_info
    } else {
      GElf_Rel r;
      if (gelf_getrel(rel_data, static_cast<int>(i), &r) == nullptr) break;
      sym_index = GELF_R_SYM(r.r_info);  // gelf converts 32-bit r_info
    }
    GElf_Sym sym;
    if (sym_index == 0 || gelf_getsym(sym_data, static_cast<int>(sym_index), &sym) == nullptr) {
      continue;
    }
    const char* name = elf_strptr(elf, dynsym_hdr.sh_link, sym.st_name);
    if (name == nullptr || name[0] == '\0') continue;
    // Demangled now: there are a few hundred, and "@plt" follows the demangled name.
    const std::string shown = Demangled(name, names_.size()) + "@plt";
    if (!HasRoomFor(shown.size() + 1) ||
        !Add(first + i * entry, entry, shown, {}, kNoFile, 0, kFunction)) {
      return;
    }
  }
}

bool SymbolTable::Add(uint64_t addr, uint64_t size, std::string_view base, std::string_view clone,
                      uint32_t file, uint32_t file_size, uint8_t facts) {
  if (names_.size() + base.size() + clone.size() + 2 > 0xffffffffu) return false;
  symbols_.push_back({addr, size, static_cast<uint32_t>(names_.size()), file,
                      static_cast<uint32_t>(base.size()), static_cast<uint16_t>(file_size),
                      static_cast<uint8_t>(clone.size()), facts});
  names_.append(base);
  names_.push_back('\0');
  if (!clone.empty()) {
    names_.append(clone);
    names_.push_back('\0');
  }
  return true;
}

void SymbolTable::Finish() {
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.addr < b.addr; });
  for (size_t i = 1; i < symbols_.size(); ++i) {
    if (symbols_[i].addr == symbols_[i - 1].addr) {
      symbols_[i - 1].facts &= static_cast<uint8_t>(~kAliased);
      symbols_[i].facts |= kAliased;
    }
  }
  symbols_.shrink_to_fit();
  demangled_ = std::make_unique<std::atomic<const std::string*>[]>(symbols_.size());
  choice_ = std::make_unique<std::atomic<uint32_t>[]>(symbols_.size());
  std::vector<uint64_t> keys(symbols_.size());
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = symbols_[i].addr;
  index_.Build(std::move(keys));
}

size_t SymbolTable::ChooseAlias(size_t last) const {
  std::lock_guard lock(mu_);
  if (const uint32_t c = choice_[last].load(std::memory_order_relaxed)) return c - 1;
  // The best by BetterAlias (symbol_names.h); of equals, the first in the symbol table: the
  // order of the table plays no part otherwise.
  auto facts = [this](size_t i) {
    const Symbol& s = symbols_[i];
    AliasFacts f;
    f.size = s.size;
    f.local = (s.facts & kLocal) != 0;
    f.function = (s.facts & kFunction) != 0;
    f.version = static_cast<SymbolVersion>((s.facts >> kVersionShift) & 3);
    f.name = (s.facts & kMangled) != 0 ? DemangledLocked(i) : Raw(s);
    f.clone = Clone(s);
    return f;
  };
  size_t first = last;
  while (first > 0 && symbols_[first - 1].addr == symbols_[last].addr) --first;
  size_t best = first;
  for (size_t j = first + 1; j <= last; ++j) {
    if (BetterAlias(facts(j), facts(best))) best = j;
  }
  choice_[last].store(static_cast<uint32_t>(best + 1), std::memory_order_release);
  return best;
}

std::string_view SymbolTable::DemangledLocked(size_t i) const {
  const Symbol& s = symbols_[i];
  std::atomic<const std::string*>& slot = demangled_[i];
  if (const std::string* d = slot.load(std::memory_order_relaxed)) return *d;
  std::unique_ptr<const std::string>& name = demangled_names_[s.name];
  if (name == nullptr) {
    name = std::make_unique<const std::string>(Demangled(Raw(s), demangled_bytes_));
    demangled_bytes_ += name->size();
  }
  slot.store(name.get(), std::memory_order_release);
  return *name;
}

void SymbolTable::Clear() {
  symbols_.clear();
  names_.clear();
  strtab_bytes_ = 0;
  demangled_.reset();
  choice_.reset();
  demangled_names_.clear();
  demangled_bytes_ = 0;
}

std::string SymbolTable::Demangled(std::string_view raw, uint64_t kept) const {
  if (raw.size() > kMaxNameBytes) raw = raw.substr(0, kMaxNameBytes);  // never a mangled name
  if (kept > NamesBudget()) return std::string(raw);
  std::string out = Demangle(raw, budget_);
  if (out.size() > kMaxNameBytes) out.resize(kMaxNameBytes);
  if (budget_ && budget_->TakeExhaustedReport()) {
    JITSYM_LOG(kWarning, "native: ", path_, ": ", budget_->Describe(),
               "; later names of this file stay mangled");
  }
  return out;
}

}  // namespace jitsym::native
