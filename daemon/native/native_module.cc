#include "daemon/native/native_module.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "daemon/util/log.h"

#ifdef JITSYM_HAVE_LLVM_DEMANGLE
#include <llvm/Demangle/Demangle.h>
#endif

namespace jitsym::native {
namespace {

constexpr size_t kMaxMiniDebugInfo = 256u << 20;  // decompressed .gnu_debugdata
constexpr int kMaxDieDepth = 512;
constexpr uint32_t kNone = CuTables::kNone;

struct ElfVersionInit {
  ElfVersionInit() { elf_version(EV_CURRENT); }
};
void InitElf() { static ElfVersionInit init; }

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Section data, or nullptr (also for SHT_NOBITS and sections libelf rejects).
Elf_Data* SectionData(Elf_Scn* scn) {
  GElf_Shdr shdr;
  if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) return nullptr;
  return elf_getdata(scn, nullptr);
}

Elf_Scn* FindSection(Elf* elf, std::string_view name, GElf_Shdr* out = nullptr) {
  size_t shstrndx;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* n = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (n != nullptr && name == n) {
      if (out) *out = shdr;
      return scn;
    }
  }
  return nullptr;
}

bool HasDwarf(Elf* elf) {
  GElf_Shdr shdr;
  if (FindSection(elf, ".debug_info", &shdr) && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0) {
    return true;
  }
  return FindSection(elf, ".zdebug_info", &shdr) && shdr.sh_type != SHT_NOBITS;
}

// The NT_GNU_BUILD_ID note's bytes from one note data block.
std::string BuildIdFromNotes(Elf* elf, Elf_Data* data) {
  if (data == nullptr) return {};
  size_t off = 0;
  GElf_Nhdr nhdr;
  size_t name_off, desc_off;
  while (off < data->d_size) {
    const size_t next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off);
    if (next == 0 || next <= off) break;
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
        std::memcmp(static_cast<const char*>(data->d_buf) + name_off, "GNU", 4) == 0 &&
        nhdr.n_descsz > 0 && nhdr.n_descsz <= 64) {
      return std::string(static_cast<const char*>(data->d_buf) + desc_off, nhdr.n_descsz);
    }
    off = next;
  }
  return {};
}

std::string ReadBuildId(Elf* elf) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) continue;
    std::string id = BuildIdFromNotes(elf, SectionData(scn));
    if (!id.empty()) return id;
  }
  size_t phnum;
  if (elf_getphdrnum(elf, &phnum) != 0) return {};
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_NOTE) continue;
    std::string id = BuildIdFromNotes(
        elf, elf_getdata_rawchunk(elf, static_cast<int64_t>(ph.p_offset), ph.p_filesz,
                                  ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR));
    if (!id.empty()) return id;
  }
  return {};
}

struct OpenedElf {
  int fd = -1;
  Elf* elf = nullptr;
  void Close() {
    if (elf) elf_end(elf);
    if (fd >= 0) ::close(fd);
    elf = nullptr;
    fd = -1;
  }
};

// Opens a regular file as ELF (ELF_C_READ: sections are read into memory, so a file truncated
// later cannot fault the daemon as a mapping would).
OpenedElf OpenElf(const std::string& path, std::string* error) {
  OpenedElf o;
  o.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (o.fd < 0) {
    if (error) *error = path + ": " + std::strerror(errno);
    return o;
  }
  struct stat st {};
  if (::fstat(o.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (error) *error = path + ": not a regular file";
    o.Close();
    return o;
  }
  o.elf = elf_begin(o.fd, ELF_C_READ, nullptr);
  if (o.elf == nullptr || elf_kind(o.elf) != ELF_K_ELF) {
    if (error) *error = path + ": not an ELF file";
    o.Close();
    return o;
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(o.elf, &ehdr) == nullptr) {
    if (error) *error = path + ": bad ELF header: " + elf_errmsg(-1);
    o.Close();
    return o;
  }
  // Header tables must lie inside the file: a truncated file is reported, not half-read.
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  size_t shnum = 0, phnum = 0;
  std::string why;
  if (elf_getshdrnum(o.elf, &shnum) != 0 || elf_getphdrnum(o.elf, &phnum) != 0) {
    why = std::string("bad header tables: ") + elf_errmsg(-1);
  }
  // libelf quietly clips tables that run past the end of the file: check the header's counts.
  if (ehdr.e_shnum != 0) shnum = ehdr.e_shnum;
  if (ehdr.e_phnum != PN_XNUM) phnum = ehdr.e_phnum;
  if (!why.empty()) {
    // reported below
  } else if (shnum > 0 &&
             (ehdr.e_shoff > size ||
              (size - ehdr.e_shoff) / std::max<uint64_t>(ehdr.e_shentsize, 1) < shnum)) {
    why = "section headers at offset " + std::to_string(ehdr.e_shoff) + " run past the end (" +
          std::to_string(size) + " bytes): truncated";
  } else if (phnum > 0 &&
             (ehdr.e_phoff > size ||
              (size - ehdr.e_phoff) / std::max<uint64_t>(ehdr.e_phentsize, 1) < phnum)) {
    why = "program headers at offset " + std::to_string(ehdr.e_phoff) + " run past the end (" +
          std::to_string(size) + " bytes): truncated";
  } else if (shnum == 0 && phnum == 0) {
    why = "no section or program headers";
  }
  if (!why.empty()) {
    if (error) *error = path + ": " + why;
    o.Close();
  }
  return o;
}

uint32_t FileCrc(int fd) {
  uLong crc = crc32(0, nullptr, 0);
  char buf[1 << 16];
  off_t pos = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof(buf), pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buf), static_cast<uInt>(n));
    pos += n;
  }
  return static_cast<uint32_t>(crc);
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// libdw's file names are directory + name; a relative directory is taken, as llvm-symbolizer
// does, relative to the compilation directory.
std::string AbsolutePath(const char* name, const char* comp_dir) {
  if (name == nullptr) return {};
  if (name[0] == '/' || comp_dir == nullptr || comp_dir[0] == '\0') return name;
  std::string out = comp_dir;
  if (out.back() != '/') out.push_back('/');
  out += name;
  return out;
}

