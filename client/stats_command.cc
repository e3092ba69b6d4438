#include <cstdio>
#include <string>

#include "client/args.h"
#include "client/command.h"
#include "client/daemon_call.h"
#include "client/output.h"

namespace jitsym::client {

int RunStats(const GlobalOptions& globals, const std::vector<std::string>& args) {
  bool json = false;
  ArgParser parser("stats",
                   "usage: jitsym stats [--json]\n"
                   "\n"
                   "Prints the daemon's counters, one `key: value` per line.\n"
                   "\n"
                   "  --json   one JSON object, as on the wire\n");
  parser.AddFlag("--json", &json);
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return *status;
  if (!positional.empty()) return parser.UsageError("unexpected argument " + positional[0]);

  std::optional<proto::Response> response = CallOrReport(globals, {"", proto::StatsRequest{}});
  if (!response) return kExitError;
  const auto* stats = std::get_if<proto::StatsResponse>(&response->body);
  if (stats == nullptr) {
    std::fprintf(stderr, "jitsym: jitsymd answered stats with something else\n");
    return kExitError;
  }
  Output output;
  std::string& out = output.buffer();
  if (json) {
    proto::EncodeStats(*stats, &out);
    out.push_back('\n');
    return output.Flush() ? kExitOk : kExitError;
  }
  for (const auto& [name, value] : proto::StatsMembers(*stats)) {
    out.append(name).append(": ").append(std::to_string(value)).push_back('\n');
  }
  return output.Flush() ? kExitOk : kExitError;
}

}  // namespace jitsym::client
