// One snapshot per pid of what /proc says about a process (who it is, what it maps), read once
// and shared by every lookup that needs it: the ReadyToRun images it maps (ImageLookup) and its
// executable file mappings (NativeLookup). One read of /proc/<pid>/maps serves both, and both
// agree on which process a pid names.
//
// Called concurrently by server threads; the snapshots live in one os::ProcessTableCache: kept
// after the process exits (its samples still need answers), read again at most every 100 ms,
// replaced when the pid is reused. A snapshot is immutable once read.
#ifndef JITSYM_DAEMON_QUERY_PROCESS_SNAPSHOTS_H_
#define JITSYM_DAEMON_QUERY_PROCESS_SNAPSHOTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/os/proc.h"
#include "daemon/os/process_maps.h"
#include "daemon/os/process_table_cache.h"

namespace jitsym::query {

// "/usr/share/dotnet/.../System.Private.CoreLib.dll" -> "System.Private.CoreLib".
std::string ImageNameFromPath(std::string_view path);

// What one read of /proc told about a process, with what each lookup needs derived once, when
// it is read (the lookups then do no more work per address than a binary search).
struct ProcessSnapshot {
  // A file-backed executable mapping (for ELF symbolization).
  struct ExecMapping {
    uint64_t start = 0, end = 0, offset = 0, inode = 0;
    uint64_t dev = 0;  // of the file, as /proc/<pid>/maps shows it: which mount it lies on
    std::string path;
  };
  // A file mapped in the process, as an image would be.
  struct Placed {
    std::string name;  // the image name; empty for files that are not .dll (native libraries)
    uint64_t base = 0;
    uint64_t end = 0;  // 0: unknown (from perfinfo only)
  };

  os::ProcessIdentity identity;   // who the process was when it was read
  uint64_t read_ns = 0;           // when (CLOCK_MONOTONIC)
  std::vector<ExecMapping> exec;  // sorted by start
  // Every mapped file (the others, native libraries, bound the images whose extent only
  // perfinfo gives, and an address in them is known not to be in any image), and the images
  // .NET 8 and older log in /tmp/perfinfo-<pid>.map; sorted by base.
  std::vector<Placed> images;
};

class ProcessSnapshots {
 public:
  static constexpr uint64_t kMinRereadNs = os::ProcessTableCache<ProcessSnapshot>::kMinRereadNs;

  struct Options {
    std::string perfinfo_dir = "/tmp";
    // The /proc readers (tests replace them).
    std::function<std::optional<os::ProcessIdentity>(uint32_t)> read_identity =
        &os::ReadProcessIdentity;
    std::function<std::optional<std::vector<os::Mapping>>(uint32_t)> read_maps =
        &os::ReadProcessMaps;
  };
  ProcessSnapshots() : ProcessSnapshots(Options{}) {}
  explicit ProcessSnapshots(Options options);

  // The snapshot a lookup starts from: the cached one (read if there is none), unless it is old
  // enough to be re-read and the pid names another process now. Null if the process was never
  // read and cannot be. *fresh: read by this call.
  std::shared_ptr<const ProcessSnapshot> Current(uint32_t pid, bool* fresh);
  // Read again if the cached snapshot is old enough (kMinRereadNs), for addresses the cached
  // one does not cover (the process may have mapped more since); else the cached one.
  std::shared_ptr<const ProcessSnapshot> Refreshed(uint32_t pid, bool* fresh);
  // Read now, not from the cache (which keeps the snapshot of a process that has exited), and
  // only if the pid still names the same process once its maps are read; else null.
  std::shared_ptr<const ProcessSnapshot> ReadLive(uint32_t pid);

 private:
  std::shared_ptr<const ProcessSnapshot> Read(uint32_t pid);

  Options options_;
  os::ProcessTableCache<ProcessSnapshot> cache_;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_PROCESS_SNAPSHOTS_H_