const char* AttrString(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

bool AttrUdata(Dwarf_Die* die, unsigned name, Dwarf_Word* out) {
  Dwarf_Attribute attr;
  return dwarf_attr(die, name, &attr) != nullptr && dwarf_formudata(&attr, out) == 0;
}

// Tags whose children never hold code (skipped while walking a CU). Classes may: GCC puts a
// lambda's operator() inside its closure type.
bool NoCodeInside(int tag) {
  switch (tag) {
    case DW_TAG_formal_parameter:
    case DW_TAG_variable:
    case DW_TAG_member:
    case DW_TAG_enumeration_type:
    case DW_TAG_array_type:
    case DW_TAG_subroutine_type:
    case DW_TAG_template_type_parameter:
    case DW_TAG_template_value_parameter:
    case DW_TAG_GNU_template_parameter_pack:
    case DW_TAG_GNU_formal_parameter_pack:
    case DW_TAG_GNU_call_site:
    case DW_TAG_call_site:
    case DW_TAG_base_type:
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
    case DW_TAG_const_type:
    case DW_TAG_volatile_type:
    case DW_TAG_typedef:
      return true;
    default:
      return false;
  }
}

// Rewrites what GNU's demangler prints differently from LLVM's (which llvm-symbolizer uses):
//   "f() [clone .constprop.0] [clone .cold]"  ->  "f() (.constprop.0.cold)"
//   "{lambda(auto:1&, int)#3}"                ->  "'lambda1'(auto&, int)"
//   "{unnamed type#1}"                        ->  "'unnamed'"
//   "decltype(nullptr)"                       ->  "std::nullptr_t"
[[maybe_unused]] std::string LlvmStyle(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  auto number_after = [](std::string_view text, size_t hash) -> std::optional<unsigned> {
    unsigned n = 0;
    size_t k = hash + 1;
    if (k >= text.size() || text[k] < '0' || text[k] > '9') return std::nullopt;
    for (; k < text.size() && text[k] >= '0' && text[k] <= '9'; ++k) n = n * 10 + (text[k] - '0');
    if (k >= text.size() || text[k] != '}') return std::nullopt;
    return n;
  };
  auto discriminator = [](unsigned n) { return n <= 1 ? std::string() : std::to_string(n - 2); };
  while (i < in.size()) {
    const std::string_view rest(in.data() + i, in.size() - i);
    if (rest.starts_with(" [clone ")) {
      std::string suffix;
      size_t j = i;
      while (std::string_view(in.data() + j, in.size() - j).starts_with(" [clone ")) {
        const size_t end = in.find(']', j);
        if (end == std::string::npos) break;
        suffix += in.substr(j + 8, end - j - 8);
        j = end + 1;
      }
      if (j == i) {
        out += in.substr(i);
        break;
      }
      out += " (" + suffix + ")";
      i = j;
      continue;
    }
    if (rest.starts_with("{lambda(")) {
      // Parameters up to the matching ')', then "#N}".
      size_t k = i + 8;
      int depth = 1;
      for (; k < in.size() && depth > 0; ++k) {
        if (in[k] == '(') ++depth;
        if (in[k] == ')') --depth;
      }
      if (depth == 0 && k < in.size() && in[k] == '#') {
        if (std::optional<unsigned> n = number_after(in, k)) {
          std::string params = in.substr(i + 8, k - 1 - (i + 8));
          for (size_t a; (a = params.find("auto:")) != std::string::npos;) {
            size_t b = a + 5;
            while (b < params.size() && params[b] >= '0' && params[b] <= '9') ++b;
            params.erase(a + 4, b - a - 4);
          }
          out += "'lambda" + discriminator(*n) + "'(" + params + ")";
          i = in.find('}', k) + 1;
          continue;
        }
      }
    }
    if (rest.starts_with("decltype(nullptr)")) {
      out += "std::nullptr_t";
      i += 17;
      continue;
    }
    if (rest.starts_with("{unnamed type#")) {
      if (std::optional<unsigned> n = number_after(in, i + 13)) {
        out += "'unnamed" + discriminator(*n) + "'";
        i = in.find('}', i + 13) + 1;
        continue;
      }
    }
    out.push_back(in[i++]);
  }
  return out;
}

}  // namespace

