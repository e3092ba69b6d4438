// jitsym: the command-line client of jitsymd. main() only resolves global options and
// dispatches to the subcommand table.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/command.h"
#include "proto/daemon_socket.h"
#include "proto/protocol.h"

namespace jitsym::client {
namespace {

constexpr Command kCommands[] = {
    {"lookup", "resolve addresses of a process to symbols", RunLookup},
    {"explain", "explain the answer for one address: definitions over time, sources, rule",
     RunExplain},
    {"processes", "list the processes jitsymd knows about", RunProcesses},
    {"stats", "show daemon counters", RunStats},
    {"ping", "check that jitsymd answers, with the round-trip time", RunPing},
    {"version", "show client and daemon versions", RunVersion},
    {"annotate", "name the JIT frames of `perf script` output (a filter, or -i perf.data)",
     RunAnnotate},
    {"perfmap", "write a perf map of a process's symbols for perf report", RunPerfmap},
    {"pprof", "name the pcs of a gperftools or profile.proto CPU profile", RunPprof},
    {"flamegraph",
     "draw perf script output, a recording, folded stacks or a gperftools profile as an "
     "interactive SVG flame graph",
     RunFlamegraph},
};

// Where the client looks when neither --socket nor JITSYM_SOCKET names a socket.
std::vector<std::string> DefaultCandidates() {
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  return proto::ClientSocketCandidates(geteuid(), runtime_dir != nullptr ? runtime_dir : "");
}

void PrintUsage(std::FILE* out) {
  // "/tmp/jitsymd-1000.sock,\n   or /run/jitsymd/jitsymd.sock when no daemon listens there"
  const std::vector<std::string> paths = DefaultCandidates();
  std::string candidates = paths.front();
  for (size_t i = 1; i < paths.size(); ++i) {
    candidates += ",\n                     or " + paths[i] + " when no daemon listens there";
  }
  std::fprintf(out,
               "usage: jitsym [--socket PATH] [--timeout SECONDS] COMMAND [ARGS...]\n"
               "\n"
               "Asks jitsymd, the JIT symbol daemon, which code is at an address.\n"
               "\n"
               "commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\n"
               "options:\n"
               "  --socket PATH      daemon socket (default: $JITSYM_SOCKET, else %s)\n"
               "  --timeout SECONDS  give up when jitsymd does not answer for this long\n"
               "                     (default: 30; 0 waits forever)\n"
               "  --help             this text; `jitsym COMMAND --help` for a command\n"
               "\n"
               "exit status: 0 success; 1 daemon unreachable, busy, silent for --timeout,\n"
               "or an error; 2 usage error\n",
               candidates.c_str());
}

// "30" -> 30000, "2.5" -> 2500, "0" -> 0 (no timeout).
std::optional<int> ParseTimeoutMs(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(seconds >= 0) || seconds > 86400) return std::nullopt;
  const int ms = static_cast<int>(seconds * 1000 + 0.5);
  return seconds > 0 && ms == 0 ? 1 : ms;
}

int Main(int argc, char** argv) {
  GlobalOptions globals;
  std::optional<std::string> socket_path;
  std::optional<std::string> timeout_text;
  const Command* command = nullptr;
  std::vector<std::string> args;
  bool help = false;
  bool options_done = false;
  // --socket may come before or after the subcommand; everything else after the subcommand is
  // the subcommand's. Given twice, which one was meant is a guess: a usage error.
  auto twice = [](std::string_view name) {
    std::fprintf(stderr, "jitsym: %.*s given more than once\n", static_cast<int>(name.size()),
                 name.data());
    return kExitUsage;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!options_done && (arg == "--socket" || arg.rfind("--socket=", 0) == 0) && socket_path) {
      return twice("--socket");
    }
    if (!options_done && (arg == "--timeout" || arg.rfind("--timeout=", 0) == 0) && timeout_text) {
      return twice("--timeout");
    }
    if (!options_done && arg == "--socket") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "jitsym: --socket needs a value\n");
        return kExitUsage;
      }
      socket_path = argv[++i];
      continue;
    }
    if (!options_done && arg.rfind("--socket=", 0) == 0) {
      socket_path = arg.substr(std::strlen("--socket="));
      continue;
    }
    if (!options_done && arg == "--timeout") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "jitsym: --timeout needs a value\n");
        return kExitUsage;
      }
      timeout_text = argv[++i];
      continue;
    }
    if (!options_done && arg.rfind("--timeout=", 0) == 0) {
      timeout_text = arg.substr(std::strlen("--timeout="));
      continue;
    }
    if (command != nullptr) {
      if (arg == "--") options_done = true;
      args.push_back(arg);
      continue;
    }
    if (arg == "--help" || arg == "-h" || arg == "help") {
      help = true;
      continue;
    }
    if (arg == "--version") {
      args.clear();
      return RunVersion(globals, args);
    }
    for (const Command& c : kCommands) {
      if (arg == c.name) command = &c;
    }
    if (command == nullptr) {
      std::fprintf(stderr, "jitsym: unknown %s '%s'\n\n", arg[0] == '-' ? "option" : "command",
                   arg.c_str());
      PrintUsage(stderr);
      return kExitUsage;
    }
  }
  if (command == nullptr) {
    PrintUsage(help ? stdout : stderr);
    return help ? kExitOk : kExitUsage;
  }
  if (help) args.insert(args.begin(), "--help");  // `jitsym help lookup`

  if (socket_path) {
    globals.socket_paths = {*socket_path};
  } else if (const char* env = std::getenv("JITSYM_SOCKET"); env != nullptr && env[0] != '\0') {
    globals.socket_paths = {env};
  } else {
    globals.socket_paths = DefaultCandidates();
  }
  if (timeout_text) {
    const std::optional<int> ms = ParseTimeoutMs(*timeout_text);
    if (!ms) {
      std::fprintf(stderr, "jitsym: --timeout takes seconds from 0 to 86400, e.g. 30 or 2.5\n");
      return kExitUsage;
    }
    globals.timeout_ms = *ms;
  }
  if (globals.socket_paths.front().empty()) {
    std::fprintf(stderr, "jitsym: --socket needs a non-empty path\n");
    return kExitUsage;
  }
  return command->run(globals, args);
}

}  // namespace
}  // namespace jitsym::client

int main(int argc, char** argv) { return jitsym::client::Main(argc, argv); }
