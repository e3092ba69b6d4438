// The debug sections of one file, as byte spans: the input of a Context (context.h). Filled
// from an ELF image (LoadSections, which inflates compressed sections within the caller's
// budget and keeps the inflated bytes), or by a caller holding a section table of its own.
//
// A file is either a main file (.debug_info, ...) or a split DWARF file: a .dwo or a .dwp
// package, whose sections are named .debug_info.dwo, ... The library takes one set or the other
// (a file holding .debug_info.dwo is read as split, and only its *.dwo sections are taken),
// so that the two never mix.
#ifndef JITSYM_DAEMON_DWARF_SECTIONS_H_
#define JITSYM_DAEMON_DWARF_SECTIONS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/elf_image.h"
#include "daemon/util/byte_reader.h"
#include "daemon/util/result.h"

namespace jitsym::dwarf {

enum class SectionId : uint8_t {
  kInfo,
  kTypes,
  kAbbrev,
  kStr,
  kLineStr,
  kLine,
  kRanges,
  kRngLists,
  kAddr,
  kStrOffsets,
  kCuIndex,
  kTuIndex,
  kSup,         // .debug_sup (DWARF 5 supplementary files)
  kGnuAltLink,  // .gnu_debugaltlink (dwz)
  kAranges,
  kCount
};
inline constexpr size_t kSectionCount = static_cast<size_t>(SectionId::kCount);

// The section's name without its prefix and suffix ("info" for .debug_info and
// .zdebug_info.dwo), for messages.
std::string_view SectionName(SectionId id);

// Which section a name is: .debug_X / .zdebug_X, with ".dwo" when `dwo`. nullopt for others.
std::optional<SectionId> SectionFromName(std::string_view name, bool dwo);

struct Sections {
  std::array<std::string_view, kSectionCount> data{};
  ByteOrder order = ByteOrder::kLittle;
  bool dwo = false;  // the sections of a .dwo file or a .dwp package

  std::string_view operator[](SectionId id) const { return data[static_cast<size_t>(id)]; }
  std::string_view& operator[](SectionId id) { return data[static_cast<size_t>(id)]; }
};

// Sections and the inflated bytes they point into (movable: the bytes do not move).
class LoadedSections {
 public:
  const Sections& sections() const { return sections_; }
  // Bytes inflated for this file.
  uint64_t inflated_bytes() const { return inflated_bytes_; }

 private:
  friend Result<LoadedSections> LoadSections(const ElfImage& image, Budget& budget);
  Sections sections_;
  std::vector<std::unique_ptr<std::string>> inflated_;
  uint64_t inflated_bytes_ = 0;
};

// The debug sections of `image`, compressed ones inflated (inflate.h). A section that cannot be
// inflated fails the whole load with that section's error (kMalformed, kUnsupported, kLimit),
// its name in the message. The spans point into `image`'s bytes or the result's own.
Result<LoadedSections> LoadSections(const ElfImage& image, Budget& budget);

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_SECTIONS_H_