std::string Demangle(std::string_view name) {
#ifdef JITSYM_HAVE_LLVM_DEMANGLE
  // What llvm-symbolizer calls: Itanium (and Rust) names demangled, the rest unchanged.
  std::string input(name), out;
  if (llvm::nonMicrosoftDemangle(input.c_str(), out)) return out;
  return input;
#else
  if (!name.starts_with("_Z")) return std::string(name);
  std::string input(name);
  int status = 0;
  char* out = abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status);
  if (out == nullptr || status != 0) {
    std::free(out);
    return input;
  }
  std::string result(out);
  std::free(out);
  return LlvmStyle(result);
#endif
}

std::string HexBuildId(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

void KeyIndex::Build(std::vector<uint64_t> keys) {
  keys_ = std::move(keys);
  sparse_.clear();
  for (size_t i = 0; i < keys_.size(); i += kStride) sparse_.push_back(keys_[i]);
  keys_.shrink_to_fit();
  sparse_.shrink_to_fit();
}

ptrdiff_t KeyIndex::LastAtMost(uint64_t x) const {
  auto s = std::upper_bound(sparse_.begin(), sparse_.end(), x);
  if (s == sparse_.begin()) return -1;
  const size_t block = static_cast<size_t>(s - sparse_.begin() - 1) * kStride;
  const size_t end = std::min(keys_.size(), block + kStride);
  auto it = std::upper_bound(keys_.begin() + block, keys_.begin() + end, x);
  return (it - keys_.begin()) - 1;
}

size_t CuTables::Bytes() const {
  size_t n = sizeof(*this) + intervals.capacity() * sizeof(Interval) +
             nodes.capacity() * sizeof(Node) + rows.capacity() * sizeof(Row) +
             interval_index.Bytes() + row_index.Bytes();
  for (const auto& s : strings) n += sizeof(s) + s.capacity();
  return n;
}

NativeModule::~NativeModule() {
  for (size_t i = 0; i < cu_count_; ++i) delete cus_[i].tables.load();
  if (dwarf_) dwarf_end(dwarf_);
  if (debug_elf_) elf_end(debug_elf_);
  if (debug_fd_ >= 0) ::close(debug_fd_);
  if (mini_elf_) elf_end(mini_elf_);
  if (elf_) elf_end(elf_);
  if (fd_ >= 0) ::close(fd_);
}

std::shared_ptr<NativeModule> NativeModule::Open(const std::string& path, const DebugSearch& search,
                                                 std::string* error) {
  InitElf();
  OpenedElf main = OpenElf(path, error);
  if (main.elf == nullptr) return nullptr;
  std::shared_ptr<NativeModule> m(new NativeModule());
  m->path_ = path;
  m->fd_ = main.fd;
  m->elf_ = main.elf;
  GElf_Ehdr ehdr;
  gelf_getehdr(m->elf_, &ehdr);
  if (ehdr.e_type == ET_REL) {
    *error = path + ": a relocatable object (.o) has no addresses to symbolize";
    return nullptr;
  }
  size_t phnum = 0;
  if (elf_getphdrnum(m->elf_, &phnum) == 0) {
    for (size_t i = 0; i < phnum && i < 4096; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(m->elf_, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) {
        continue;
      }
      m->segments_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz});
    }
  }
  m->build_id_ = HexBuildId(ReadBuildId(m->elf_));
  if (!m->LoadSymbols(m->elf_, false)) {
    // No .symtab: the dynamic symbols, and MiniDebugInfo's symbols where there is one.
    m->LoadSymbols(m->elf_, true);
    m->LoadMiniDebugInfo(m->elf_);
  }
  m->OpenDwarf(m->elf_, search);
  m->SynthesizePltSymbols(m->elf_);
  m->FinishSymbols();
  size_t bytes = sizeof(NativeModule) + m->symbols_.capacity() * sizeof(Symbol) +
                 m->symbol_names_.capacity() + m->minidebug_.capacity() +
                 m->cu_ranges_.capacity() * sizeof(CuRange) + m->cu_count_ * sizeof(Cu);
  // The debug sections libdw read into memory.
  if (m->dwarf_ != nullptr) {
    Elf* e = m->debug_elf_ ? m->debug_elf_ : m->elf_;
    size_t shstrndx = 0;
    elf_getshdrstrndx(e, &shstrndx);
    for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
      const char* name = elf_strptr(e, shstrndx, shdr.sh_name);
      if (name && (std::string_view(name).starts_with(".debug") ||
                   std::string_view(name).starts_with(".zdebug"))) {
        bytes += shdr.sh_size;
      }
    }
  }
  m->bytes_ = bytes;
  return m;
}

