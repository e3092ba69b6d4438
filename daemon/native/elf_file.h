// The ELF layer under NativeModule: opening a file as ELF with its header tables checked against
// the file's size, finding sections by name, the build-id note, and what the DWARF reader will
// read. Thin
// wrappers over libelf; everything above them works on an `Elf*` these opened.
#ifndef JITSYM_DAEMON_NATIVE_ELF_FILE_H_
#define JITSYM_DAEMON_NATIVE_ELF_FILE_H_

#include <gelf.h>
#include <libelf.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "daemon/native/mapping_guard.h"

namespace jitsym::native {

// elf_version() once per process, before any other libelf call.
void InitElf();

// An ELF file open for reading: its descriptor and libelf handle, both released by Close().
struct OpenedElf {
  int fd = -1;
  Elf* elf = nullptr;
  MappingGuard guard;  // registered when libelf reads a mapping of the file
  void Close();
};

// How OpenElf has libelf read sections.
enum class ElfRead {
  kCopy,  // ELF_C_READ: each section read into memory when first used
  kMap,   // ELF_C_READ_MMAP under a MappingGuard (a file that shrinks later reads as zeros past
          // its end, instead of faulting); copied when no guard slot is free
};

// Reads up to bytes->size() bytes of the file open as `fd` from offset 0 into *bytes with
// pread (EINTR retried); returns how many were read (fewer when the file is shorter now).
size_t PreadFromStart(int fd, std::string* bytes);

// Opens a regular file as ELF. A mapped file costs no copy, no heap and no page faults on fresh
// memory (a fifth of the CPU of a first lookup in a 128 MB binary). On failure elf is null and
// *error (when not null) says why: "PATH: not an ELF file", "PATH: section headers ... truncated".
OpenedElf OpenElf(const std::string& path, std::string* error, ElfRead how = ElfRead::kCopy);
// A mapping libelf made of `elf` (ELF_C_READ_MMAP), under a guard naming `file`; an empty guard
// when `elf` was not mapped or no slot is free.
MappingGuard GuardMapping(Elf* elf, std::string_view file);

// Section data, or nullptr (also for SHT_NOBITS and sections libelf rejects).
Elf_Data* SectionData(Elf_Scn* scn);
// The first section named `name` (and its header in *out), or nullptr.
Elf_Scn* FindSection(Elf* elf, std::string_view name, GElf_Shdr* out = nullptr);
// Whether the file holds DWARF (.debug_info, or the old compressed .zdebug_info).
bool HasDwarf(Elf* elf);
// The NT_GNU_BUILD_ID note's raw bytes (from a note section, else a PT_NOTE segment); empty if
// there is none.
std::string ReadBuildId(Elf* elf);
// Raw build-id bytes -> lower-case hex.
std::string HexBuildId(std::string_view bytes);
// Bytes of the .debug* / .zdebug* sections: what the DWARF reader reads from this file (through
// a mapping that is resident once read, or inflated into memory); a compressed section counts what
// it says it inflates to.
size_t DebugSectionBytes(Elf* elf);

// What the compressed debug sections of a file (SHF_COMPRESSED, and .zdebug_*) say they inflate
// to, read from their headers alone. The reader inflates them into memory when it reads the
// file: a 4 MB file claiming four 1 GiB sections would take 4 GiB.
struct CompressedDebug {
  uint64_t compressed = 0;  // their bytes in the file
  uint64_t claimed = 0;     // the sum of their inflated sizes, as their headers say
  std::string largest;      // the name of the section claiming the most
  uint64_t largest_claim = 0;
};
CompressedDebug CompressedDebugSections(Elf* elf);

// Real DWARF compresses 3 to 10 times with zlib; a file whose compressed debug sections claim
// more than this many times their size, or more than `bound` in all (the owner's quota, at most
// kMaxInflatedDebugBytes), has its DWARF not read (its symbol tables still answer). "" when the
// claims are within the bounds, else why not, naming the section and the bound.
inline constexpr uint64_t kMaxDebugInflation = 64;
inline constexpr uint64_t kMaxInflatedDebugBytes = uint64_t{1} << 30;
std::string CompressedDebugRefusal(const CompressedDebug& c,
                                   uint64_t bound = kMaxInflatedDebugBytes);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_ELF_FILE_H_
