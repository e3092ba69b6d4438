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
#include "daemon/query/perfinfo_files.h"
#include "daemon/query/placed_image.h"

namespace jitsym::query {

// What one read of /proc told about a process, with what each lookup needs derived once, when
// it is read (the lookups then do no more work per address than a binary search).
struct ProcessSnapshot {
  // A file-backed executable mapping (for ELF symbolization).
  struct ExecMapping {
    uint64_t start = 0, end = 0, offset = 0, inode = 0;
    uint64_t dev = 0;  // of the file, as /proc/<pid>/maps shows it: which mount it lies on
    std::string path;
  };
  using Placed = PlacedImage;

  os::ProcessIdentity identity;   // who the process was when it was read
  uint64_t read_ns = 0;           // when (CLOCK_MONOTONIC)
  std::vector<ExecMapping> exec;  // sorted by start
  // Every mapped file, sorted by base: the images (.dll), and the others (native libraries),
  // which bound the images whose extent only perfinfo gives (an address in them is known not to
  // be in any image).
  std::vector<Placed> images;
  // The images .NET 8 and older log in /tmp/perfinfo-<pid>.map (sorted by base, one per base,
  // shared by the snapshots of the process while the file does not grow); null if none.
  std::shared_ptr<const std::vector<Placed>> perfinfo;

  // The placed image whose base is the nearest at or below addr, of both lists (a mapped file
  // wins over a perfinfo line for the same base); null if none. Its extent is the caller's to
  // check (`end`, or 4 GiB of RVAs for perfinfo's).
  const Placed* PlacedAt(uint64_t addr) const;
  // Calls fn for every placed image: the mapped files, then perfinfo's images at a base no
  // mapped file has.
  template <typename F>
  void ForEachPlaced(F&& fn) const;
};

class ProcessSnapshots {
 public:
  static constexpr uint64_t kMinRereadNs = os::ProcessTableCache<ProcessSnapshot>::kMinRereadNs;

  struct Options {
    PerfinfoFiles::Options perfinfo;  // where perfinfo maps are, and whose quota they use
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
  PerfinfoFiles perfinfo_;
  os::ProcessTableCache<ProcessSnapshot> cache_;
};

template <typename F>
void ProcessSnapshot::ForEachPlaced(F&& fn) const {
  for (const Placed& img : images) fn(img);
  if (!perfinfo) return;
  auto mapped = images.begin();
  for (const Placed& img : *perfinfo) {  // both sorted by base: one pass
    while (mapped != images.end() && mapped->base < img.base) ++mapped;
    if (mapped == images.end() || mapped->base != img.base) fn(img);
  }
}

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_PROCESS_SNAPSHOTS_H_
