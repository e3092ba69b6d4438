#include "client/daemon_call.h"

#include <cstdio>
#include <string>

namespace jitsym::client {

std::unique_ptr<proto::ClientConnection> ConnectOrReport(const GlobalOptions& globals) {
  auto connection = proto::ClientConnection::ConnectFirst(globals.socket_paths, globals.timeout_ms);
  if (!connection) {
    std::fprintf(stderr, "jitsym: %s\n", connection.error().message.c_str());
    return nullptr;
  }
  return std::move(*connection);
}

void ReportErrorResponse(const proto::ErrorResponse& error) {
  std::string hint;
  if (error.code == proto::kErrUnknownOp || error.code == proto::kErrUnsupportedVersion) {
    hint = " (jitsymd may be older than this client; upgrade it)";
  } else if (error.code == proto::kErrBusy) {
    hint = " (retry later)";
  } else if (error.code == proto::kErrInternal) {
    hint = " (a jitsymd bug; its log has details)";
  }
  std::fprintf(stderr, "jitsym: jitsymd refused the request (%s): %s%s\n", error.code.c_str(),
               error.message.c_str(), hint.c_str());
}

void ReportPermissionDenied() {
  std::fprintf(stderr,
               "jitsym: permission_denied: jitsymd answers about a process only to its owner, "
               "root and the members of its trusted group (trusted-group in "
               "/etc/jitsymd/jitsymd.conf); ask as that user, or with sudo\n");
}

int ExitStatusFor(bool unknown_process, bool denied) {
  if (unknown_process) return kExitUnknownProcess;
  if (denied) {
    ReportPermissionDenied();
    return kExitDenied;
  }
  return kExitOk;
}

namespace {

// The answer, or nullopt with the problem on stderr.
std::optional<proto::Response> Reported(std::optional<proto::Response> response,
                                        const std::string& error) {
  if (!response) {
    std::fprintf(stderr, "jitsym: %s\n", error.c_str());
    return std::nullopt;
  }
  if (const auto* err = std::get_if<proto::ErrorResponse>(&response->body)) {
    ReportErrorResponse(*err);
    return std::nullopt;
  }
  return response;
}

}  // namespace

std::optional<proto::Response> CallOrReport(const GlobalOptions& globals,
                                            const proto::Request& request) {
  auto connection = ConnectOrReport(globals);
  if (!connection) return std::nullopt;
  std::string error;
  return Reported(connection->Call(request, &error), error);
}

std::optional<proto::Response> CallArrayAnswerOrReport(
    const GlobalOptions& globals, const proto::Request& request, std::string_view member,
    const std::function<Status(std::string_view element)>& element) {
  auto connection = ConnectOrReport(globals);
  if (!connection) return std::nullopt;
  std::string error;
  return Reported(connection->CallArrayAnswer(request, member, element, &error), error);
}

}  // namespace jitsym::client
