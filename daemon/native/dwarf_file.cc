// One file's DWARF over daemon/dwarf/ (dwarf_file.h).
#include "daemon/native/dwarf_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace jitsym::native {

Result<std::unique_ptr<DwarfFile>> DwarfFile::Load(std::unique_ptr<DwarfFile> f,
                                                   std::string_view bytes, dwarf::Budget& budget) {
  Result<dwarf::ElfImage> image = dwarf::ReadElfImage(bytes);
  if (!image) {
    Error e = std::move(image).error();
    e.message = f->name_ + ": " + e.message;
    return e;
  }
  f->image_ = std::move(*image);
  Result<dwarf::LoadedSections> sections = dwarf::LoadSections(f->image_, budget);
  if (!sections) {
    Error e = std::move(sections).error();
    e.message = f->name_ + ": " + e.message;
    return e;
  }
  f->sections_ = std::move(*sections);
  f->context_ = std::make_unique<dwarf::Context>(f->sections_.sections());
  return f;
}

Result<std::unique_ptr<DwarfFile>> DwarfFile::FromElf(const OpenedElf& file,
                                                      const std::string& name,
                                                      dwarf::Budget& budget) {
  if (!file.guard.registered()) {
    // Not mapped: the bytes from the descriptor, once.
    struct stat st {};
    if (file.fd < 0 || ::fstat(file.fd, &st) != 0 || st.st_size < 0) {
      return MakeError(ErrorKind::kIo, name + ": cannot read the file's size");
    }
    std::string bytes(static_cast<size_t>(st.st_size), '\0');
    bytes.resize(PreadFromStart(file.fd, &bytes));
    return FromBytes(std::move(bytes), name, budget);
  }
  size_t size = 0;
  const char* raw = file.elf != nullptr ? elf_rawfile(file.elf, &size) : nullptr;
  if (raw == nullptr) {
    return MakeError(ErrorKind::kIo, name + ": the file's bytes cannot be read: " + elf_errmsg(-1));
  }
  std::unique_ptr<DwarfFile> f(new DwarfFile());
  f->name_ = name;
  return Load(std::move(f), std::string_view(raw, size), budget);
}

Result<std::unique_ptr<DwarfFile>> DwarfFile::FromBytes(std::string bytes, const std::string& name,
                                                        dwarf::Budget& budget) {
  std::unique_ptr<DwarfFile> f(new DwarfFile());
  f->name_ = name;
  f->owned_ = std::move(bytes);
  const std::string_view view = f->owned_;
  return Load(std::move(f), view, budget);
}

size_t DwarfFile::Bytes() const {
  return sizeof(*this) + owned_.capacity() + sections_.inflated_bytes() +
         image_.sections.capacity() * sizeof(dwarf::ElfSection);
}

}  // namespace jitsym::native
