// The `jitsym` subcommands. Each lives in its own file and is listed in main.cc's table; a new
// subcommand (annotate, pprof, perfmap, ...) is one more file and one more table row.
#ifndef JITSYM_CLIENT_COMMAND_H_
#define JITSYM_CLIENT_COMMAND_H_

#include <string>
#include <vector>

namespace jitsym::client {

// Exit statuses; scripts rely on them.
inline constexpr int kExitOk = 0;
// Daemon unreachable, an error response (including "busy": a connection or memory limit), or no
// answer within --timeout.
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;  // bad option or argument
// jitsym lookup: the daemon knows no process by that pid (unknown_process), or the caller may
// not see it (permission_denied). Unknown addresses of a known process are answers (0).
inline constexpr int kExitUnknownProcess = 3;
inline constexpr int kExitDenied = 4;

struct GlobalOptions {
  // Where to connect, in order: --socket, else $JITSYM_SOCKET (no other then), else
  // proto::ClientSocketCandidates(). Empty for `jitsym --version` (the client alone).
  std::vector<std::string> socket_paths;
  int timeout_ms = 30000;  // --timeout: how long to wait for jitsymd; 0 forever
};

struct Command {
  const char* name;
  const char* summary;
  // `args` are the arguments after the subcommand name, global options already removed.
  int (*run)(const GlobalOptions& globals, const std::vector<std::string>& args);
};

int RunLookup(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunProcesses(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunStats(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunPing(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunVersion(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunAnnotate(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunPerfmap(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunPprof(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunExplain(const GlobalOptions& globals, const std::vector<std::string>& args);
int RunFlamegraph(const GlobalOptions& globals, const std::vector<std::string>& args);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_COMMAND_H_
