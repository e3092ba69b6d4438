// NativeModule: opening a module (which parts come from where) and answering an address from its
// symbol table and CU tables (native_module.h). The parts live beside it: elf_file (ELF and
// sections), debug_file_locator (separate debug files, MiniDebugInfo), symbol_table, cu_index and
// cu_tables (DWARF), demangle.
#include "daemon/native/native_module.h"

#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "daemon/native/debug_file_locator.h"
#include "daemon/native/elf_file.h"
#include "daemon/native/split_units.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

constexpr uint32_t kNone = CuTables::kNone;

}  // namespace

NativeModule::~NativeModule() {
  // What reads the files' bytes before the files (cus_, which reads nothing once built, goes
  // after this body).
  split_.reset();
  dwarf_.reset();
  debug_.Close();
  if (mini_elf_) elf_end(mini_elf_);
  main_.Close();
}

std::shared_ptr<NativeModule> NativeModule::Open(const std::string& path, const DebugSearch& search,
                                                 std::string* error) {
  InitElf();
  OpenedElf main = OpenElf(path, error, ElfRead::kMap);
  if (main.elf == nullptr) return nullptr;
  std::shared_ptr<NativeModule> m(new NativeModule());
  m->budget_.emplace(dwarf::BudgetLimits{std::min(search.inflate_bytes, kMaxInflatedDebugBytes),
                                         uint64_t{1} << 32});
  m->path_ = path;
  m->main_ = std::move(main);
  if (struct stat st{}; ::fstat(m->main_.fd, &st) == 0) m->owner_ = st.st_uid;
  GElf_Ehdr ehdr;
  gelf_getehdr(m->main_.elf, &ehdr);
  if (ehdr.e_type == ET_REL) {
    *error = path + ": a relocatable object (.o) has no addresses to symbolize";
    return nullptr;
  }
  size_t phnum = 0;
  if (elf_getphdrnum(m->main_.elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum && i < 4096; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(m->main_.elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) {
        continue;
      }
      m->segments_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz});
    }
  }
  m->build_id_ = HexBuildId(ReadBuildId(m->main_.elf));
  m->symbols_.SetContext(path, &m->demangle_);
  m->cus_.UseDemangleBudget(&m->demangle_);
  m->full_symbols_ = m->symbols_.Load(m->main_.elf, false);
  if (!m->full_symbols_) {
    // No .symtab: the dynamic symbols, and MiniDebugInfo's symbols where there is one.
    m->symbols_.Load(m->main_.elf, true);
    m->LoadMiniDebugInfo(m->main_.elf);
  }
  m->OpenDwarf(m->main_.elf, search);
  m->symbols_.AddPltEntries(m->main_.elf);
  m->symbols_.Finish();
  size_t bytes =
      sizeof(NativeModule) + m->symbols_.Bytes() + m->minidebug_.capacity() + m->cus_.IndexBytes();
  // The debug sections read (mapped, or inflated into memory).
  if (m->dwarf_ != nullptr) {
    bytes += DebugSectionBytes(m->debug_.elf ? m->debug_.elf : m->main_.elf) + sizeof(DwarfFile);
  }
  bytes += m->alt_.Bytes();
  m->bytes_ = bytes;
  return m;
}

void NativeModule::LoadMiniDebugInfo(Elf* elf) {
  std::optional<std::string> image = ReadMiniDebugInfo(elf, path_);
  if (!image) return;
  minidebug_ = std::move(*image);
  mini_elf_ = elf_memory(minidebug_.data(), minidebug_.size());
  if (mini_elf_ == nullptr || elf_kind(mini_elf_) != ELF_K_ELF) {
    JITSYM_LOG(kWarning, path_, ": .gnu_debugdata: not an ELF file");
    if (mini_elf_) elf_end(mini_elf_);
    mini_elf_ = nullptr;
    return;
  }
  full_symbols_ = symbols_.Load(mini_elf_, false);
}

bool NativeModule::OpenDwarf(Elf* main, const DebugSearch& search) {
  Elf* source = nullptr;
  if (HasDwarf(main)) {
    source = main;
    debug_file_ = path_;
  } else if (OpenedElf d = OpenDebugFile(path_, main, owner_, build_id_, search, &debug_file_);
             d.elf != nullptr) {
    debug_ = std::move(d);
    source = d.elf;
    if (symbols_.empty() || FindSection(main, ".symtab") == nullptr) {
      // A stripped binary: the debug file's full symbol table names local functions too.
      symbols_.Clear();
      full_symbols_ = symbols_.Load(debug_.elf, false);
      if (!full_symbols_) {
        symbols_.Load(main, true);
        if (mini_elf_) full_symbols_ = symbols_.Load(mini_elf_, false);
      }
    }
  }
  if (source == nullptr) return false;
  int fd = source == debug_.elf ? debug_.fd : main_.fd;
  // Compressed debug sections are inflated when the file is read: a file whose sections claim
  // far more than real DWARF compresses to is refused before any is (elf_file.h).
  if (const std::string refusal =
          CompressedDebugRefusal(CompressedDebugSections(source), budget_->limits().inflated_bytes);
      !refusal.empty()) {
    dwarf_refusal_ = debug_file_ + ": DWARF not read: " + refusal;
    JITSYM_LOG(kWarning, dwarf_refusal_, "; symbol tables only");
    debug_file_.clear();
    return false;
  }
  Result<std::unique_ptr<DwarfFile>> file =
      DwarfFile::FromElf(source == debug_.elf ? debug_ : main_, debug_file_, *budget_);
  if (!file) {
    JITSYM_LOG(kWarning, "cannot read DWARF: ", file.error().message, "; symbol tables only");
    debug_file_.clear();
    return false;
  }
  dwarf_ = std::move(*file);
  // dwz's shared file, before any unit is read.
  alt_.Open(source, debug_file_, owner_, *budget_);
  if (alt_.context() != nullptr) dwarf_->context().set_supplementary(alt_.context());
  // Split DWARF: skeleton units whose DIEs are in .dwo files or a .dwp package (split_units.h).
  cus_.Open(&dwarf_->context(), &*budget_, debug_file_);
  if (cus_.has_skeletons()) {
    split_ = SplitUnits::Open(path_, main_.fd, debug_file_, fd, &*budget_);
    cus_.UseSplitUnits(split_.get());
  }
  return true;
}

