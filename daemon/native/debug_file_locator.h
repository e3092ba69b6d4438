// Where the symbols and DWARF of a stripped binary are found when it does not carry them itself:
// separate debug files in .build-id trees, next to the binary through .gnu_debuglink, or fetched
// by debuginfod (DebugSearch::extra_files, from debuginfod_fetcher.h), and the MiniDebugInfo
// (.gnu_debugdata, an xz-compressed ELF image holding the symbols strip removed) inside it.
// A debug file is accepted only if it belongs to the binary: same build-id, or, for a debuglink
// without build-id, the CRC the binary recorded.
#ifndef JITSYM_DAEMON_NATIVE_DEBUG_FILE_LOCATOR_H_
#define JITSYM_DAEMON_NATIVE_DEBUG_FILE_LOCATOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/native/elf_file.h"
#include "daemon/native/native_module.h"

namespace jitsym::native {

// .gnu_debuglink: NAME\0, padding to 4 bytes, CRC32 of the debug file.
struct DebugLink {
  std::string name;  // a bare file name (one holding '/' is not taken)
  std::optional<uint32_t> crc;
};
std::optional<DebugLink> ReadDebugLink(Elf* elf);

struct DebugCandidate {
  std::string path;
  bool from_debuglink = false;  // only these may match by CRC when the binary has no build-id
  // Fetched by the daemon from debuginfod for this build id (search.extra_files): its owner is
  // the daemon, not the binary's, and it must match the build id anyway.
  bool fetched = false;
};
// The paths tried, in order, for the binary at `binary_path` with hex build-id `build_id` (may
// be empty) and debuglink `link` (may be null): DIR/.build-id/xx/rest.debug for each debug dir,
// search.extra_files, then the debuglink name next to the binary, in its .debug/ directory, and
// under each debug dir. Pure: nothing is opened.
std::vector<DebugCandidate> DebugFileCandidates(const std::string& binary_path,
                                                const std::string& build_id, const DebugLink* link,
                                                const DebugSearch& search);

// Whether a companion file of a binary (its debug file, dwz file, .dwo, .dwp) may be read for
// it: owned by root or by the binary's owner `owner`. The daemon reads as root; another user's
// file named by a binary (a debug link beside a symlink into her home) is not read for him.
// *why says which uid owns it otherwise. Pure over the file's owner.
bool CompanionOwnerAllowed(uint32_t file_owner, uint32_t owner, std::string* why);

// Opens the first candidate that is readable, is not the binary itself, is owned by root or by
// `owner` (the binary's), belongs to it and holds DWARF. elf is null if none does; otherwise
// *found is its path.
OpenedElf OpenDebugFile(const std::string& binary_path, Elf* binary, uint32_t owner,
                        const std::string& build_id, const DebugSearch& search, std::string* found);

// The decompressed .gnu_debugdata section (at most 256 MiB); nullopt when there is none or it
// cannot be decompressed (logged, naming `path`).
std::optional<std::string> ReadMiniDebugInfo(Elf* elf, const std::string& path);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_DEBUG_FILE_LOCATOR_H_
