// dwz's shared debug file, found, checked and read (alt_file.h).
#include "daemon/native/alt_file.h"

#include <gelf.h>
#include <sys/stat.h>

#include <utility>

#include "daemon/native/debug_file_locator.h"
#include "daemon/util/log.h"

namespace jitsym::native {

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

AltFile::~AltFile() {
  dwarf_.reset();
  file_.Close();
}

void AltFile::Open(Elf* debug_elf, const std::string& debug_file, uint32_t owner,
                   dwarf::Budget& budget) {
  Elf_Scn* scn = FindSection(debug_elf, ".gnu_debugaltlink");
  if (scn == nullptr) return;
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
      if (struct stat st{}; f.elf != nullptr && ::fstat(f.fd, &st) == 0 &&
                            !CompanionOwnerAllowed(st.st_uid, owner, &error)) {
        error = c + ": " + error;
        f.Close();
      }
      // Inflated as the main file is: within the same bounds (elf_file.h) and budget.
      if (f.elf != nullptr) {
        if (const std::string refusal =
                CompressedDebugRefusal(CompressedDebugSections(f.elf), budget.inflated_left());
            !refusal.empty()) {
          error = c + ": " + refusal;
          f.Close();
        }
      }
      if (f.elf != nullptr) {
        Result<std::unique_ptr<DwarfFile>> d = DwarfFile::FromElf(f, c, budget);
        if (d) {
          file_ = std::move(f);
          dwarf_ = std::move(*d);
          path_ = c;
          return;
        }
        error = d.error().message;
        f.Close();
      }
      tried += (tried.empty() ? "" : "; ") + error;
    }
  }
  JITSYM_LOG(kWarning, debug_file, ": dwz file not read (", tried,
             "): the names and inlined frames it holds are missing");
}

size_t AltFile::Bytes() const {
  return (file_.elf != nullptr ? DebugSectionBytes(file_.elf) : 0) + (dwarf_ ? dwarf_->Bytes() : 0);
}

}  // namespace jitsym::native
