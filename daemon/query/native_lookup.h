// Native (ELF/DWARF) answers: "image" lookups in an ELF file (by path or build-id), and the
// addresses of a process that fall in a file-backed executable mapping and that no JIT source
// or ReadyToRun image answered. See docs/formats.md, "Native (ELF/DWARF)".
//
// Called concurrently by server threads. A process's executable mappings come from the per-pid
// snapshots (ProcessSnapshots) it shares with ImageLookup, re-read on a miss while the process
// lives (at most every 100 ms). Modules are shared through a ModuleCache.
#ifndef JITSYM_DAEMON_QUERY_NATIVE_LOOKUP_H_
#define JITSYM_DAEMON_QUERY_NATIVE_LOOKUP_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/native/module_cache.h"
#include "daemon/query/process_snapshots.h"
#include "daemon/query/resolver.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::query {

struct NativeOptions {
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};  // jitsymd --debug-dir
  size_t cache_bytes = size_t{1} << 30;                      // jitsymd --debug-cache-mb
};
// As a Resolver: the last step of a pid lookup, after the JIT index and the images.
class NativeLookup : public Resolver {
 public:
  // `processes`: what the processes map (shared with ImageLookup; outlives this).
  NativeLookup(NativeOptions options, ProcessSnapshots& processes);

  // Whether an "image" request is for an ELF file: it names a build-id, or its image is a path
  // (already walked and allowed: `walked`) to a regular file that starts with the ELF magic.
  static bool IsNativeImageRequest(const proto::LookupRequest& request,
                                   const security::WalkedPath* walked);
  // An image request; nullopt on success, else the error to send. `walked`: the image path the
  // caller checked with access.CheckRead (only that file is opened); null for a build id, whose
  // candidate files are used only if the peer may read them.
  std::optional<proto::ErrorResponse> LookupImage(LookupBatch& batch,
                                                  const security::WalkedPath* walked);
  // A pid request: answers the pending addresses that fall in an executable mapping of a file,
  // for a peer that may see the process.
  std::optional<proto::ErrorResponse> Resolve(LookupBatch& batch) override;

  native::ModuleCache& modules() { return modules_; }

 private:
  using ExecMapping = ProcessSnapshot::ExecMapping;
  // The module of the file a process maps, or null and *error; *gone when no path is the file
  // it mapped any more (os::MappedFilePath): then nothing was opened, and *error says so.
  std::shared_ptr<native::NativeModule> ModuleFor(uint32_t pid, const ExecMapping& m,
                                                  std::string* error, bool* gone);

  native::ModuleCache modules_;
  ProcessSnapshots& processes_;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_NATIVE_LOOKUP_H_
