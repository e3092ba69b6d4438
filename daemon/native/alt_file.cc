// dwz's shared debug file, found and opened for libdw (alt_file.h).
#include "daemon/native/alt_file.h"

#include <elf.h>
#include <gelf.h>

#include <bit>
#include <cstring>
#include <utility>

#include "daemon/util/log.h"

namespace jitsym::native {

// An ELF file of three sections (none, .shstrtab, a one-byte .debug_line): enough for
// dwarf_begin_elf, which wants one of .debug_info, .debug_line or .debug_frame, and with no
// .debug_info or .debug_str, so that every alt reference into it fails as "no such section".
std::string AltStandInImage() {
  static constexpr char kNames[] = "\0.shstrtab\0.debug_line";  // offsets 1 and 11
  const size_t names_at = sizeof(Elf64_Ehdr);
  const size_t line_at = names_at + sizeof(kNames);
  const size_t headers_at = (line_at + 1 + 7) & ~size_t{7};
  std::string image(headers_at + 3 * sizeof(Elf64_Shdr), '\0');
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_REL;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shoff = headers_at;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 3;
  eh.e_shstrndx = 1;
  std::memcpy(image.data(), &eh, sizeof(eh));
  std::memcpy(image.data() + names_at, kNames, sizeof(kNames));
  Elf64_Shdr sh[3]{};
  sh[1].sh_name = 1;
  sh[1].sh_type = SHT_STRTAB;
  sh[1].sh_offset = names_at;
  sh[1].sh_size = sizeof(kNames);
  sh[1].sh_addralign = 1;
  sh[2].sh_name = 11;
  sh[2].sh_type = SHT_PROGBITS;
  sh[2].sh_offset = line_at;
  sh[2].sh_size = 1;
  sh[2].sh_addralign = 1;
  std::memcpy(image.data() + headers_at, sh, sizeof(sh));
  return image;
}

std::optional<AltLink> ParseAltLink(std::string_view section) {
  const size_t nul = section.find('\0');
  if (nul == std::string_view::npos || nul == 0) return std::nullopt;
  const std::string_view id = section.substr(nul + 1);
  if (id.size() < 3 || id.size() > 64) return std::nullopt;
  AltLink link;
  link.name = std::string(section.substr(0, nul));
  link.build_id = HexBuildId(id);
  return link;
}

std::vector<std::string> AltCandidates(const AltLink& link, std::string_view debug_root,
                                       std::string_view debug_dir) {
  std::vector<std::string> out;
  std::string by_id(debug_root);
  by_id += "/.build-id/" + link.build_id.substr(0, 2) + "/" + link.build_id.substr(2) + ".debug";
  out.push_back(std::move(by_id));
  if (link.name.front() == '/') {
    out.push_back(link.name);
  } else if (!debug_dir.empty()) {
    std::string path(debug_dir);
    if (path.back() != '/') path.push_back('/');
    out.push_back(path + link.name);
  }
  if (out.size() == 2 && out[0] == out[1]) out.pop_back();
  return out;
}

AltDwarf& AltDwarf::operator=(AltDwarf&& other) noexcept {
  if (this != &other) {
    if (dwarf_ != nullptr) dwarf_end(dwarf_);
    dwarf_ = other.dwarf_;
    other.dwarf_ = nullptr;
  }
  return *this;
}

AltDwarf::~AltDwarf() {
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
}

AltFile::~AltFile() {
  if (stand_in_ != nullptr) elf_end(stand_in_);
  file_.Close();
}

void AltFile::Open(Elf* debug_elf, const std::string& debug_file) {
  Elf_Scn* scn = FindSection(debug_elf, ".gnu_debugaltlink");
  if (scn == nullptr) return;
  linked_ = true;
  Elf_Data* data = SectionData(scn);
  std::optional<AltLink> link;
  if (data != nullptr && data->d_buf != nullptr) {
    link = ParseAltLink(std::string_view(static_cast<const char*>(data->d_buf), data->d_size));
  }
  std::string tried;
  if (!link) {
    tried = "a malformed .gnu_debugaltlink";
  } else {
    const size_t slash = debug_file.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : debug_file.substr(0, slash);
    for (const std::string& c : AltCandidates(*link, "/usr/lib/debug", dir)) {
      std::string error;
      OpenedElf f = OpenElf(c, &error);
      if (const std::string id = f.elf ? HexBuildId(ReadBuildId(f.elf)) : "";
          f.elf != nullptr && id != link->build_id) {
        error = c + ": build id " + (id.empty() ? "none" : id) + ", not " + link->build_id;
        f.Close();
      }
      if (f.elf != nullptr) {
        file_ = std::move(f);
        path_ = c;
        return;
      }
      tried += (tried.empty() ? "" : "; ") + error;
    }
  }
  JITSYM_LOG(kWarning, debug_file, ": dwz file not read (", tried,
             "): the names and inlined frames it holds are missing");
}

AltDwarf AltFile::Attach(Dwarf* dwarf) {
  if (!linked_) return {};
  std::lock_guard lock(mu_);
  Dwarf* alt = nullptr;
  // The dwz file is inflated by libdw as the main file is: the same bounds (elf_file.h).
  if (file_.elf != nullptr && CompressedDebugRefusal(CompressedDebugSections(file_.elf)).empty()) {
    alt = dwarf_begin_elf(file_.elf, DWARF_C_READ, nullptr);
  }
  if (alt == nullptr) {
    if (stand_in_ == nullptr) {
      stand_in_image_ = AltStandInImage();
      stand_in_ = elf_memory(stand_in_image_.data(), stand_in_image_.size());
    }
    if (stand_in_ != nullptr) alt = dwarf_begin_elf(stand_in_, DWARF_C_READ, nullptr);
  }
  if (alt == nullptr) {
    // Not with the stand-in (a unit test opens it); libdw would then look on its own.
    JITSYM_LOG(kError, "dwz stand-in rejected by libdw: ", dwarf_errmsg(-1));
    return {};
  }
  dwarf_setalt(dwarf, alt);
  return AltDwarf(alt);
}

size_t AltFile::Bytes() const { return file_.elf != nullptr ? DebugSectionBytes(file_.elf) : 0; }

}  // namespace jitsym::native
