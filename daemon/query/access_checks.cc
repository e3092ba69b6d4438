// Access decisions applied to lookup requests and answers: see access_checks.h.
#include "daemon/query/access_checks.h"

#include <cstring>
#include <string>

#include "daemon/os/proc.h"

namespace jitsym::query {

std::optional<proto::ErrorResponse> CheckImageRequest(const proto::LookupRequest& request,
                                                      const security::PeerAccess& access,
                                                      std::optional<security::WalkedPath>* walked) {
  walked->reset();
  if (!request.image || request.image->find('/') == std::string::npos) {
    return std::nullopt;  // an image name or signature (r2rmap), or a build id: no file named
  }
  const std::string& path = *request.image;
  if (path[0] != '/') {
    return proto::ErrorResponse{std::string(proto::kErrBadRequest),
                                "\"image\" must be an absolute path (or an image name)"};
  }
  security::WalkedPath w;
  std::string why;
  const std::optional<security::FileAccess> held =
      request.image_fd ? access.CheckDescriptor(*request.image_fd, &w, &why) : std::nullopt;
  if (held) {
    // The client's own descriptor: that file, not the path, which only names it.
    switch (*held) {
      case security::FileAccess::kAllowed:
        *walked = std::move(w);
        return std::nullopt;
      case security::FileAccess::kNotFound:
        return proto::ErrorResponse{std::string(proto::kErrBadRequest), "\"image_fd\": " + why};
      default:
        return proto::ErrorResponse{std::string(proto::kErrPermission), "\"image_fd\": " + why};
    }
  }
  // No descriptor, or one the daemon cannot look at: the path, walked as the client would.
  switch (access.CheckRead(path, &w)) {
    case security::FileAccess::kAllowed:
      *walked = std::move(w);
      return std::nullopt;
    case security::FileAccess::kNotFound:
      // The client could see for itself that it does not exist; an r2rmap image is looked up
      // by the name in the path, which need not exist here.
      return std::nullopt;
    case security::FileAccess::kDenied:
      // One answer for both: a file behind a directory the client cannot search may or may not
      // exist, and the answer must not tell.
      break;
    case security::FileAccess::kUnanswered:
      // A FUSE filesystem on the path did not answer (the client could get that far itself,
      // and /proc/self/mountinfo shows every mount to everyone).
      return proto::ErrorResponse{std::string(proto::kErrTimeout),
                                  "the image file was not read: " + w.unanswered};
  }
  return proto::ErrorResponse{std::string(proto::kErrPermission),
                              "the image file is not readable by you, or a directory on its "
                              "path is not searchable by you"};
}

std::optional<proto::ErrorResponse> ProcessDenials::Resolve(LookupBatch& batch) {
  const security::PeerAccess& access = batch.access();
  // Who holds the pid now. When /proc cannot tell (the daemon is out of descriptors), every
  // client is told so: the next steps (the process's mappings, why an address missed) would
  // take the live process for one that is gone.
  const os::ProcessLookup now = os::LookUpProcess(batch.pid());
  if (now.error != 0) return OwnerUnknown(batch.pid(), now.error);
  if (access.trusted()) {
    batch.DenyHidden();  // not reached: the trusted group sees every process
    return std::nullopt;
  }
  // "Permission denied" only for a live process not the client's, which /proc shows to anyone;
  // any other answer would tell which dead pids the daemon indexed.
  std::optional<uint32_t> live_owner;
  if (now.identity) live_owner = now.identity->uid;
  const bool deny = security::DecideProcess(access.facts(), std::nullopt, live_owner) ==
                    security::ProcessAccess::kDenied;
  if (deny) {
    batch.DenyHidden();
    batch.DenyPending();
  } else {
    batch.RestoreHidden();
  }
  return std::nullopt;
}

proto::ErrorResponse OwnerUnknown(uint32_t pid, int error) {
  return proto::ErrorResponse{
      std::string(proto::kErrBusy),
      "cannot tell who owns pid " + std::to_string(pid) + " now: " + std::strerror(error)};
}

}  // namespace jitsym::query