bool NativeModule::InSegment(uint64_t addr) const {
  for (const Segment& s : segments_) {
    if (addr >= s.vaddr && addr - s.vaddr < s.memsz) return true;
  }
  return segments_.empty();
}

std::optional<uint64_t> NativeModule::FileOffsetToAddress(uint64_t offset) const {
  for (const Segment& s : segments_) {
    if (offset >= s.offset && offset - s.offset < std::max(s.filesz, uint64_t{1})) {
      return s.vaddr + (offset - s.offset);
    }
  }
  return std::nullopt;
}

void NativeModule::Prefetch(const std::vector<uint64_t>& addrs, unsigned extra_threads) {
  cus_.Prefetch(addrs, extra_threads);
}

void NativeModule::Symbolize(uint64_t addr, NativeAnswer* out) {
  out->found = false;
  out->name = {};
  out->clone = {};
  out->start = out->size = 0;
  out->frames.clear();
  out->missing = {};
  const CuTables* t = nullptr;
  if (const int64_t cu = cus_.CuOf(addr); cu >= 0) t = cus_.Tables(static_cast<uint32_t>(cu));
  uint64_t function_start = 0;
  if (t != nullptr) {
    out->missing = t->missing;
    auto sv = [t](uint32_t id) -> std::string_view {
      return id == kNone ? std::string_view() : std::string_view(t->strings[id]);
    };
    // The source position of addr itself.
    const CuTables::Row* row = nullptr;
    const ptrdiff_t r = t->row_index.LastAtMost(addr);
    if (r >= 0 && !t->rows[r].end_sequence) row = &t->rows[r];
    const ptrdiff_t iv = t->interval_index.LastAtMost(addr);
    uint32_t node = kNone;
    if (iv >= 0 && addr < t->intervals[iv].hi) node = t->intervals[iv].node;
    const CuTables::Node* inner = nullptr;
    for (int guard = 0; node != kNone && guard < 4096; ++guard) {
      const CuTables::Node& n = t->nodes[node];
      NativeFrame f;
      f.name = sv(n.name);
      if (inner == nullptr) {
        if (row) {
          f.file = sv(row->file);
          f.line = row->line;
          f.column = row->column;
        }
      } else {
        f.file = sv(inner->call_file);
        f.line = inner->call_line;
        f.column = inner->call_column;
      }
      out->frames.push_back(f);
      inner = &n;
      function_start = n.low_pc;
      node = n.parent;
    }
    if (out->frames.empty() && row != nullptr) {
      out->frames.push_back({{}, sv(row->file), row->line, row->column});
    }
  }
  const SymbolTable::Symbol* sym = symbols_.Find(addr);
  if (sym != nullptr && sym->size == 0 && !InSegment(addr)) sym = nullptr;  // past the image
  if (sym == nullptr && out->frames.empty()) return;
  out->found = true;
  if (out->frames.empty()) out->frames.push_back({});
  // The outermost frame is named by the symbol table when it has a symbol for addr, as
  // llvm-symbolizer does (and as perf and addr2line name the function); but a clone
  // ("f.part.0", "f.cold") is named as its function, and its suffix told apart: by DWARF where
  // DWARF names it (what llvm-symbolizer prints for a stripped binary), unless the symbol was
  // mangled: its demangled name is the linkage name, always qualified, where GCC's DWARF for a
  // cold part may have only DW_AT_name ("CreateTest").
  if (sym != nullptr) {
    out->clone = symbols_.Clone(*sym);
    if (out->clone.empty() || out->frames.back().name.empty() || symbols_.Mangled(*sym)) {
      out->frames.back().name = symbols_.Name(*sym);
    }
    if (out->frames.back().file.empty()) out->frames.back().file = symbols_.File(*sym);
    out->start = sym->addr;
    out->size = sym->size;
  } else {
    // The subprogram's entry; an address below it (in a part placed before the entry) counts
    // from itself.
    out->start = function_start <= addr ? function_start : addr;
  }
  out->name = out->frames.back().name;
}

}  // namespace jitsym::native
