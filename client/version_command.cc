#include <cstdio>

#include "client/args.h"
#include "client/command.h"
#include "client/daemon_call.h"

namespace jitsym::client {

int RunVersion(const GlobalOptions& globals, const std::vector<std::string>& args) {
  ArgParser parser("version",
                   "usage: jitsym version\n"
                   "\n"
                   "Prints the client's version, then the daemon's and its protocol version.\n");
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return *status;
  if (!positional.empty()) return parser.UsageError("unexpected argument " + positional[0]);

  std::printf("jitsym %s (protocol %d)\n", JITSYM_VERSION, proto::kProtocolVersion);
  std::fflush(stdout);
  if (globals.socket_paths.empty()) return kExitOk;  // `jitsym --version`: client only
  std::optional<proto::Response> response = CallOrReport(globals, {"", proto::VersionRequest{}});
  if (!response) return kExitError;
  const auto* version = std::get_if<proto::VersionResponse>(&response->body);
  if (version == nullptr) {
    std::fprintf(stderr, "jitsym: jitsymd answered version with something else\n");
    return kExitError;
  }
  std::printf("jitsymd %s (protocol %d)\n", version->daemon_version.c_str(), version->protocol);
  return kExitOk;
}

}  // namespace jitsym::client
