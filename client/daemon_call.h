// Talking to jitsymd from a subcommand, with the error reporting every subcommand shares.
#ifndef JITSYM_CLIENT_DAEMON_CALL_H_
#define JITSYM_CLIENT_DAEMON_CALL_H_

#include <memory>
#include <optional>

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

// "jitsym: jitsymd refused the request (bad_request): ..." on stderr.
void ReportErrorResponse(const proto::ErrorResponse& error);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_DAEMON_CALL_H_
