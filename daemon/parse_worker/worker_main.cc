#include "daemon/parse_worker/worker_main.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>

#include "daemon/native/demangle.h"
#include "daemon/native/file_ops.h"
#include "daemon/parse_worker/channel.h"
#include "daemon/parse_worker/messages.h"
#include "daemon/parse_worker/sandbox.h"
#include "daemon/parse_worker/serve.h"
#include "daemon/util/log.h"
#include "daemon/util/thread_budget.h"

namespace jitsym::parse_worker {
namespace {

// The files of the requests being served: the descriptor the daemon passed for each stands for
// its path.
struct Granted {
  std::string path;
  struct stat st {};
  int fd = -1;
};

// One file question at a time (every lane's threads and their prefetch threads ask), asked on
// a lane whose request is being served: the daemon reads that lane until the request's reply,
// answering every question that comes on it.
std::mutex g_mu;
Granted g_granted[kMaxLanes];
bool g_serving[kMaxLanes] = {};
int g_lanes = 1;
thread_local int t_lane = -1;  // the lane this thread serves (-1: a helper thread)

const Granted* GrantedFor(const std::string& path) {
  for (int k = 0; k < g_lanes; ++k) {
    if (g_granted[k].fd >= 0 && g_granted[k].path == path) return &g_granted[k];
  }
  return nullptr;
}

// Asks the daemon; false and errno when it refuses or cannot.
bool Ask(const FileOpRequest& request, FileOpReply* reply, os::UniqueFd* fd) {
  std::lock_guard lock(g_mu);
  int lane = t_lane >= 0 && g_serving[t_lane] ? t_lane : -1;
  for (int k = 0; lane < 0 && k < g_lanes; ++k) {
    if (g_serving[k]) lane = k;
  }
  if (lane < 0) {  // no request being served: no one to ask
    errno = ENOENT;
    return false;
  }
  const int sock = kWorkerSocketFd + lane;
  if (!SendFrame(sock, kFileOp, Encode(request))) _exit(kExitBadMessage);
  Result<Frame> frame = ReceiveFrame(sock);
  if (!frame || frame->type != kFileOpReply) _exit(kExitBadMessage);
  Result<FileOpReply> r = DecodeFileOpReply(frame->payload);
  if (!r) _exit(kExitBadMessage);
  *reply = std::move(*r);
  if (fd != nullptr && !frame->fds.empty()) *fd = std::move(frame->fds.front());
  if (reply->error != 0) {
    errno = reply->error;
    return false;
  }
  return true;
}

native::FileOps AskingOps() {
  native::FileOps ops;
  ops.open = [](const std::string& path, int) -> int {
    {
      std::lock_guard lock(g_mu);
      if (const Granted* g = GrantedFor(path)) return ::fcntl(g->fd, F_DUPFD_CLOEXEC, 0);
    }
    FileOpReply reply;
    os::UniqueFd fd;
    if (!Ask({FileOpKind::kOpen, true, path}, &reply, &fd)) return -1;
    if (!fd.valid()) {
      errno = EIO;
      return -1;
    }
    return fd.release();
  };
  ops.stat = [](const std::string& path, bool follow, struct stat* st, bool* served) {
    {
      std::lock_guard lock(g_mu);
      if (const Granted* g = GrantedFor(path)) {
        *st = g->st;
        *served = false;
        return true;
      }
    }
    FileOpReply reply;
    if (!Ask({FileOpKind::kStat, follow, path}, &reply, nullptr)) return false;
    *st = reply.st;
    *served = reply.served_by_process;
    return true;
  };
  ops.resolve = [](const std::string& path, std::string* resolved) {
    {
      std::lock_guard lock(g_mu);
      if (GrantedFor(path) != nullptr) {
        *resolved = path;
        return true;
      }
    }
    FileOpReply reply;
    if (!Ask({FileOpKind::kResolve, true, path}, &reply, nullptr)) return false;
    *resolved = reply.resolved;
    return true;
  };
  return ops;
}

uint64_t Number(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

// Whether this process holds any capability (or cannot tell).
bool HoldsCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return true;
  return (data[0].permitted | data[1].permitted) != 0;
}

// A daemon that is not root holds its capabilities as ambient ones (the systemd unit's
// AmbientCapabilities=), which an exec passes on, and may not drop them with capset (the unit's
// system call filter): the worker clears the ambient set and executes itself again, which
// leaves it none.
void ShedAmbientCapabilities(const std::vector<std::string>& args) {
  if (::geteuid() == 0 || !HoldsCapabilities()) return;
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  std::vector<std::string> again = args;
  again.insert(again.begin(), "jitsymd-parse-worker");
  again.push_back("again=1");
  std::vector<char*> argv;
  for (std::string& a : again) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  JITSYM_LOG(kWarning, "parse worker: executing itself again to shed its capabilities: ",
             std::strerror(errno));
}

}  // namespace

int RunParseWorker(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "again=1") == args.end()) ShedAmbientCapabilities(args);
  SandboxSettings sandbox;
  native::ModuleCache::Options cache;
  cache.debug_dirs.clear();
  uint64_t cpu_seconds = 0;
  std::string who = "parse worker";
  for (size_t i = 1; i < args.size(); ++i) {
    const size_t eq = args[i].find('=');
    const std::string key = args[i].substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : args[i].substr(eq + 1);
    if (key == "uid") sandbox.uid = static_cast<uint32_t>(Number(value));
    if (key == "gid") sandbox.gid = static_cast<uint32_t>(Number(value));
    if (key == "as") sandbox.address_space_bytes = Number(value);
    if (key == "cpu") cpu_seconds = Number(value);
    if (key == "cache") cache.budget_bytes = Number(value);
    if (key == "inflate") cache.inflate_bytes = Number(value);
    if (key == "lanes")
      g_lanes = static_cast<int>(std::clamp<uint64_t>(Number(value), 1, kMaxLanes));
    if (key == "debug-dir") cache.debug_dirs.push_back(value);
    if (key == "debuginfod" && value == "1") {
      // Fetched by the daemon (a worker has no network), which then lets it open the file.
      cache.debuginfod = [](const std::string& id) -> std::optional<std::string> {
        FileOpReply reply;
        if (!Ask({FileOpKind::kFetch, true, id}, &reply, nullptr)) return std::nullopt;
        return reply.resolved;
      };
    }
    if (key == "for") who = "parse worker for " + value;
    if (key == "log") {
      if (auto level = log::ParseLevel(value)) log::SetLevel(*level);
    }
  }
  // What opens files the first time it is used, done before the sandbox shuts open(2): the
  // number of cores (/sys), and the main thread's stack bounds, which glibc reads from
  // /proc/self/maps for the demangler (without them each name is demangled on a new thread).
  ThreadBudget::Process();
  native::Demangle("_Z1fv", nullptr);
  bool filtered = false;
  for (const std::string& missing : EnterSandbox(sandbox, &filtered)) {
    JITSYM_LOG(kWarning, who, ": ", missing);
  }
  if (!filtered) {
    JITSYM_LOG(kError, who, ": no seccomp filter: not reading any file");
    return kExitNoSandbox;
  }
  // Gone with the daemon (set after the change of user, which clears it).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  // From here on it ends with _exit: nothing at exit (a sanitizer's leak check reads
  // /proc/self/maps, which the filter refuses) has anything left to do.
  if (::getppid() == 1) _exit(0);
  native::SetFileOps(AskingOps());
  native::ModuleCache modules(cache);
  StringIds ids;
  // Serves lane `lane` until the daemon closes it; then the whole worker ends.
  auto serve = [&](int lane) {
    t_lane = lane;
    const int sock = kWorkerSocketFd + lane;
    for (;;) {
      Result<Frame> frame = ReceiveFrame(sock);
      if (!frame) _exit(0);  // the daemon closed the socket (or is gone)
      if (frame->type != kSymbolize || frame->fds.size() != 1) _exit(kExitBadMessage);
      Result<SymbolizeRequest> request = DecodeSymbolizeRequest(frame->payload);
      if (!request) _exit(kExitBadMessage);
      {
        std::lock_guard lock(g_mu);
        g_granted[lane] = {request->path, request->st, frame->fds.front().get()};
        g_serving[lane] = true;
      }
      if (cpu_seconds != 0) LimitCpuFromNow(cpu_seconds);
      std::string reply;
      try {
        reply = Encode(ServeSymbolize(modules, ids, *request));
      } catch (const std::bad_alloc&) {
        JITSYM_LOG(kError, who, ": ", request->path, ": out of memory (address space limit ",
                   sandbox.address_space_bytes >> 20, " MiB)");
        _exit(kExitOutOfMemory);
      }
      {
        // From here no question goes on this lane: the daemon stops reading it at the reply.
        std::lock_guard lock(g_mu);
        g_granted[lane] = {};
        g_serving[lane] = false;
      }
      if (!SendFrame(sock, kSymbolizeReply, reply)) _exit(0);
    }
  };
  for (int lane = 1; lane < g_lanes; ++lane) {
    try {
      std::thread(serve, lane).detach();
    } catch (const std::system_error&) {
      _exit(kExitOutOfMemory);
    }
  }
  serve(0);
  return 0;
}

}  // namespace jitsym::parse_worker
