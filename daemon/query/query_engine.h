// Answers protocol requests from the published IndexView. Called concurrently by server threads;
// takes the current view once per request and never waits for the ingester. A pid lookup runs
// through a chain of resolvers (resolver.h): the JIT index, the access decision for the pid,
// the ReadyToRun images the process maps, its ELF mappings. An image lookup goes to the one
// resolver of its kind (r2rmap or ELF) once the access rule allowed the path.
#ifndef JITSYM_DAEMON_QUERY_QUERY_ENGINE_H_
#define JITSYM_DAEMON_QUERY_QUERY_ENGINE_H_

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/query/access_checks.h"
#include "daemon/query/image_lookup.h"
#include "daemon/query/index_resolver.h"
#include "daemon/query/native_lookup.h"
#include "daemon/query/process_snapshots.h"
#include "daemon/query/resolver.h"
#include "daemon/security/peer_access.h"
#include "daemon/server/server.h"
#include "proto/protocol.h"

namespace jitsym::query {

class QueryEngine : public server::RequestHandler {
 public:
  struct Options {
    security::AccessPolicy access;  // who may ask about what (jitsymd --trusted-group)
    ImageLookup::Options images;    // --r2rmap-dir
    NativeOptions native;           // --debug-dir, --debug-cache-mb
    // What processes map, and the perfinfo maps read for them (charged to their owners' quota).
    ProcessSnapshots::Options processes;
  };
  QueryEngine(const index::ViewCell& cell, std::function<server::Counters()> server_counters,
              Options options);

  proto::Response Handle(const proto::Request& request,
                         const server::PeerCredentials& peer) override;
  // symbols, processes and explain: pulled step by step as the client reads them
  // (answer_producers.h); the rest as Handle answers them.
  server::Reply Respond(const proto::Request& request,
                        const server::PeerCredentials& peer) override;
  void Recycle(proto::Response&& spent) override;
  // The per-address error for a process or image the client may not query.
  static constexpr std::string_view kDenied = kDeniedError;

 private:
  // A lookup by pid (through the chain) or by image; nullopt when `lookup` holds the answer.
  std::optional<proto::ErrorResponse> Lookup(const proto::LookupRequest& request,
                                             const security::PeerAccess& access,
                                             LookupBatch& batch);
  void CountDenied(const proto::LookupResponse& lookup);
  // The explain report, or the error that answers instead.
  proto::Response Explain(const std::shared_ptr<const index::IndexView>& view,
                          const proto::ExplainRequest& request, const security::PeerAccess& access);
  // Results storage of spent lookup slices (Recycle), for the next slices to fill.
  std::vector<proto::LookupResult> TakeSpareResults();

  static constexpr size_t kMaxSpareResults = 4;     // one per thread that may be answering
  static constexpr size_t kMaxSliceResults = 8192;  // ServerOptions::answer_slice's default
  static constexpr size_t kMaxKeptFrames = 32;
  static constexpr size_t kMaxKeptTextBytes = 512;
  static constexpr size_t kMaxKeptBytes = 4u << 20;  // per array, besides the array itself
  std::mutex spare_mu_;
  std::vector<std::vector<proto::LookupResult>> spare_results_;

  const index::ViewCell& cell_;
  std::function<server::Counters()> server_counters_;
  security::AccessPolicy policy_;
  std::atomic<uint64_t> denied_{0};  // addresses and requests refused by the access rules
  uint64_t started_ns_;
  // What each process maps, read once per pid and shared by the two lookups below (declared
  // before them: they hold a reference to it).
  ProcessSnapshots processes_;
  // Image sources (r2rmap): "image" requests, and the addresses of a pid no JIT source knows.
  ImageLookup images_;
  // ELF files: "image" requests naming one (or a build-id), and what is left of pid requests.
  NativeLookup native_;
  IndexResolver index_;
  ProcessDenials process_denials_;
  // A pid lookup: JIT sources first; the ReadyToRun images the process maps answer what they
  // do not know, then the ELF files it maps.
  std::array<Resolver*, 4> pid_chain_;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_QUERY_ENGINE_H_