bool NativeModule::LoadSymbols(Elf* elf, bool dynamic) {
  const Elf64_Word want = dynamic ? SHT_DYNSYM : SHT_SYMTAB;
  bool any = false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != want || shdr.sh_entsize == 0) {
      continue;
    }
    Elf_Data* data = SectionData(scn);
    if (data == nullptr) continue;
    uint32_t file = kNoFile, file_size = 0;
    const size_t count = std::min<size_t>(shdr.sh_size / shdr.sh_entsize, 1u << 24);
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
        if (name != nullptr && name[0] != '\0' &&
            symbol_names_.size() + std::strlen(name) + 1 <= 0xffffffffu) {
          file = static_cast<uint32_t>(symbol_names_.size());
          file_size = static_cast<uint32_t>(std::strlen(name));
          symbol_names_.append(name);
          symbol_names_.push_back('\0');
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
      // Names are stored demangled: each is shown many times, demangled once.
      const std::string demangled = Demangle(name);
      if (symbol_names_.size() + demangled.size() + 1 > 0xffffffffu) return any;
      const bool local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
      symbols_.push_back({sym.st_value, sym.st_size, static_cast<uint32_t>(symbol_names_.size()),
                          local ? file : kNoFile, static_cast<uint32_t>(demangled.size()),
                          local ? file_size : 0});
      symbol_names_.append(demangled);
      symbol_names_.push_back('\0');
    }
  }
  return any;
}

void NativeModule::SynthesizePltSymbols(Elf* elf) {
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
    const std::string full = Demangle(name) + "@plt";
    if (symbol_names_.size() + full.size() + 1 > 0xffffffffu) return;
    symbols_.push_back({first + i * entry, entry, static_cast<uint32_t>(symbol_names_.size()),
                        kNoFile, static_cast<uint32_t>(full.size()), 0});
    symbol_names_.append(full);
    symbol_names_.push_back('\0');
  }
}

void NativeModule::LoadMiniDebugInfo(Elf* elf) {
  Elf_Scn* scn = FindSection(elf, ".gnu_debugdata");
  Elf_Data* data = scn ? SectionData(scn) : nullptr;
  if (data == nullptr || data->d_size == 0) return;
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, 1ull << 30, 0) != LZMA_OK) return;
  strm.next_in = static_cast<const uint8_t*>(data->d_buf);
  strm.avail_in = data->d_size;
  std::string out;
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {
    if (out.size() >= kMaxMiniDebugInfo) break;
    const size_t old = out.size();
    out.resize(old + (1 << 16));
    strm.next_out = reinterpret_cast<uint8_t*>(out.data() + old);
    strm.avail_out = 1 << 16;
    ret = lzma_code(&strm, LZMA_FINISH);
    out.resize(out.size() - strm.avail_out);
  }
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) {
    JITSYM_LOG(kWarning, path_, ": .gnu_debugdata: cannot decompress (xz error ", ret, ")");
    return;
  }
  minidebug_ = std::move(out);
  mini_elf_ = elf_memory(minidebug_.data(), minidebug_.size());
  if (mini_elf_ == nullptr || elf_kind(mini_elf_) != ELF_K_ELF) {
    JITSYM_LOG(kWarning, path_, ": .gnu_debugdata: not an ELF file");
    if (mini_elf_) elf_end(mini_elf_);
    mini_elf_ = nullptr;
    return;
  }
  LoadSymbols(mini_elf_, false);
}

void NativeModule::FinishSymbols() {
  // Of the symbols that start at one address, llvm-symbolizer keeps the largest, and of equally
  // large ones the last in symbol table order: so do we.
  std::stable_sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    return a.addr != b.addr ? a.addr < b.addr : a.size < b.size;
  });
  size_t out = 0;
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (i + 1 < symbols_.size() && symbols_[i + 1].addr == symbols_[i].addr) continue;
    symbols_[out++] = symbols_[i];
  }
  symbols_.resize(out);
  symbols_.shrink_to_fit();
  std::vector<uint64_t> keys(symbols_.size());
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = symbols_[i].addr;
  symbol_index_.Build(std::move(keys));
}

