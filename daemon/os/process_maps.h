// What /proc/<pid>/maps says about a process's mappings, and where each mapped file's image
// starts. Used to turn absolute addresses into RVAs of ReadyToRun images and of ELF objects.
#ifndef JITSYM_DAEMON_OS_PROCESS_MAPS_H_
#define JITSYM_DAEMON_OS_PROCESS_MAPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::os {

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  std::string perms;  // "r-xp"
  uint64_t dev = 0;   // makedev(major, minor) of the device holding the file
  uint64_t inode = 0;
  std::string path;  // empty for anonymous mappings; " (deleted)" is removed
  bool deleted = false;
};

// One mapped file: base = start of its mapping at file offset 0 (the image base), end = end of
// its last mapping.
struct MappedFile {
  std::string path;
  uint64_t base = 0;
  uint64_t end = 0;
};

// Parses the text of /proc/<pid>/maps; malformed lines are skipped.
std::vector<Mapping> ParseProcessMaps(std::string_view text);
// nullopt when the process is gone or its maps are not readable.
std::optional<std::vector<Mapping>> ReadProcessMaps(uint32_t pid);
// Where the daemon can open the file a process maps at [start, end) (path, device and inode from
// its maps): the path itself if it still names that very file; else the process's own view of
// it (/proc/<pid>/root/<path>, for another mount namespace); else the mapping itself
// (/proc/<pid>/map_files/<start>-<end>, for a file replaced or deleted since, while the process
// lives). A path names the mapped file when its device and inode are the mapping's, or (file
// systems whose stat device is not the one maps shows: btrfs subvolumes, overlays) when its
// inode is and a mapping of it made here shows the mapping's device and inode in the daemon's
// own maps, or the live process's map_files entry is that same file (which needs
// CAP_SYS_ADMIN). An inode number alone is
// never enough: another user can map a file of his with the inode number of hers, delete it and
// point the path at hers. "" when no path is the mapped file (then nothing is opened); the path
// when its filesystem was not asked or did not answer (opening it fails the same way).
std::string MappedFilePath(uint32_t pid, const std::string& path, uint64_t dev, uint64_t inode,
                           uint64_t start, uint64_t end);
// Files mapped at offset 0 (pseudo-paths like "[heap]" excluded), sorted by base.
std::vector<MappedFile> MappedFiles(const std::vector<Mapping>& mappings);

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_PROCESS_MAPS_H_
