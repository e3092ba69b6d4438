// Talking to jitsymd from a subcommand, with the error reporting every subcommand shares.
#ifndef JITSYM_CLIENT_DAEMON_CALL_H_
#define JITSYM_CLIENT_DAEMON_CALL_H_

#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "client/command.h"
#include "proto/client_connection.h"
#include "proto/protocol.h"

namespace jitsym::client {

// Connects, or prints why not (and what to do) on stderr and returns nullptr.
std::unique_ptr<proto::ClientConnection> ConnectOrReport(const GlobalOptions& globals);

// One request, one response. Prints the problem on stderr and returns nullopt when the daemon
// is unreachable, the exchange fails, or the answer is an error response.
std::optional<proto::Response> CallOrReport(const GlobalOptions& globals,
                                            const proto::Request& request);

// As CallOrReport, for an answer whose array `member` ("symbols", "processes") may be larger
// than the client should hold: each element's text goes to `element` as it arrives, and the
// response returned is the rest (ClientConnection::CallArrayAnswer).
std::optional<proto::Response> CallArrayAnswerOrReport(
    const GlobalOptions& globals, const proto::Request& request, std::string_view member,
    const std::function<Status(std::string_view element)>& element);

// "jitsym: jitsymd refused the request (bad_request): ..." on stderr.
void ReportErrorResponse(const proto::ErrorResponse& error);

// What a user told permission_denied can do, on stderr (once per command).
void ReportPermissionDenied();

// The exit status for answers with these reasons: kExitUnknownProcess, then kExitDenied (with
// ReportPermissionDenied), else kExitOk.
int ExitStatusFor(bool unknown_process, bool denied);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_DAEMON_CALL_H_
