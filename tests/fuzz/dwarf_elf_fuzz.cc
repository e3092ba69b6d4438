// The DWARF reader from a hostile ELF image: the section table, compressed sections inflated
// within a budget (SHF_COMPRESSED, .zdebug), then every unit read (tests/fuzz/dwarf_fuzz.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/dwarf/elf_image.h"
#include "tests/fuzz/dwarf_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jitsym;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Result<dwarf::ElfImage> image = dwarf::ReadElfImage(bytes);
  if (!image) return 0;
  for (const dwarf::ElfSection& s : image->sections) {
    fuzz::TouchAll(s.name);
    fuzz::TouchAll(s.data);
  }
  dwarf::Budget budget(fuzz::FuzzLimits());
  Result<dwarf::LoadedSections> sections = dwarf::LoadSections(*image, budget);
  if (!sections) return 0;
  if (sections->inflated_bytes() > fuzz::FuzzLimits().inflated_bytes) __builtin_trap();
  dwarf::Context ctx(sections->sections());
  Result<std::optional<dwarf::SupplementaryLink>> link =
      dwarf::ReadSupplementaryLink(sections->sections());
  if (link && *link) fuzz::TouchAll((*link)->name);
  fuzz::ReadEverything(ctx, ctx.split() ? &ctx : nullptr, budget);
  return 0;
}
