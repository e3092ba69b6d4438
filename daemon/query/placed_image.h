// Where a process has an image: the mapped files of /proc/<pid>/maps and the ReadyToRun images
// perfinfo maps place (process_snapshots.h, perfinfo_files.h).
#ifndef JITSYM_DAEMON_QUERY_PLACED_IMAGE_H_
#define JITSYM_DAEMON_QUERY_PLACED_IMAGE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace jitsym::query {

// A file mapped in a process, as an image would be.
struct PlacedImage {
  std::string name;  // the image name; empty for files that are not .dll (native libraries)
  uint64_t base = 0;
  uint64_t end = 0;  // 0: unknown (from perfinfo only)
};

// "/usr/share/dotnet/.../System.Private.CoreLib.dll" -> "System.Private.CoreLib".
std::string ImageNameFromPath(std::string_view path);
// Whether the path names a .dll (any case).
bool IsDll(std::string_view path);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_PLACED_IMAGE_H_
