// Debug sections by name, inflated when compressed (sections.h).
#include "daemon/dwarf/sections.h"

#include "daemon/dwarf/inflate.h"

namespace jitsym::dwarf {
namespace {

constexpr std::string_view kNames[kSectionCount] = {
    "info",     "types", "abbrev",      "str",      "line_str", "line", "ranges",
    "rnglists", "addr",  "str_offsets", "cu_index", "tu_index", "sup",  "gnu_debugaltlink",
    "aranges"};

}  // namespace

std::string_view SectionName(SectionId id) { return kNames[static_cast<size_t>(id)]; }

std::optional<SectionId> SectionFromName(std::string_view name, bool dwo) {
  if (!dwo && name == ".gnu_debugaltlink") return SectionId::kGnuAltLink;
  if (name.starts_with(".debug_")) {
    name.remove_prefix(7);
  } else if (name.starts_with(".zdebug_")) {
    name.remove_prefix(8);
  } else {
    return std::nullopt;
  }
  if (dwo) {
    if (!name.ends_with(".dwo")) return std::nullopt;
    name.remove_suffix(4);
  }
  for (size_t i = 0; i < kSectionCount; ++i) {
    const auto id = static_cast<SectionId>(i);
    if (id == SectionId::kGnuAltLink) continue;
    // A package's indexes keep their names (.debug_cu_index); a .dwo has none.
    if (name == kNames[i]) return id;
  }
  return std::nullopt;
}

Result<LoadedSections> LoadSections(const ElfImage& image, Budget& budget) {
  LoadedSections out;
  Sections& s = out.sections_;
  s.order = image.order;
  for (const ElfSection& section : image.sections) {
    if (section.name == ".debug_info.dwo" || section.name == ".zdebug_info.dwo") s.dwo = true;
  }
  for (const ElfSection& section : image.sections) {
    std::optional<SectionId> id = SectionFromName(section.name, s.dwo);
    // The package indexes are named without ".dwo" in a .dwp.
    if (!id && s.dwo && (section.name == ".debug_cu_index" || section.name == ".debug_tu_index")) {
      id = section.name == ".debug_cu_index" ? SectionId::kCuIndex : SectionId::kTuIndex;
    }
    if (!id || section.type == kShtNobits || !s[*id].empty()) continue;
    std::string_view bytes = section.data;
    Result<std::string> inflated = MakeError(ErrorKind::kNotThisFormat, "");
    if ((section.flags & kShfCompressed) != 0) {
      inflated = InflateElfSection(bytes, image.is64, image.order, budget);
    } else if (section.name.starts_with(".zdebug")) {
      inflated = InflateZdebugSection(bytes, budget);
      // Without "ZLIB", binutils left the section as it was.
      if (!inflated && inflated.error().kind == ErrorKind::kNotThisFormat) {
        s[*id] = bytes;
        continue;
      }
    } else {
      s[*id] = bytes;
      continue;
    }
    if (!inflated) {
      Error e = std::move(inflated).error();
      e.message = std::string(section.name) + ": " + e.message;
      e.offset += section.offset;
      return e;
    }
    out.inflated_bytes_ += inflated->size();
    out.inflated_.push_back(std::make_unique<std::string>(std::move(*inflated)));
    s[*id] = *out.inflated_.back();
  }
  return out;
}

}  // namespace jitsym::dwarf
