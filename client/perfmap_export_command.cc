// jitsym perfmap: writes a perf map (/tmp/perf-<pid>.map) of everything jitsymd knows about a
// process as of now, so that unmodified perf tools name its JIT and ReadyToRun frames.
//
//   perf map line := START_HEX " " SIZE_HEX " " NAME "\n"
//   (tools/perf/Documentation/jit-interface.txt)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "client/args.h"
#include "client/command.h"
#include "client/daemon_call.h"
#include "client/output.h"
#include "client/perfmap_export.h"
#include "proto/protocol.h"

namespace jitsym::client {
namespace {

constexpr char kUsage[] =
    "usage: jitsym perfmap --pid PID [-o FILE] [--force]\n"
    "\n"
    "Writes a perf map of every symbol jitsymd knows for process PID as of now (jitdump,\n"
    "mlpd, perf map, and ReadyToRun images at their load addresses), so that `perf report`\n"
    "and `perf script` name those frames.\n"
    "\n"
    "  --pid PID   the process\n"
    "  -o FILE     where to write (default /tmp/perf-PID.map, where perf looks; - for stdout)\n"
    "  --force     replace FILE even if it exists (a runtime may be writing it: by default\n"
    "              an existing map is never touched)\n"
    "\n"
    "A perf map has no notion of time: where a JIT reused an address, the map holds the code\n"
    "that is there now. For older samples use `perf script | jitsym annotate`.\n";

// Whether process pid has `path` open (a runtime writing its own map).
bool HeldOpenBy(int64_t pid, const std::string& path) {
  std::error_code ec;
  const std::filesystem::path fds = "/proc/" + std::to_string(pid) + "/fd";
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) return false;
  for (const auto& entry : std::filesystem::directory_iterator(fds, ec)) {
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) == 0 && st.st_dev == target.st_dev &&
        st.st_ino == target.st_ino) {
      return true;
    }
  }
  return false;
}

}  // namespace

int RunPerfmap(const GlobalOptions& globals, const std::vector<std::string>& args) {
  std::optional<std::string> pid_text, output;
  bool force = false;
  ArgParser parser("perfmap", kUsage);
  parser.AddValue("--pid", &pid_text);
  parser.AddValue("-o", &output);
  parser.AddValue("--output", &output);
  parser.AddFlag("--force", &force);
  std::vector<std::string> positional;
  if (auto status = parser.Parse(args, &positional)) return *status;
  if (!positional.empty()) return parser.UsageError("unexpected argument '" + positional[0] + "'");
  if (!pid_text) return parser.UsageError("--pid is required");
  const std::optional<uint64_t> pid = proto::ParseDecimal(*pid_text);
  if (!pid || *pid == 0 || *pid > 0x7fffffff) {
    return parser.UsageError("invalid PID '" + *pid_text + "'");
  }
  const std::string path = output ? *output : "/tmp/perf-" + std::to_string(*pid) + ".map";
  const bool to_stdout = path == "-";
  if (!to_stdout && !force && ::access(path.c_str(), F_OK) == 0) {
    const bool held = HeldOpenBy(static_cast<int64_t>(*pid), path);
    std::fprintf(stderr, "jitsym: %s exists%s; not replacing it (--force to replace it)\n",
                 path.c_str(), held ? " and the process is writing it" : "");
    return kExitError;
  }

  // Written beside the target and renamed over it: perf never sees half a map. The lines are
  // written as the answer arrives: a map of a gigabyte is never held whole.
  const std::string temp = path + ".jitsym-" + std::to_string(::getpid());
  std::FILE* file = stdout;
  if (!to_stdout) {
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "jitsym: cannot create %s: %s\n", temp.c_str(), std::strerror(errno));
      return kExitError;
    }
    file = ::fdopen(fd, "w");
    if (file == nullptr) {
      ::close(fd);
      ::unlink(temp.c_str());
      std::fprintf(stderr, "jitsym: cannot write %s: %s\n", temp.c_str(), std::strerror(errno));
      return kExitError;
    }
  }
  const std::string written_to = to_stdout ? "standard output" : temp;
  uint64_t written = 0;
  bool write_failed = false;
  std::optional<proto::Response> response;
  {
    Output out(file);
    proto::SymbolEntry entry;
    const auto line = [&](std::string_view element) -> Status {
      if (Status st = proto::DecodeSymbolEntry(element, &entry); !st.ok()) {
        return MakeError(ErrorKind::kMalformed,
                         "malformed response from jitsymd: " + st.error().message);
      }
      AppendPerfMapLine(entry, &out.buffer());
      written += entry.size != 0;
      if (out.buffer().size() >= Output::kFlushBytes && !out.Flush()) {
        write_failed = true;
        return MakeError(ErrorKind::kIo,
                         "cannot write " + written_to + ": " + std::strerror(errno));
      }
      return OkStatus();
    };
    proto::Request request;
    request.body = proto::SymbolsRequest{static_cast<int64_t>(*pid)};
    response = CallArrayAnswerOrReport(globals, request, "symbols", line);
    if (response && !out.Flush()) {
      write_failed = true;
      std::fprintf(stderr, "jitsym: cannot write %s: %s\n", written_to.c_str(),
                   std::strerror(errno));
    }
  }
  const bool answered = response && !write_failed;
  if (answered && !std::holds_alternative<proto::SymbolsResponse>(response->body)) {
    std::fprintf(stderr, "jitsym: jitsymd answered the symbols request with something else\n");
  }
  const bool ok = answered && std::holds_alternative<proto::SymbolsResponse>(response->body);
  if (to_stdout) return ok ? kExitOk : kExitError;
  const bool closed = std::fclose(file) == 0;
  if (ok && !closed) {
    std::fprintf(stderr, "jitsym: cannot write %s: %s\n", temp.c_str(), std::strerror(errno));
  }
  if (!ok || !closed) {
    ::unlink(temp.c_str());
    return kExitError;
  }
  // Without --force, link() fails if the target appeared meanwhile instead of replacing it.
  const int rc = force ? ::rename(temp.c_str(), path.c_str()) : ::link(temp.c_str(), path.c_str());
  const int link_errno = errno;
  if (!force) ::unlink(temp.c_str());
  if (rc != 0) {
    if (force) ::unlink(temp.c_str());
    std::fprintf(stderr, "jitsym: cannot write %s: %s\n", path.c_str(), std::strerror(link_errno));
    return kExitError;
  }
  std::fprintf(stderr, "jitsym: wrote %llu symbols of pid %llu to %s\n",
               static_cast<unsigned long long>(written), static_cast<unsigned long long>(*pid),
               path.c_str());
  return kExitOk;
}

}  // namespace jitsym::client
