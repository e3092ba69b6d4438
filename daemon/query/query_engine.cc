#include "daemon/query/query_engine.h"

#include <sys/stat.h>
#include <unistd.h>

#include <type_traits>

#include "daemon/os/proc.h"
#include "daemon/query/access_checks.h"
#include "daemon/query/symbols_query.h"
#include "daemon/util/clock.h"

namespace jitsym::query {
namespace {

proto::Response Error(std::string_view code, std::string message) {
  proto::Response r;
  r.body = proto::ErrorResponse{std::string(code), std::move(message)};
  return r;
}

// The strings are borrowed from the view (LookupResponse::keepalive holds it).
void Fill(const index::Symbol& sym, const index::SourceView& source,
          const index::ProcessView& process, uint64_t addr, proto::LookupResult* r) {
  r->found = true;
  r->name_view = sym.name;
  r->start = sym.start;
  r->size = sym.size;
  r->offset = addr - sym.start;
  r->origin_view = source.origin;
  r->source_view = source.path;
  r->loaded_at = sym.loaded_at;
  r->incarnation = process.incarnation;
  if (!sym.file.empty() || sym.line != 0) {
    r->file_view = sym.file;
    r->line = sym.line;
    r->column = sym.column;
  }
}

}  // namespace

QueryEngine::QueryEngine(const index::ViewCell& cell,
                         std::function<server::Counters()> server_counters)
    : cell_(cell), server_counters_(std::move(server_counters)), started_ns_(MonotonicNowNs()) {}

void QueryEngine::Lookup(const index::IndexView& view, const proto::LookupRequest& request,
                         proto::LookupResponse* out, const security::PeerAccess* access) {
  const size_t n = request.addrs.size();
  out->results.resize(n);
  const uint32_t pid = static_cast<uint32_t>(*request.pid);
  auto time_of = [&](const proto::AddressQuery& q) { return q.time ? q.time : request.time; };
  std::vector<uint64_t> addrs;
  std::vector<size_t> where;
  std::vector<std::optional<index::Symbol>> found;
  // Consecutive addresses with the same time (a batch time, one sample's frames) go to the
  // index together, so the memory accesses of their lookups overlap.
  for (size_t i = 0; i < n;) {
    const std::optional<uint64_t> time = time_of(request.addrs[i]);
    addrs.clear();
    where.clear();
    size_t j = i;
    for (; j < n && time_of(request.addrs[j]) == time; ++j) {
      const proto::AddressQuery& q = request.addrs[j];
      proto::LookupResult& r = out->results[j];
      r.addr = q.addr;
      if (!q.error.empty()) {
        r.error = q.error;
        continue;
      }
      addrs.push_back(q.addr);
      where.push_back(j);
    }
    i = j;
    const index::ProcessView* process = view.FindProcess(pid, time);
    if (process == nullptr || addrs.empty()) continue;
    if (access && !access->MaySeeProcess(process->uid)) {
      for (size_t k : where) out->results[k].error = kDenied;
      continue;
    }
    found.assign(addrs.size(), std::nullopt);
    std::vector<bool> filled(addrs.size(), false);
    for (const auto& source : process->sources) {
      if (request.origin && source->origin != *request.origin) continue;
      source->code->FindBatch(addrs.data(), addrs.size(), time, found.data());
      for (size_t k = 0; k < addrs.size(); ++k) {
        if (found[k] && !filled[k]) {
          Fill(*found[k], *source, *process, addrs[k], &out->results[where[k]]);
          filled[k] = true;
        }
      }
    }
  }
}

proto::ProcessesResponse QueryEngine::Processes(const index::IndexView& view,
                                                const security::PeerAccess* access) {
  proto::ProcessesResponse out;
  for (const auto& [pid, incarnations] : view.processes) {
    for (const auto& p : incarnations) {
      if (access && !access->MaySeeProcess(p->uid)) continue;
      proto::ProcessInfo info;
      info.pid = p->pid;
      info.incarnation = p->incarnation;
      info.alive = p->alive;
      info.uid = p->uid;
      for (const auto& s : p->sources) {
        proto::SourceInfo si;
        si.origin = s->origin;
        si.path = s->path;
        si.state = s->state;
        si.ranges = s->ranges;
        si.bytes_read = s->bytes_read;
        si.error = s->error;
        info.ranges += s->ranges;
        const auto& ranges = s->code->ranges();
        if (auto t = ranges.first_time(); t && (!info.first_time || *t < *info.first_time)) {
          info.first_time = t;
        }
        if (auto t = ranges.last_time(); t && (!info.last_time || *t > *info.last_time)) {
          info.last_time = t;
        }
        info.sources.push_back(std::move(si));
      }
      out.processes.push_back(std::move(info));
    }
  }
  return out;
}

void QueryEngine::DenyUnreadableSources(const security::PeerAccess& access,
                                        proto::LookupResponse* lookup) {
  std::string last_allowed;  // answers of a batch mostly come from one file
  for (proto::LookupResult& r : lookup->results) {
    if (!r.found) continue;
    const std::string source(r.source_or_view());
    if (source == last_allowed) continue;
    // Only maps believed for the client answered (ImageLookup::LookupImage); of those, only
    // the ones it could read itself.
    const uint64_t addr = r.addr;
    if (access.MayRead(source)) {
      last_allowed = source;
      continue;
    }
    r = proto::LookupResult{};
    r.addr = addr;
    r.error = kDenied;
  }
}

void QueryEngine::CountDenied(const proto::LookupResponse& lookup) {
  uint64_t n = 0;
  for (const proto::LookupResult& r : lookup.results) n += r.error == kDenied;
  if (n > 0) denied_.fetch_add(n, std::memory_order_relaxed);
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
          // What the answers borrow from besides the view (r2rmaps loaded on demand).
          std::vector<std::shared_ptr<const void>> keep;
          if (body.image || body.build_id) {
            if (body.pid) {
              return Error(proto::kErrBadRequest, "lookup takes \"pid\" or \"image\", not both");
            }
            // An image named by path: only for a client that could read the file itself,
            // decided before anything is opened.
            std::optional<security::WalkedPath> walked;
            if (auto error = CheckImageRequest(body, access, &walked)) {
              if (error->code == proto::kErrPermission) {
                denied_.fetch_add(1, std::memory_order_relaxed);
              }
              return Error(error->code, std::move(error->message));
            }
            const security::WalkedPath* path = walked ? &*walked : nullptr;
            // The trusted group reads as root; others as themselves.
            const uint32_t as_uid = access.trusted() ? 0 : peer.uid;
            if (NativeLookup::IsNativeImageRequest(body, path)) {
              // An ELF file (by path or build-id).
              if (auto error = native_.LookupImage(body, access, path, &lookup, &keep)) {
                return Error(error->code, std::move(error->message));
              }
            } else if (!images_.LookupImage(*view, body, as_uid, &lookup, &keep)) {
              return Error(proto::kErrNotFound, "no r2rmap known for image '" + *body.image + "'");
            } else {
              DenyUnreadableSources(access, &lookup);  // r2rmaps; native checked its own
            }
          } else {
            if (!body.pid) return Error(proto::kErrBadRequest, "lookup needs \"pid\"");
            if (*body.pid <= 0 || *body.pid > 0x7fffffff) {
              return Error(proto::kErrBadRequest, "\"pid\" must be a positive process id");
            }
            Lookup(*view, body, &lookup, &access);
            SettleProcessDenials(static_cast<uint32_t>(*body.pid), access, &lookup);
            // JIT sources first; ReadyToRun images answer what they do not know.
            images_.LookupInProcess(*view, body, access, &lookup, &keep);
            // What is left and lies in a file-backed executable mapping: ELF symbols.
            native_.LookupInProcess(body, access, &lookup, &keep);
          }
          if (keep.empty()) {
            lookup.keepalive = view;
          } else {
            keep.push_back(view);
            lookup.keepalive =
                std::make_shared<const std::vector<std::shared_ptr<const void>>>(std::move(keep));
          }
          lookup.fields = body.fields;
          lookup.strings = body.strings;
          CountDenied(lookup);
          response.body = std::move(lookup);
        } else if constexpr (std::is_same_v<T, proto::SymbolsRequest>) {
          return ListSymbols(*view, body, access, images_);
        } else if constexpr (std::is_same_v<T, proto::ProcessesRequest>) {
          response.body = Processes(*view, &access);
        } else if constexpr (std::is_same_v<T, proto::StatsRequest>) {
          proto::StatsResponse s;
          for (const auto& [pid, incs] : view->processes) s.processes += incs.size();
          s.ranges = view->counters.ranges;
          s.memory_bytes = view->counters.memory_bytes;
          s.files_followed = view->counters.files_followed;
          s.files_failed = view->counters.files_failed;
          s.bytes_ingested = view->counters.bytes_ingested;
          s.records_ingested = view->counters.records_ingested;
          s.files_untrusted = view->counters.files_untrusted;
          s.files_pending = view->counters.files_pending;
          s.files_over_limit = view->counters.files_over_limit;
          s.denied = denied_.load(std::memory_order_relaxed);
          s.processes_exited = view->counters.processes_exited;
          s.evictions = view->counters.evictions;
          s.memory_budget_bytes = view->counters.memory_budget_bytes;
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