const NativeModule::Symbol* NativeModule::FindSymbol(uint64_t addr) const {
  const ptrdiff_t i = symbol_index_.LastAtMost(addr);
  if (i < 0) return nullptr;
  const Symbol& s = symbols_[i];
  if (s.size != 0 && addr - s.addr >= s.size) return nullptr;
  return &s;
}

bool NativeModule::OpenDwarf(Elf* main, const DebugSearch& search) {
  Elf* source = nullptr;
  if (HasDwarf(main)) {
    source = main;
    debug_file_ = path_;
  } else {
    std::vector<std::string> candidates;
    if (build_id_.size() > 2) {
      for (const std::string& dir : search.debug_dirs) {
        candidates.push_back(dir + "/.build-id/" + build_id_.substr(0, 2) + "/" +
                             build_id_.substr(2) + ".debug");
      }
    }
    for (const std::string& f : search.extra_files) candidates.push_back(f);
    // .gnu_debuglink: NAME\0, padding, CRC32 of the debug file.
    std::string link;
    uint32_t link_crc = 0;
    bool have_crc = false;
    if (Elf_Scn* scn = FindSection(main, ".gnu_debuglink")) {
      if (Elf_Data* d = SectionData(scn); d && d->d_size > 0) {
        const char* p = static_cast<const char*>(d->d_buf);
        const size_t len = strnlen(p, d->d_size);
        if (len < d->d_size && len > 0 && std::memchr(p, '/', len) == nullptr) {
          link.assign(p, len);
          const size_t crc_off = (len + 4) & ~size_t{3};
          if (crc_off + 4 <= d->d_size) {
            std::memcpy(&link_crc, p + crc_off, 4);
            have_crc = true;
          }
        }
      }
    }
    const size_t link_first = candidates.size();
    if (!link.empty()) {
      const std::string dir = DirName(path_);
      candidates.push_back(dir + "/" + link);
      candidates.push_back(dir + "/.debug/" + link);
      for (const std::string& d : search.debug_dirs) candidates.push_back(d + dir + "/" + link);
    }
    for (size_t i = 0; i < candidates.size() && source == nullptr; ++i) {
      const std::string& c = candidates[i];
      if (::access(c.c_str(), R_OK) != 0 || SameFile(c, path_)) continue;
      OpenedElf d = OpenElf(c, nullptr);
      if (d.elf == nullptr) continue;
      // A debug file must belong to this binary: same build-id, or (debuglink without build-id)
      // the CRC the binary recorded.
      const std::string id = HexBuildId(ReadBuildId(d.elf));
      bool ok = !build_id_.empty() ? id == build_id_
                                   : (i >= link_first && (!have_crc || FileCrc(d.fd) == link_crc));
      if (!ok || !HasDwarf(d.elf)) {
        if (!ok) JITSYM_LOG(kInfo, c, ": debug file does not match ", path_, "; ignored");
        d.Close();
        continue;
      }
      debug_fd_ = d.fd;
      debug_elf_ = d.elf;
      source = d.elf;
      debug_file_ = c;
      if (symbols_.empty() || FindSection(main, ".symtab") == nullptr) {
        // A stripped binary: the debug file's full symbol table names local functions too.
        symbols_.clear();
        symbol_names_.clear();
        if (!LoadSymbols(debug_elf_, false)) {
          LoadSymbols(main, true);
          if (mini_elf_) LoadSymbols(mini_elf_, false);
        }
      }
    }
  }
  if (source == nullptr) return false;
  dwarf_ = dwarf_begin_elf(source, DWARF_C_READ, nullptr);
  main_handle_.dwarf = dwarf_;
  dwarf_fd_ = source == debug_elf_ ? debug_fd_ : fd_;
  if (dwarf_ == nullptr) {
    JITSYM_LOG(kWarning, debug_file_, ": cannot read DWARF: ", dwarf_errmsg(-1),
               "; symbol tables only");
    debug_file_.clear();
    return false;
  }
  IndexCus();
  return true;
}

