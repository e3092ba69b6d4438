// Answers protocol requests from the published IndexView. Called concurrently by server threads;
// takes the current view once per request and never waits for the ingester.
#ifndef JITSYM_DAEMON_QUERY_QUERY_ENGINE_H_
#define JITSYM_DAEMON_QUERY_QUERY_ENGINE_H_

#include <functional>

#include "daemon/index/index_view.h"
#include "daemon/query/image_lookup.h"
#include "daemon/query/native_lookup.h"
#include "daemon/server/server.h"
#include "proto/protocol.h"

namespace jitsym::query {

class QueryEngine : public server::RequestHandler {
 public:
  QueryEngine(const index::ViewCell& cell, std::function<server::Counters()> server_counters);

  proto::Response Handle(const proto::Request& request,
                         const server::PeerCredentials& peer) override;

  // The lookup itself, for in-process use and benchmarks.
  static void Lookup(const index::IndexView& view, const proto::LookupRequest& request,
                     proto::LookupResponse* out);
  static proto::ProcessesResponse Processes(const index::IndexView& view);

 private:
  const index::ViewCell& cell_;
  std::function<server::Counters()> server_counters_;
  uint64_t started_ns_;
  // Image sources (r2rmap): "image" requests, and the addresses of a pid no JIT source knows.
  ImageLookup images_;
  // ELF files: "image" requests naming one (or a build-id), and what is left of pid requests.
  NativeLookup native_;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_QUERY_ENGINE_H_
