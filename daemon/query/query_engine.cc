// Dispatches protocol requests: see query_engine.h.
#include "daemon/query/query_engine.h"

#include <type_traits>

#include "daemon/query/access_checks.h"
#include "daemon/query/answer_producers.h"
#include "daemon/query/explain.h"
#include "daemon/query/miss_reasons.h"
#include "daemon/query/processes_query.h"
#include "daemon/query/symbols_query.h"
#include "daemon/util/clock.h"

namespace jitsym::query {
namespace {

proto::Response Error(std::string_view code, std::string message) {
  proto::Response r;
  r.body = proto::ErrorResponse{std::string(code), std::move(message)};
  return r;
}

}  // namespace

QueryEngine::QueryEngine(const index::ViewCell& cell,
                         std::function<server::Counters()> server_counters, Options options)
    : cell_(cell),
      server_counters_(std::move(server_counters)),
      policy_(options.access),
      started_ns_(MonotonicNowNs()),
      processes_(std::move(options.processes)),
      images_(std::move(options.images), processes_),
      native_(std::move(options.native), processes_),
      pid_chain_{&index_, &process_denials_, &images_, &native_} {}

namespace {

// Why an image lookup found nothing, for the caller. Only about a path the caller could
// examine itself: one it may not (a directory on the way it cannot search, a file it cannot
// read) was refused before, with the same permission_denied whether the file exists or not.
std::string DescribeImageMiss(const proto::LookupRequest& body, const security::WalkedPath* path) {
  const std::string& image = *body.image;
  if (body.build_id) return "no ELF file with build id " + *body.build_id + " is known";
  const std::string no_map = "no ReadyToRun map (r2rmap) is known for it either";
  if (image.find('/') == std::string::npos) {
    return "no ReadyToRun map (r2rmap) known for image '" + image +
           "' (an ELF file is named by its absolute path)";
  }
  if (path == nullptr) return "no such file '" + image + "'; " + no_map;
  if (path->directory) return "'" + image + "' is a directory, not an ELF file; " + no_map;
  if (!path->regular) return "'" + image + "' is not a regular file; " + no_map;
  return "'" + image + "' is not an ELF file; " + no_map;
}

}  // namespace

std::optional<proto::ErrorResponse> QueryEngine::Lookup(const proto::LookupRequest& body,
                                                        const security::PeerAccess& access,
                                                        LookupBatch& batch) {
  // Contradictions are refused whole (the client reports them as usage errors first).
  if (body.file_offset && !body.image && !body.build_id) {
    return proto::ErrorResponse{std::string(proto::kErrBadRequest),
                                "\"file_offset\" is for \"image\" or \"build_id\" lookups"};
  }
  if (!body.image && !body.build_id) {
    if (!body.pid) {
      return proto::ErrorResponse{std::string(proto::kErrBadRequest), "lookup needs \"pid\""};
    }
    if (*body.pid <= 0 || *body.pid > 0x7fffffff) {
      return proto::ErrorResponse{std::string(proto::kErrBadRequest),
                                  "\"pid\" must be a positive process id"};
    }
    // Misses get their reason once the chain is done; a time that cannot be CLOCK_MONOTONIC
    // never reaches it.
    RefuseOtherClocks(batch);
    if (auto error = RunChain(pid_chain_, batch)) return error;
    ExplainMisses(batch);
    return std::nullopt;
  }
  if (body.pid) {
    return proto::ErrorResponse{std::string(proto::kErrBadRequest),
                                "lookup takes \"pid\" or \"image\", not both"};
  }
  // An image named by path: only for a client that could read the file itself, decided before
  // anything is opened.
  std::optional<security::WalkedPath> walked;
  if (auto error = CheckImageRequest(body, access, &walked)) {
    if (error->code == proto::kErrPermission) denied_.fetch_add(1, std::memory_order_relaxed);
    return error;
  }
  const security::WalkedPath* path = walked ? &*walked : nullptr;
  std::string unanswered;
  if (NativeLookup::IsNativeImageRequest(body, path, &unanswered)) {
    // An ELF file (by path or build-id).
    if (auto error = native_.LookupImage(batch, path)) return error;
    ExplainImageMisses(batch, body.image ? *body.image : "build id " + body.build_id.value_or(""));
    return std::nullopt;
  }
  if (!unanswered.empty()) {
    // Its filesystem did not answer (a FUSE server): whether it is an ELF file is unknown.
    return proto::ErrorResponse{std::string(proto::kErrTimeout),
                                "the image file was not read: " + unanswered};
  }
  // The trusted group reads as root; others as themselves.
  const uint32_t as_uid = access.trusted() ? 0 : access.uid();
  if (!images_.LookupImage(batch, as_uid)) {
    return proto::ErrorResponse{std::string(proto::kErrNotFound), DescribeImageMiss(body, path)};
  }
  ExplainImageMisses(batch, *body.image);
  return std::nullopt;
}

void QueryEngine::CountDenied(const proto::LookupResponse& lookup) {
  uint64_t n = 0;
  for (const proto::LookupResult& r : lookup.results) n += r.error == kDenied;
  if (n > 0) denied_.fetch_add(n, std::memory_order_relaxed);
}

void QueryEngine::Recycle(proto::Response&& spent) {
  auto* lookup = std::get_if<proto::LookupResponse>(&spent.body);
  if (lookup == nullptr || lookup->results.capacity() > 2 * kMaxSliceResults) return;
  std::vector<proto::LookupResult> results = std::move(lookup->results);
  spent = proto::Response{};  // the keepalive goes: the results' views are not read again
  // Kept: what a slice of plain answers grows to. Not kept: what one odd result grew to, nor
  // an array whose results hold more than kMaxKeptBytes besides it.
  size_t held = 0;
  for (proto::LookupResult& r : results) {
    if (r.frames.capacity() > kMaxKeptFrames) std::vector<proto::Frame>().swap(r.frames);
    held += r.frames.capacity() * sizeof(proto::Frame);
    for (std::string* s : {&r.error, &r.raw, &r.detail}) {
      if (s->capacity() > kMaxKeptTextBytes) std::string().swap(*s);
      held += s->capacity();
    }
  }
  if (held > kMaxKeptBytes) return;
  std::lock_guard lock(spare_mu_);
  if (spare_results_.size() < kMaxSpareResults) spare_results_.push_back(std::move(results));
}

std::vector<proto::LookupResult> QueryEngine::TakeSpareResults() {
  std::lock_guard lock(spare_mu_);
  if (spare_results_.empty()) return {};
  std::vector<proto::LookupResult> results = std::move(spare_results_.back());
  spare_results_.pop_back();
  return results;
}

proto::Response QueryEngine::Explain(const std::shared_ptr<const index::IndexView>& view,
                                     const proto::ExplainRequest& request,
                                     const security::PeerAccess& access) {
  // The answer comes from the lookup path itself (same chain, same access rule, same errors),
  // so explain and lookup cannot disagree.
  const proto::LookupRequest as_lookup = ExplainLookup(request);
  proto::LookupResponse lookup;
  LookupBatch batch(as_lookup, *view, access, &lookup);
  if (auto error = Lookup(as_lookup, access, batch)) {
    return Error(error->code, std::move(error->message));
  }
  const index::ProcessView* process = request.pid ? batch.processes().Find(request.time) : nullptr;
  const uint32_t process_pid = process != nullptr ? process->pid : batch.pid();
  lookup.keepalive = batch.TakeKeepalive(view);
  CountDenied(lookup);
  proto::Response response;
  response.body = BuildExplain(*view, request, access, process_pid, std::move(lookup));
  return response;
}

server::Reply QueryEngine::Respond(const proto::Request& request,
                                   const server::PeerCredentials& peer) {
  if (const auto* symbols = std::get_if<proto::SymbolsRequest>(&request.body)) {
    const std::shared_ptr<const index::IndexView> view = cell_.Get();
    const security::PeerAccess access(peer, policy_);
    SymbolsQuery query = OpenSymbols(*view, *symbols, access, images_);
    if (query.error) return {std::move(*query.error), nullptr};
    return {{}, SymbolsProducer(request.id_json, std::move(query.cursor))};
  }
  if (std::holds_alternative<proto::ProcessesRequest>(request.body)) {
    auto cursor =
        std::make_unique<ProcessesCursor>(cell_.Get(), security::PeerAccess(peer, policy_));
    return {{}, ProcessesProducer(request.id_json, std::move(cursor))};
  }
  if (const auto* explain = std::get_if<proto::ExplainRequest>(&request.body)) {
    const std::shared_ptr<const index::IndexView> view = cell_.Get();
    proto::Response response = Explain(view, *explain, security::PeerAccess(peer, policy_));
    auto* report = std::get_if<proto::ExplainResponse>(&response.body);
    if (report == nullptr) return {std::move(response), nullptr};
    return {{}, ExplainProducer(request.id_json, std::move(*report))};
  }
  return {Handle(request, peer), nullptr};
}

proto::Response QueryEngine::Handle(const proto::Request& request,
                                    const server::PeerCredentials& peer) {
  const std::shared_ptr<const index::IndexView> view = cell_.Get();
  const security::PeerAccess access(peer, policy_);
  return std::visit(
      [&](const auto& body) -> proto::Response {
        using T = std::decay_t<decltype(body)>;
        proto::Response response;
        if constexpr (std::is_same_v<T, proto::LookupRequest>) {
          proto::LookupResponse lookup;
          lookup.results = TakeSpareResults();
          LookupBatch batch(body, *view, access, &lookup);
          if (auto error = Lookup(body, access, batch)) {
            return Error(error->code, std::move(error->message));
          }
          lookup.keepalive = batch.TakeKeepalive(view);
          lookup.fields = body.fields;
          lookup.strings = body.strings;
          lookup.binary = body.binary;
          CountDenied(lookup);
          response.body = std::move(lookup);
        } else if constexpr (std::is_same_v<T, proto::ExplainRequest>) {
          return Explain(view, body, access);
        } else if constexpr (std::is_same_v<T, proto::SymbolsRequest>) {
          return ListSymbols(*view, body, access, images_);
        } else if constexpr (std::is_same_v<T, proto::ProcessesRequest>) {
          response.body = ListProcesses(view, access);
        } else if constexpr (std::is_same_v<T, proto::StatsRequest>) {
          proto::StatsResponse s;
          s.processes = view->processes.incarnations();
          s.ranges = view->counters.ranges;
          s.memory_bytes = view->counters.memory_bytes;
          s.files_followed = view->counters.files_followed;
          s.files_failed = view->counters.files_failed;
          s.bytes_ingested = view->counters.bytes_ingested;
          s.records_ingested = view->counters.records_ingested;
          s.files_untrusted = view->counters.files_untrusted;
          s.files_pending = view->counters.files_pending;
          s.files_over_limit = view->counters.files_over_limit;
          s.files_unattached = view->counters.files_unattached;
          s.denied = denied_.load(std::memory_order_relaxed);
          s.processes_exited = view->counters.processes_exited;
          s.evictions = view->counters.evictions;
          s.memory_budget_bytes = view->counters.memory_budget_bytes;
          const parse_worker::ParserStats parsers = native_.ParserStats();
          s.parse_workers = parsers.workers;
          s.parse_workers_started = parsers.started;
          s.parse_failures = parsers.failed;
          s.parse_refused = parsers.refused;
          s.parse_tables_bytes = parsers.bytes;
          if (server_counters_) {
            const server::Counters c = server_counters_();
            s.queries = c.requests;
            s.addresses = c.addresses;
            s.connections = c.connections_accepted;
            s.errors = c.errors;
          }
          s.uptime_ns = MonotonicNowNs() - started_ns_;
          response.body = s;
        } else if constexpr (std::is_same_v<T, proto::PingRequest>) {
          response.body = proto::PingResponse{};
        } else if constexpr (std::is_same_v<T, proto::VersionRequest>) {
          proto::VersionResponse v;
          v.daemon_version = JITSYM_VERSION;
          response.body = v;
        } else {
          return Error(proto::kErrUnknownOp, "unsupported operation");
        }
        return response;
      },
      request.body);
}

}  // namespace jitsym::query
