// Lookups in images (ReadyToRun perf maps, keyed by image name and signature): by image and RVA
// (`"image"` requests), and by pid and absolute address, through where the process maps the
// image (/proc/<pid>/maps, /tmp/perfinfo-<pid>.map).
//
// Called concurrently by server threads. Shared state is small and behind mutexes:
// - where each process maps its images: the per-pid snapshots (ProcessSnapshots) it shares with
//   NativeLookup, re-read on a miss while the process lives (at most every 100 ms);
// - r2rmaps loaded on demand from --r2rmap-dir directories (load_mu_): a query that needs an
//   image reads `<dir>/<image>.ni.r2rmap` itself, on its own thread,
//   with the same parser the ingester uses; other queries needing a load wait for it, queries
//   that need none never do. Such images are immutable once loaded (the files are build
//   artifacts); a miss is retried after a second.
// Which maps of an image count, and in which order, is decided by daemon/security
// (BelieveImageMap, ImageMapRank): the operator's maps first, a planted map never first.
#ifndef JITSYM_DAEMON_QUERY_IMAGE_LOOKUP_H_
#define JITSYM_DAEMON_QUERY_IMAGE_LOOKUP_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/os/proc.h"
#include "daemon/query/process_snapshots.h"
#include "daemon/query/resolver.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::security {
class LimitLedger;
}

namespace jitsym::query {

// "{0D2A...-...}" / "0d2a..." -> 32 lower-case hex digits; empty if it is not a signature.
std::string NormalizeSignature(std::string_view text);

// As a Resolver: the second step of a pid lookup, after the JIT index.
class ImageLookup : public Resolver {
 public:
  using Sources = std::vector<std::shared_ptr<const index::SourceView>>;
  struct Options {
    // Directories searched for `<image>.ni.r2rmap` (jitsymd --r2rmap-dir).
    std::vector<std::string> search_dirs;
    // Charged with the bytes of the maps read from them, per owner (kept for the daemon's life);
    // none: only the per-file bound applies.
    std::shared_ptr<security::LimitLedger> ledger;
  };
  // `processes`: where the processes map their images (shared with NativeLookup; outlives this).
  ImageLookup(Options options, ProcessSnapshots& processes);

  // An "image" request. False if the image is unknown (nothing answered). `for_uid`: whose
  // maps count besides the operator's, root's and the daemon's (the client; 0 for the trusted
  // group). Answers from a map the client could not read itself are denied.
  bool LookupImage(LookupBatch& batch, uint32_t for_uid);
  // A pid request: answers the pending addresses that fall in an image the process maps. Where
  // a process maps its images is only told to a peer that may see the process (it would
  // otherwise defeat the address-space randomization of others).
  std::optional<proto::ErrorResponse> Resolve(LookupBatch& batch) override;

  // The image sources (r2rmaps) of the images the live process `pid` maps now, each with its
  // base and end (0: unknown), with the maps believed for its owner; and who that process is
  // (to match it with an incarnation). nullopt if no process has the pid (or it changed while
  // being read). Never a table cached from an earlier process.
  struct MappedImage {
    std::shared_ptr<const index::SourceView> source;
    uint64_t base = 0;
    uint64_t end = 0;
  };
  struct LiveProcess {
    os::ProcessIdentity identity;
    std::vector<MappedImage> images;
  };
  std::optional<LiveProcess> LiveMappedImages(const index::IndexView& view, uint32_t pid);

 private:
  struct Loaded {
    std::shared_ptr<const index::SourceView> source;  // null: not found
    uint64_t checked_ns = 0;
  };

  // The maps of an image believed for `for_uid`, in precedence order (operator's first).
  Sources FindByName(const index::IndexView& view, const std::string& name, uint32_t for_uid);
  Sources FindBySignature(const index::IndexView& view, const std::string& signature,
                          uint32_t for_uid);
  std::shared_ptr<const index::SourceView> LoadFromDirs(const std::string& name);

  Options options_;
  ProcessSnapshots& processes_;
  std::mutex load_mu_;
  std::map<std::string, Loaded> loaded_;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_IMAGE_LOOKUP_H_
