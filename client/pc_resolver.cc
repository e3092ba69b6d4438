// Batched pc lookups for `jitsym pprof` (see pc_resolver.h).
#include "client/pc_resolver.h"

#include <cstdio>

#include "client/command.h"
#include "client/daemon_call.h"

namespace jitsym::client {

NamedPc NamePc(const proto::LookupResult& r) {
  NamedPc pc;
  pc.origin = r.origin;
  pc.build_id = std::string(r.build_id);
  for (const proto::Frame& f : r.frames) {
    pc.frames.push_back({std::string(f.name), std::string(f.file), f.line, f.column});
  }
  if (pc.frames.empty()) {
    pc.frames.push_back({std::string(r.name), std::string(r.file), r.line, r.column});
  }
  return pc;
}

bool IsNativeFile(std::string_view path) {
  return !path.empty() && path[0] == '/' && path.rfind("/memfd:", 0) != 0 &&
         path.rfind("/dev/", 0) != 0 && path.rfind("/tmp/perf-", 0) != 0 &&
         path.find("(deleted)") == std::string_view::npos;
}

int PcResolver::ExitStatus() const {
  switch (process_problem_) {
    case proto::Reason::kUnknownProcess:
      return kExitUnknownProcess;
    case proto::Reason::kPermissionDenied:
      return kExitDenied;
    default:
      return kExitOk;
  }
}

const proto::LookupResponse* PcResolver::Call(const proto::LookupRequest& prototype,
                                              const std::vector<uint64_t>& addrs, size_t i,
                                              size_t n, FrameSummary* summary) {
  proto::Request request;
  proto::LookupRequest lookup = prototype;
  lookup.fields = proto::kFieldName | proto::kFieldOrigin | proto::kFieldFrames |
                  proto::kFieldPosition | proto::kFieldBuildId;
  lookup.strings = true;
  images_.Attach(&lookup);
  for (size_t k = 0; k < n; ++k) lookup.addrs.push_back({addrs[i + k], {}, {}, {}});
  request.body = std::move(lookup);
  std::string error;
  std::optional<proto::Response> response = connection_.Call(request, &error);
  if (!response) {
    std::fprintf(stderr, "jitsym: %s\n", error.c_str());
    failed_ = true;
    return nullptr;
  }
  response_ = std::move(*response);
  if (const auto* err = std::get_if<proto::ErrorResponse>(&response_.body)) {
    if (reported_.insert(err->code + (prototype.image ? " " + *prototype.image : "")).second &&
        !(prototype.image && err->code == proto::kErrNotFound)) {
      ReportErrorResponse(*err);
    }
    for (size_t k = 0; k < n; ++k) summary->Unknown(err->code);
    return nullptr;
  }
  const auto* results = std::get_if<proto::LookupResponse>(&response_.body);
  if (results == nullptr || results->results.size() != n) {
    std::fprintf(stderr, "jitsym: jitsymd answered %zu addresses with %zu results\n", n,
                 results == nullptr ? size_t{0} : results->results.size());
    failed_ = true;
    return nullptr;
  }
  return results;
}

void PcResolver::Missed(const proto::LookupRequest& prototype, const proto::LookupResult& r,
                        FrameSummary* summary) {
  summary->Unknown(r);
  if (prototype.pid && (r.reason == proto::Reason::kUnknownProcess ||
                        r.reason == proto::Reason::kPermissionDenied)) {
    process_problem_ = r.reason;
  }
}

}  // namespace jitsym::client
