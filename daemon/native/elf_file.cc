// ELF files for native symbolization: open and check, sections, build-id (elf_file.h).
#include "daemon/native/elf_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

#include "daemon/native/file_ops.h"
#include "daemon/native/native_module.h"

namespace jitsym::native {
namespace {

struct ElfVersionInit {
  ElfVersionInit() { elf_version(EV_CURRENT); }
};

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

}  // namespace

void InitElf() { static ElfVersionInit init; }

void OpenedElf::Close() {
  guard.Release();  // before elf_end unmaps
  if (elf) elf_end(elf);
  if (fd >= 0) ::close(fd);
  elf = nullptr;
  fd = -1;
}

size_t PreadFromStart(int fd, std::string* bytes) {
  size_t done = 0;
  while (done < bytes->size()) {
    const ssize_t n =
        ::pread(fd, bytes->data() + done, bytes->size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

OpenedElf OpenElf(const std::string& path, std::string* error, ElfRead how) {
  OpenedElf o;
  o.fd = Files().open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
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
  if (how == ElfRead::kMap) {
    o.elf = elf_begin(o.fd, ELF_C_READ_MMAP, nullptr);
    if (o.elf != nullptr) o.guard = GuardMapping(o.elf, path);
    if (o.elf != nullptr && !o.guard.registered()) {
      elf_end(o.elf);
      o.elf = nullptr;
    }
  }
  if (o.elf == nullptr) o.elf = elf_begin(o.fd, ELF_C_READ, nullptr);
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

MappingGuard GuardMapping(Elf* elf, std::string_view file) {
  // ELF_C_READ_MMAP maps the whole file; elf_rawfile gives that mapping. (When mmap fails libelf
  // reads the file instead, and elf_rawfile reads all of it into memory: guarding that copy is
  // harmless.)
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return {};
  size_t size = 0;
  const char* raw = elf_rawfile(elf, &size);
  return MappingGuard::Register(raw, size, file);
}

Elf_Data* SectionData(Elf_Scn* scn) {
  GElf_Shdr shdr;
  if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) return nullptr;
  return elf_getdata(scn, nullptr);
}

Elf_Scn* FindSection(Elf* elf, std::string_view name, GElf_Shdr* out) {
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

std::string HexBuildId(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

namespace {

// The inflated size a compressed debug section claims; nullopt when it is not compressed.
std::optional<uint64_t> ClaimedSize(Elf_Scn* scn, const GElf_Shdr& shdr, std::string_view name) {
  if ((shdr.sh_flags & SHF_COMPRESSED) != 0) {
    GElf_Chdr chdr;
    if (gelf_getchdr(scn, &chdr) == nullptr) return 0;  // the reader will not inflate it either
    return chdr.ch_size;
  }
  if (name.starts_with(".zdebug")) {
    // "ZLIB" and the inflated size, 8 bytes big-endian, before the stream.
    Elf_Data* raw = elf_rawdata(scn, nullptr);
    if (raw == nullptr || raw->d_buf == nullptr || raw->d_size < 12) return 0;
    const auto* p = static_cast<const unsigned char*>(raw->d_buf);
    if (std::memcmp(p, "ZLIB", 4) != 0) return 0;
    uint64_t size = 0;
    for (int i = 4; i < 12; ++i) size = (size << 8) | p[i];
    return size;
  }
  return std::nullopt;
}

// Calls f(scn, shdr, name) for every .debug* / .zdebug* section with bytes in the file.
template <class F>
void ForEachDebugSection(Elf* elf, F&& f) {
  size_t shstrndx = 0;
  elf_getshdrstrndx(elf, &shstrndx);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name && (std::string_view(name).starts_with(".debug") ||
                 std::string_view(name).starts_with(".zdebug"))) {
      f(scn, shdr, std::string_view(name));
    }
  }
}

}  // namespace

size_t DebugSectionBytes(Elf* elf) {
  size_t bytes = 0;
  ForEachDebugSection(elf, [&](Elf_Scn* scn, const GElf_Shdr& shdr, std::string_view name) {
    bytes += ClaimedSize(scn, shdr, name).value_or(shdr.sh_size);
  });
  return bytes;
}

CompressedDebug CompressedDebugSections(Elf* elf) {
  CompressedDebug c;
  ForEachDebugSection(elf, [&](Elf_Scn* scn, const GElf_Shdr& shdr, std::string_view name) {
    const std::optional<uint64_t> claim = ClaimedSize(scn, shdr, name);
    if (!claim) return;
    c.compressed += shdr.sh_size;
    c.claimed += *claim;
    if (*claim > c.largest_claim) {
      c.largest_claim = *claim;
      c.largest = std::string(name);
    }
  });
  return c;
}

std::string CompressedDebugRefusal(const CompressedDebug& c, uint64_t bound) {
  if (c.claimed == 0) return "";
  const auto mib = [](uint64_t b) { return std::to_string(b >> 20) + " MiB"; };
  bound = std::min(bound, kMaxInflatedDebugBytes);
  if (c.claimed > bound) {
    return "compressed debug sections claim " + mib(c.claimed) + " inflated (" + c.largest + ": " +
           mib(c.largest_claim) + "), more than " + mib(bound) +
           (bound < kMaxInflatedDebugBytes ? " (its owner's quota)" : "");
  }
  if (c.claimed / kMaxDebugInflation > c.compressed) {
    return "compressed debug sections claim " + mib(c.claimed) + " inflated from " +
           std::to_string(c.compressed) + " bytes (" + c.largest + "), more than " +
           std::to_string(kMaxDebugInflation) + " times their size";
  }
  return "";
}

}  // namespace jitsym::native
