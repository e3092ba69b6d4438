#include <chrono>
#include <cstdio>

#include "client/args.h"
#include "client/command.h"
#include "client/daemon_call.h"

namespace jitsym::client {

int RunPing(const GlobalOptions& globals, const std::vector<std::string>& args) {
  ArgParser parser("ping",
                   "usage: jitsym ping\n"
                   "\n"
                   "Checks that jitsymd answers and prints the round-trip time.\n");
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return *status;
  if (!positional.empty()) return parser.UsageError("unexpected argument " + positional[0]);

  auto connection = ConnectOrReport(globals);
  if (!connection) return kExitError;
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  std::optional<proto::Response> response = connection->Call({"", proto::PingRequest{}}, &error);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (!response) {
    std::fprintf(stderr, "jitsym: %s\n", error.c_str());
    return kExitError;
  }
  if (const auto* err = std::get_if<proto::ErrorResponse>(&response->body)) {
    ReportErrorResponse(*err);
    return kExitError;
  }
  std::printf("pong from %s: time=%.3f ms\n", connection->path().c_str(),
              std::chrono::duration<double, std::milli>(elapsed).count());
  return kExitOk;
}

}  // namespace jitsym::client