void NativeModule::IndexCus() {
  std::vector<uint64_t> offsets;
  Dwarf_CU* cu = nullptr;
  Dwarf_CU* next = nullptr;
  Dwarf_Half version;
  uint8_t unit_type;
  Dwarf_Die cudie, subdie;
  while (dwarf_get_units(dwarf_, cu, &next, &version, &unit_type, &cudie, &subdie) == 0) {
    cu = next;
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial) continue;
    if (offsets.size() >= (1u << 24)) break;
    const uint32_t index = static_cast<uint32_t>(offsets.size());
    offsets.push_back(dwarf_dieoffset(&cudie));
    Dwarf_Addr base, start, end;
    ptrdiff_t off = 0;
    int guard = 0;
    while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0 && ++guard < (1 << 20)) {
      if (end > start) cu_ranges_.push_back({start, end, index});
    }
  }
  cu_count_ = offsets.size();
  unread_cus_ = cu_count_;
  cus_ = std::make_unique<Cu[]>(cu_count_);
  for (size_t i = 0; i < cu_count_; ++i) cus_[i].die_offset = offsets[i];
  std::sort(cu_ranges_.begin(), cu_ranges_.end(),
            [](const CuRange& a, const CuRange& b) { return a.lo < b.lo; });
  cu_ranges_.shrink_to_fit();
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

const CuTables* NativeModule::Tables(uint32_t cu) {
  Cu& c = cus_[cu];
  if (c.state.load(std::memory_order_acquire) == kBuilt) {
    return c.tables.load(std::memory_order_acquire);
  }
  uint8_t expected = kUnread;
  if (c.state.compare_exchange_strong(expected, kBuilding, std::memory_order_acq_rel)) {
    return Build(cu, main_handle_);
  }
  // Built meanwhile, or being built by another thread: wait for it.
  std::unique_lock lock(built_mu_);
  built_cv_.wait(lock, [&] { return c.state.load(std::memory_order_acquire) == kBuilt; });
  return c.tables.load(std::memory_order_acquire);
}

const CuTables* NativeModule::Build(uint32_t cu, DwarfHandle& handle) {
  unread_cus_.fetch_sub(1, std::memory_order_relaxed);
  Cu& c = cus_[cu];
  const CuTables* t = nullptr;
  auto publish = [&] {
    c.tables.store(t, std::memory_order_release);
    {
      std::lock_guard lock(built_mu_);
      c.state.store(kBuilt, std::memory_order_release);
    }
    built_cv_.notify_all();
  };
  try {
    std::unique_ptr<CuTables> built;
    {
      std::lock_guard lock(handle.mu);
      built = BuildTables(cu, handle);
    }
    if (built) {
      bytes_.fetch_add(built->Bytes(), std::memory_order_relaxed);
      t = built.release();
    }
  } catch (...) {
    publish();  // as unreadable: nobody may wait for it forever
    throw;
  }
  publish();
  return t;
}

int64_t NativeModule::CuOf(uint64_t addr) const {
  if (dwarf_ == nullptr || cu_ranges_.empty()) return -1;
  auto it = std::upper_bound(cu_ranges_.begin(), cu_ranges_.end(), addr,
                             [](uint64_t a, const CuRange& r) { return a < r.lo; });
  // CU ranges may nest or overlap (rarely): look back a little for one that covers addr.
  for (int k = 0; k < 8 && it != cu_ranges_.begin(); ++k) {
    --it;
    if (addr < it->hi) return it->cu;
  }
  return -1;
}

void NativeModule::Prefetch(const std::vector<uint64_t>& addrs, unsigned extra_threads) {
  if (dwarf_ == nullptr || extra_threads == 0 || dwarf_fd_ < 0 || unread_cus() < 2) return;
  std::vector<uint32_t> todo;
  std::vector<bool> seen(cu_count_);
  for (uint64_t addr : addrs) {
    const int64_t cu = CuOf(addr);
    if (cu < 0 || seen[cu]) continue;
    seen[cu] = true;
    if (cus_[cu].state.load(std::memory_order_acquire) == kUnread) {
      todo.push_back(static_cast<uint32_t>(cu));
    }
  }
  if (todo.size() < 2) return;
  // One handle per extra thread, over the same file (the pages are shared), gone afterwards.
  struct ExtraHandle {
    Elf* elf = nullptr;
    DwarfHandle handle;
    ~ExtraHandle() {
      if (handle.dwarf != nullptr) dwarf_end(handle.dwarf);
      if (elf != nullptr) elf_end(elf);
    }
  };
  const size_t n = std::min<size_t>(extra_threads, todo.size() - 1);
  std::vector<std::unique_ptr<ExtraHandle>> extra;
  for (size_t i = 0; i < n; ++i) {
    auto h = std::make_unique<ExtraHandle>();
    h->elf = elf_begin(dwarf_fd_, ELF_C_READ_MMAP, nullptr);
    if (h->elf != nullptr) h->handle.dwarf = dwarf_begin_elf(h->elf, DWARF_C_READ, nullptr);
    if (h->handle.dwarf == nullptr) break;
    extra.push_back(std::move(h));
  }
  if (extra.empty()) return;
  std::atomic<size_t> next{0};
  auto work = [&](DwarfHandle& handle) {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < todo.size();) {
      uint8_t expected = kUnread;
      if (cus_[todo[i]].state.compare_exchange_strong(expected, kBuilding,
                                                      std::memory_order_acq_rel)) {
        Build(todo[i], handle);
      }
    }
  };
  std::vector<std::thread> threads;
  for (auto& h : extra) {
    try {
      threads.emplace_back([&work, &h] {
        try {
          work(h->handle);
        } catch (...) {
          // Out of memory: this thread stops; what it did not claim is read lazily.
        }
      });
    } catch (const std::system_error&) {
      break;  // no thread: this one does it all
    }
  }
  try {
    work(main_handle_);
  } catch (...) {
    for (std::thread& t : threads) t.join();
    throw;
  }
  for (std::thread& t : threads) t.join();
}

std::unique_ptr<CuTables> NativeModule::BuildTables(uint32_t cu, DwarfHandle& handle) {
  Dwarf_Die cudie;
  if (dwarf_offdie(handle.dwarf, cus_[cu].die_offset, &cudie) == nullptr) {
    JITSYM_LOG(kWarning, debug_file_, ": CU at offset ", cus_[cu].die_offset, ": ",
               dwarf_errmsg(-1));
    return nullptr;
  }
  auto t = std::make_unique<CuTables>();
  const char* comp_dir = AttrString(&cudie, DW_AT_comp_dir);
  std::unordered_map<const char*, uint32_t> file_ids;  // libdw's strings -> ours
  auto intern_path = [&](const char* name) -> uint32_t {
    if (name == nullptr) return kNone;
    auto [it, inserted] = file_ids.try_emplace(name, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(t->strings.size());
      t->strings.push_back(AbsolutePath(name, comp_dir));
    }
    return it->second;
  };

  // Line table.
  Dwarf_Lines* lines = nullptr;
  size_t nlines = 0;
  if (dwarf_getsrclines(&cudie, &lines, &nlines) == 0) {
    t->rows.reserve(nlines);
    for (size_t i = 0; i < nlines; ++i) {
      Dwarf_Line* line = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr;
      int lineno = 0, col = 0;
      bool end = false;
      if (line == nullptr || dwarf_lineaddr(line, &addr) != 0) continue;
      dwarf_lineno(line, &lineno);
      dwarf_linecol(line, &col);
      dwarf_lineendsequence(line, &end);
      t->rows.push_back({addr, intern_path(dwarf_linesrc(line, nullptr, nullptr)),
                         static_cast<uint32_t>(std::max(lineno, 0)),
                         static_cast<uint32_t>(std::max(col, 0)), end});
    }
    // libdw sorts rows by address with end_sequence rows first; keep that order, but be sure.
    auto order = [](const CuTables::Row& a, const CuTables::Row& b) {
      return a.addr != b.addr ? a.addr < b.addr : a.end_sequence > b.end_sequence;
    };
    if (!std::is_sorted(t->rows.begin(), t->rows.end(), order)) {
      std::stable_sort(t->rows.begin(), t->rows.end(), order);
    }
  }
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(&cudie, &files, &nfiles) != 0) files = nullptr;

  // Subprogram and inlined-subroutine DIEs, walked in preorder; each one's ranges are laid over
  // its parent's as llvm-symbolizer's address-to-DIE map does (a child splits its parent's
  // range), so that an address maps to the deepest DIE covering it.
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> addr_map;
  std::vector<Dwarf_Die> node_die;  // the nodes' DIEs (names are resolved at the end)
  struct Item {
    Dwarf_Die die;
    uint32_t node;  // the nearest enclosing subprogram/inlined node
    int depth;
  };
  std::vector<Item> stack;
  {
    Dwarf_Die child;
    if (dwarf_child(&cudie, &child) == 0) stack.push_back({child, kNone, 1});
  }
  // Each stack entry stands for a DIE and, through dwarf_siblingof, its following siblings.
  while (!stack.empty()) {
    Item item = stack.back();
    stack.pop_back();
    Dwarf_Die sibling;
    if (dwarf_siblingof(&item.die, &sibling) == 0) {
      stack.push_back({sibling, item.node, item.depth});
    }
    const int tag = dwarf_tag(&item.die);
    uint32_t node = item.node;
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
      CuTables::Node n{};
      n.parent = tag == DW_TAG_subprogram ? kNone : item.node;
      n.name = kNone;
      n.call_file = kNone;
      n.low_pc = 0;
      if (tag == DW_TAG_inlined_subroutine) {
        Dwarf_Word v;
        if (AttrUdata(&item.die, DW_AT_call_file, &v) && files != nullptr && v < nfiles) {
          n.call_file = intern_path(dwarf_filesrc(files, v, nullptr, nullptr));
        }
        if (AttrUdata(&item.die, DW_AT_call_line, &v)) n.call_line = static_cast<uint32_t>(v);
        if (AttrUdata(&item.die, DW_AT_call_column, &v)) {
          n.call_column = static_cast<uint32_t>(v);
        }
      }
      Dwarf_Addr base, lo, hi;
      ptrdiff_t off = 0;
      bool first = true;
      const uint32_t id = static_cast<uint32_t>(t->nodes.size());
      int guard = 0;
      while ((off = dwarf_ranges(&item.die, off, &base, &lo, &hi)) > 0 && ++guard < 65536) {
        if (first) n.low_pc = lo;
        first = false;
        if (hi <= lo) continue;
        auto b = addr_map.upper_bound(lo);
        if (b != addr_map.begin() && lo < (--b)->second.first) {
          if (hi < b->second.first) addr_map[hi] = b->second;
          if (lo > b->first) addr_map[b->first].first = lo;
        }
        addr_map[lo] = {hi, id};
      }
      t->nodes.push_back(n);
      node_die.push_back(item.die);
      node = id;
    } else if (NoCodeInside(tag)) {
      continue;
    }
    Dwarf_Die child;
    if (item.depth < kMaxDieDepth && dwarf_haschildren(&item.die) &&
        dwarf_child(&item.die, &child) == 0) {
      stack.push_back({child, node, item.depth + 1});
    }
    if (stack.size() > (1u << 20)) break;
  }
  t->intervals.reserve(addr_map.size());
  std::vector<bool> used(t->nodes.size(), false);
  for (const auto& [lo, v] : addr_map) {
    t->intervals.push_back({lo, v.first, v.second});
    for (uint32_t n = v.second; n != kNone && !used[n]; n = t->nodes[n].parent) used[n] = true;
  }
  // Names: the linkage name (through abstract origins and specifications) demangled, else the
  // plain name, as llvm-symbolizer chooses; only for the nodes an address can reach.
  // .debug_str is shared by all CUs, so the same name is the same pointer: demangled once per
  // module per handle (the handle's mutex is held), interned once per CU.
  std::unordered_map<const char*, uint32_t> name_ids;
  for (size_t i = 0; i < t->nodes.size(); ++i) {
    if (!used[i]) continue;
    Dwarf_Die& die = node_die[i];
    const char* linkage = AttrString(&die, DW_AT_linkage_name);
    if (linkage == nullptr) linkage = AttrString(&die, DW_AT_MIPS_linkage_name);
    const char* raw = linkage ? linkage : AttrString(&die, DW_AT_name);
    if (raw == nullptr || raw[0] == '\0') continue;
    auto [it, inserted] = name_ids.try_emplace(raw, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(t->strings.size());
      if (!linkage) {
        t->strings.emplace_back(raw);
      } else {
        auto [d, fresh] = handle.demangled.try_emplace(raw);
        if (fresh) d->second = Demangle(raw);
        t->strings.push_back(d->second);
      }
    }
    t->nodes[i].name = it->second;
  }
  t->intervals.shrink_to_fit();
  {
    std::vector<uint64_t> keys(t->intervals.size());
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = t->intervals[i].lo;
    t->interval_index.Build(std::move(keys));
    keys.resize(t->rows.size());
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = t->rows[i].addr;
    t->row_index.Build(std::move(keys));
  }
  t->nodes.shrink_to_fit();
  t->rows.shrink_to_fit();
  return t;
}

void NativeModule::Symbolize(uint64_t addr, NativeAnswer* out) {
  out->found = false;
  out->name = {};
  out->start = out->size = 0;
  out->frames.clear();
  const CuTables* t = nullptr;
  if (const int64_t cu = CuOf(addr); cu >= 0) t = Tables(static_cast<uint32_t>(cu));
  uint64_t function_start = 0;
  if (t != nullptr) {
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
  const Symbol* sym = FindSymbol(addr);
  if (sym != nullptr && sym->size == 0 && !InSegment(addr)) sym = nullptr;  // past the image
  if (sym == nullptr && out->frames.empty()) return;
  out->found = true;
  if (out->frames.empty()) out->frames.push_back({});
  // The outermost frame is named by the symbol table when it has a symbol for addr, as
  // llvm-symbolizer does (and as perf and addr2line name the function).
  if (sym != nullptr) {
    out->frames.back().name = std::string_view(symbol_names_.data() + sym->name, sym->name_size);
    if (out->frames.back().file.empty() && sym->file != kNoFile) {
      out->frames.back().file = std::string_view(symbol_names_.data() + sym->file, sym->file_size);
    }
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
