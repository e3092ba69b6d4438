#include "daemon/parse_worker/worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "daemon/native/debug_file_locator.h"
#include "daemon/native/file_ops.h"
#include "daemon/os/small_file.h"
#include "daemon/parse_worker/channel.h"
#include "daemon/parse_worker/worker_main.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::parse_worker {
namespace {

constexpr uint32_t kNobody = 65534;
constexpr size_t kFilesRemembered = 64;  // per worker, for sending a file where it was read
constexpr uint64_t kMs = 1000000;

std::string Seconds(uint64_t ns) {
  if (ns < 1000 * kMs) return std::to_string(ns / kMs) + " ms";
  return std::to_string(ns / (1000 * kMs)) + " s";
}

std::string SignalName(int sig) {
  const char* name = ::sigabbrev_np(sig);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

// Whose rights the companion files of a file with this stat are opened with: its owner's
// (with his primary and supplementary groups), nobody's for root's files that others may
// write, none (root's) for root's own.
std::unique_ptr<security::PeerAccess> ReaderOf(const struct stat& st) {
  security::PeerCredentials c;
  if (st.st_uid == 0) {
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0) return nullptr;
    c.uid = c.gid = kNobody;
  } else {
    c.uid = st.st_uid;
    c.gid = kNobody;
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (::getpwuid_r(st.st_uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
      c.gid = found->pw_gid;
    }
  }
  for (uint32_t gid : security::GroupsOfUser(c.uid, c.gid)) c.groups.push_back(gid);
  return std::make_unique<security::PeerAccess>(c, security::AccessPolicy{});
}

// The anonymous memory a process holds (RssAnon: its tables, not the files it maps); 0 when
// /proc does not say.
uint64_t AnonymousBytesOf(pid_t pid) {
  auto file = os::ReadSmallFile("/proc/" + std::to_string(pid) + "/status", {});
  if (!file) return 0;
  const std::string_view text = file->bytes;
  const size_t at = text.find("RssAnon:");
  if (at == std::string_view::npos) return 0;
  return std::strtoull(text.data() + at + 8, nullptr, 10) << 10;  // "RssAnon:   1234 kB"
}

}  // namespace

std::string WorkerPool::GroupOf(const struct stat& st, uint32_t* owner) {
  *owner = st.st_uid;
  if (st.st_uid != 0) return "uid " + std::to_string(st.st_uid);
  return (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 ? "root, writable by others" : "root";
}

WorkerPool::WorkerPool(PoolOptions options) : options_(std::move(options)) {
  if (native::DebuginfodFetcher::Configured()) {
    debuginfod_ = std::make_unique<native::DebuginfodFetcher>();
  }
  // On this thread, which lives as long as the pool: a worker dies with the thread that
  // started it (PR_SET_PDEATHSIG), so not on a thread of its own.
  if (options_.prestart_root) Prestart();
}

void WorkerPool::Prestart() {
  Result<std::shared_ptr<Worker>> w = Spawn("root", 0);
  std::lock_guard lock(mu_);
  Group& g = groups_["root"];
  if (w) {
    g.workers.push_back(*w);
  } else {
    // Not a failure of the group's: its first request starts one as usual.
    JITSYM_LOG(kWarning, "parse worker for root: ", w.error().message,
               "; started with the first request instead");
  }
}

WorkerPool::~WorkerPool() {
  std::lock_guard lock(mu_);
  for (auto& [name, g] : groups_) {
    while (!g.workers.empty()) BuryLocked(&g, *g.workers.back(), true);
  }
}

bool WorkerPool::Worker::Has(const std::string& key) const {
  return reading.count(key) != 0 || std::find(files.begin(), files.end(), key) != files.end();
}

size_t WorkerPool::LiveLocked() const {
  size_t n = 0;
  for (const auto& [name, g] : groups_) n += g.workers.size();
  return n;
}

bool WorkerPool::EvictIdleLocked(const Worker* spare) {
  Group* in = nullptr;
  Worker* victim = nullptr;
  for (auto& [name, g] : groups_) {
    for (const auto& w : g.workers) {
      if (w->busy == 0 && w.get() != spare &&
          (victim == nullptr || w->last_used_ns < victim->last_used_ns)) {
        in = &g;
        victim = w.get();
      }
    }
  }
  if (victim == nullptr) return false;
  BuryLocked(in, *victim, true);
  return true;
}

void WorkerPool::TrimLocked(const Worker* spare) {
  for (;;) {
    uint64_t total = 0;
    for (const auto& [name, g] : groups_) {
      for (const auto& w : g.workers) total += w->bytes;
    }
    if (total <= options_.cache_bytes || !EvictIdleLocked(spare)) return;
  }
}

Result<std::shared_ptr<WorkerPool::Worker>> WorkerPool::Spawn(const std::string& name,
                                                              uint32_t owner) {
  const size_t lanes = std::clamp<size_t>(options_.lanes, 1, kMaxLanes);
  std::vector<os::UniqueFd> mine, theirs;
  for (size_t k = 0; k < lanes; ++k) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return MakeError(ErrorKind::kIo, std::string("socketpair: ") + std::strerror(errno));
    }
    mine.emplace_back(sv[0]);
    // Above the descriptors it is given (dup2 onto itself would keep O_CLOEXEC).
    theirs.emplace_back(::fcntl(sv[1], F_DUPFD_CLOEXEC, kWorkerSocketFd + kMaxLanes));
    ::close(sv[1]);
    if (!theirs.back().valid()) {
      return MakeError(ErrorKind::kIo, std::string("fcntl: ") + std::strerror(errno));
    }
  }
  // argv[0] says what it is in ps(1) and top(1).
  std::vector<std::string> args = {"jitsymd-parse-worker",
                                   kWorkerFlag,
                                   "uid=" + std::to_string(owner == 0 ? kNobody : owner),
                                   "gid=" + std::to_string(kNobody),
                                   "as=" + std::to_string(options_.address_space_bytes),
                                   "cpu=" + std::to_string(options_.timeout_ms / 1000 + 1),
                                   "cache=" + std::to_string(options_.cache_bytes),
                                   "lanes=" + std::to_string(lanes),
                                   "inflate=" + std::to_string(options_.inflate_bytes),
                                   "for=" + name,
                                   "log=" + options_.log_level};
  for (const std::string& d : options_.debug_dirs) args.push_back("debug-dir=" + d);
  if (debuginfod_) args.push_back("debuginfod=1");
  // What it needs of the environment and nothing else (no DEBUGINFOD_URLS: it has no network).
  std::vector<std::string> env;
  for (const char* keep : {"JOURNAL_STREAM", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
    if (const char* v = std::getenv(keep)) env.push_back(std::string(keep) + "=" + v);
  }
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  for (size_t k = 0; k < lanes; ++k) {
    ::posix_spawn_file_actions_adddup2(&actions, theirs[k].get(),
                                       kWorkerSocketFd + static_cast<int>(k));
  }
  ::posix_spawn_file_actions_addclosefrom_np(&actions, kWorkerSocketFd + static_cast<int>(lanes));
  ::posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc =
      ::posix_spawn(&pid, options_.exe.c_str(), &actions, &attr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return MakeError(ErrorKind::kIo, "starting " + options_.exe + ": " + std::strerror(rc));
  }
  auto w = std::make_shared<Worker>();
  w->pid = pid;
  w->lanes = std::move(mine);
  w->lane_busy.assign(lanes, false);
  w->pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  ++stats_.started;
  JITSYM_LOG(kInfo, "parse worker for ", name, " started (pid ", pid, ")");
  return w;
}

std::string WorkerPool::BuryLocked(Group* g, Worker& w, bool killed_by_us) {
  if (w.pid <= 0) return w.end;
  std::shared_ptr<Worker> keep;  // alive until the end here, whoever else holds it
  if (g != nullptr) {
    auto& all = g->workers;
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& p) { return p.get() == &w; });
    if (it != all.end()) {
      keep = *it;
      all.erase(it);
    }
  }
  if (killed_by_us) ::kill(w.pid, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(w.pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  w.pid = -1;
  // A lane still serving a request sees the end of its socket only when that request is done.
  for (size_t k = 0; k < w.lanes.size(); ++k) {
    if (!w.lane_busy[k]) w.lanes[k].reset();
  }
  w.end = r < 0 ? "gone" : Describe(status, killed_by_us);
  return w.end;
}

std::string WorkerPool::Describe(int status, bool killed_by_us) const {
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case kExitOutOfMemory:
        return "ran out of memory (its address space limit is " +
               std::to_string(options_.address_space_bytes >> 20) + " MiB)";
      case kExitNoSandbox:
        return "could not enter its sandbox";
      case kExitBadMessage:
        return "broke the protocol";
      default:
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    }
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGXCPU) {
      return "used up its CPU time limit (" + std::to_string(options_.timeout_ms / 1000 + 1) +
             " s a request)";
    }
    if (sig == SIGKILL && killed_by_us) return "was killed";
    return "was killed by " + SignalName(sig);
  }
  return "ended";
}

WorkerPool::Lease WorkerPool::LeaseLocked(Group& g, const std::shared_ptr<Worker>& w,
                                          const std::string& key) {
  Lease lease{w, 0};
  while (w->lane_busy[lease.lane]) ++lease.lane;
  w->lane_busy[lease.lane] = true;
  ++w->busy;
  ++g.busy;
  ++w->reading[key];  // from now: a request for this file goes to this worker
  return lease;
}

Result<WorkerPool::Lease> WorkerPool::Take(const std::string& name, Group& g,
                                           const std::string& key, uint64_t deadline_ns,
                                           std::unique_lock<std::mutex>& lock) {
  for (;;) {
    const uint64_t now = MonotonicNowNs();
    // The worker that has (or is reading) this file's module: a lane of it, or a wait for one
    // (a second cold read in another worker would cost as much again).
    std::shared_ptr<Worker> holder, idle, spare;
    for (const auto& w : g.workers) {
      if (w->Has(key) && (holder == nullptr || w->busy < holder->busy)) holder = w;
      if (w->busy == 0 && idle == nullptr) idle = w;
      if (w->busy < w->lanes.size() && (spare == nullptr || w->busy < spare->busy)) spare = w;
    }
    std::shared_ptr<Worker> pick;
    bool spawn = false;
    if (g.busy < options_.per_group && (holder != nullptr || g.starting.count(key) == 0)) {
      if (holder != nullptr) {
        if (holder->busy < holder->lanes.size()) pick = holder;
      } else if (idle != nullptr) {
        pick = idle;
      } else if (now < g.retry_at_ns) {
        ++stats_.refused;
        return MakeError(ErrorKind::kLimit, "the parse worker for " + name + " " + g.last_failure +
                                                "; the next one starts in " +
                                                Seconds(g.retry_at_ns - now));
      } else if (LiveLocked() < options_.max_workers || EvictIdleLocked()) {
        spawn = true;
      } else {
        pick = spare;
      }
    }
    if (pick != nullptr && pick->busy == 0 && pick->pidfd.valid()) {
      // One that died while idle (killed by its user, say) is replaced, not reported.
      pollfd p{pick->pidfd.get(), POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) {
        const pid_t pid = pick->pid;
        const std::string end = BuryLocked(&g, *pick, false);
        JITSYM_LOG(kInfo, "parse worker for ", name, " (pid ", pid, ") ", end, " while idle");
        continue;
      }
    }
    if (pick != nullptr) return LeaseLocked(g, pick, key);
    if (spawn) {
      ++g.busy;  // counted while it starts; a request for this file meanwhile waits for it
      ++g.starting[key];
      lock.unlock();
      Result<std::shared_ptr<Worker>> w = Spawn(name, g.owner);
      lock.lock();
      --g.busy;
      if (--g.starting[key] == 0) g.starting.erase(key);
      if (!w) {
        freed_.notify_all();
        return std::move(w).error();
      }
      g.workers.push_back(*w);
      Lease lease = LeaseLocked(g, *w, key);
      freed_.notify_all();  // those waiting for it: a lane of it may be theirs
      return lease;
    }
    if (now >= deadline_ns || freed_.wait_for(lock, std::chrono::nanoseconds(deadline_ns - now)) ==
                                  std::cv_status::timeout) {
      ++stats_.refused;
      return MakeError(ErrorKind::kLimit, "every parse worker for " + name + " stayed busy for " +
                                              std::to_string(options_.timeout_ms) + " ms");
    }
  }
}

void WorkerPool::Release(Group& g, const Lease& lease, const std::string& key) {
  Worker& w = *lease.worker;
  --g.busy;
  --w.busy;
  w.lane_busy[lease.lane] = false;
  if (auto it = w.reading.find(key); it != w.reading.end() && --it->second == 0) {
    w.reading.erase(it);
  }
  if (w.pid <= 0) {
    w.lanes[lease.lane].reset();  // buried meanwhile: its last socket goes
  } else {
    w.last_used_ns = MonotonicNowNs();
    w.bytes = AnonymousBytesOf(w.pid);  // the kernel's count, not the worker's word
    TrimLocked(&w);
  }
  freed_.notify_all();
}

void WorkerPool::ServeFileOp(const Worker& w, int sock, const Group& g, const Frame& frame) {
  const uint32_t owner = g.owner;
  FileOpReply reply;
  os::UniqueFd opened;
  Result<FileOpRequest> request = DecodeFileOpRequest(frame.payload);
  const native::FileOps& files = native::Files();
  // Root's or the owner's files only, or one fetched from debuginfod here; any other reads as
  // absent, whether it exists or not (the log says why, for the operator).
  auto fetched = [&](const std::string& path) {
    std::lock_guard lock(mu_);
    return fetched_.count(path) != 0;
  };
  auto allowed = [&](const struct stat& st, const std::string& path) {
    if (fetched(path)) return true;
    std::string why;
    if (native::CompanionOwnerAllowed(st.st_uid, owner, &why)) return true;
    JITSYM_LOG(kInfo, path, ": not read: ", why, " (asked by parse worker ", w.pid, ")");
    return false;
  };
  // Whether the group's reader could reach and read `path` itself; *walked: where it leads.
  auto reachable = [&](const std::string& path, security::WalkedPath* walked) {
    if (!g.reader || fetched(path)) return true;
    const security::FileAccess access = g.reader->CheckRead(path, walked);
    if (access == security::FileAccess::kAllowed) return true;
    if (access == security::FileAccess::kDenied) {
      JITSYM_LOG(kInfo, path, ": not read: uid ", g.reader->uid(),
                 " could not read it (asked by parse worker ", w.pid, ")");
    }
    return false;
  };
  security::WalkedPath walked;
  if (!request) {
    reply.error = EINVAL;
  } else if (request->kind == FileOpKind::kFetch) {
    const std::string& id = request->path;
    std::optional<std::string> path;
    const bool hex = !id.empty() && id.size() <= 128 &&
                     id.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (debuginfod_ && hex) {
      path = debuginfod_->Fetched(id);
      if (!path) debuginfod_->Request(id);
    }
    if (path) {
      std::lock_guard lock(mu_);
      if (fetched_.size() < 65536) fetched_.insert(*path);
      reply.resolved = *path;
    } else {
      reply.error = ENOENT;
    }
  } else if (!reachable(request->path, &walked)) {
    reply.error = ENOENT;
  } else if (request->kind == FileOpKind::kStat) {
    if (!files.stat(request->path, request->follow, &reply.st, &reply.served_by_process)) {
      reply.error = errno;
    } else if (!allowed(reply.st, request->path)) {
      reply = FileOpReply{};
      reply.error = ENOENT;
    }
  } else if (request->kind == FileOpKind::kResolve) {
    struct stat st {};
    bool served = false;
    if (!files.resolve(request->path, &reply.resolved)) {
      reply.error = errno;
    } else if (!files.stat(reply.resolved, true, &st, &served) || !allowed(st, reply.resolved)) {
      reply = FileOpReply{};
      reply.error = ENOENT;
    }
  } else {
    struct stat st {};
    bool served = false;
    if (!files.stat(request->path, true, &st, &served)) {
      reply.error = errno;
    } else if (!allowed(st, request->path)) {
      reply.error = ENOENT;
    } else if (!S_ISREG(st.st_mode)) {
      // A FIFO, a device, a directory: nothing to read, and opening some does something. An
      // O_PATH descriptor lets the reader see what it is and say so; on a FUSE mount, not even
      // that is asked.
      if (served) {
        reply.error = EINVAL;
      } else {
        opened.reset(::open(request->path.c_str(), O_PATH | O_CLOEXEC));
        if (!opened.valid()) reply.error = errno;
      }
    } else {
      opened.reset(files.open(request->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
      struct stat now {};
      if (!opened.valid()) {
        reply.error = errno;
      } else if (!served && (::fstat(opened.get(), &now) != 0 || now.st_dev != st.st_dev ||
                             now.st_ino != st.st_ino ||
                             (g.reader && !walked.resolved.empty() &&
                              (now.st_dev != walked.dev || now.st_ino != walked.ino)))) {
        // Replaced between the look and the open: what was opened was not the file judged.
        opened.reset();
        reply.error = ENOENT;
      } else {
        reply.st = st;
      }
    }
  }
  std::vector<int> fds;
  if (opened.valid()) fds.push_back(opened.get());
  SendFrame(sock, kFileOpReply, Encode(reply), fds);
}

Result<SymbolizeReply> WorkerPool::Symbolize(const SymbolizeRequest& request, int fd) {
  uint32_t owner = 0;
  const std::string name = GroupOf(request.st, &owner);
  const std::string key = native::FileVersionKey(request.st);
  const uint64_t start = MonotonicNowNs();
  const uint64_t deadline = start + options_.timeout_ms * kMs;
  Lease lease;
  Group* group = nullptr;  // never erased: stays valid
  {
    std::unique_lock lock(mu_);
    if (auto it = files_.find(key); it != files_.end() && start < it->second.until_ns) {
      ++stats_.refused;
      return MakeError(ErrorKind::kLimit, request.path + ": " + it->second.why +
                                              "; not read again for " +
                                              Seconds(it->second.until_ns - start));
    }
    Group& g = groups_[name];
    if (g.last_used_ns == 0) {
      g.owner = owner;
      g.reader = ReaderOf(request.st);
    }
    g.last_used_ns = start;
    group = &g;
    Result<Lease> taken = Take(name, g, key, deadline, lock);
    if (!taken) return taken.error();
    lease = std::move(*taken);
  }
  Worker& w = *lease.worker;
  const int sock = w.lanes[lease.lane].get();
  // Talks to the worker until it answers, dies or runs out of time.
  std::string failure;
  bool killed_by_us = false;
  Result<SymbolizeReply> reply = MakeError(ErrorKind::kLimit, "");
  if (!SendFrame(sock, kSymbolize, Encode(request), {fd})) {
    failure = "could not be sent the request";
    killed_by_us = true;
  }
  while (failure.empty()) {
    Result<Frame> frame = ReceiveFrame(sock, deadline, w.pidfd.get());
    if (!frame) {
      if (frame.error().kind == ErrorKind::kLimit) {
        failure = "took longer than " + std::to_string(options_.timeout_ms) + " ms";
        killed_by_us = true;
      } else if (frame.error().kind == ErrorKind::kMalformed) {
        failure = "broke the protocol (" + frame.error().message + ")";
        killed_by_us = true;
      }
      break;  // else dead: BuryLocked says how
    }
    if (frame->type == kFileOp) {
      ServeFileOp(w, sock, *group, *frame);
      continue;
    }
    if (frame->type == kSymbolizeReply) reply = DecodeSymbolizeReply(frame->payload);
    if (frame->type != kSymbolizeReply || !reply) {
      failure = "broke the protocol";
      killed_by_us = true;
    }
    break;
  }
  std::unique_lock lock(mu_);
  Group& g = *group;
  if (reply) {
    // What it has read: the next request for this file goes to it.
    auto& files = w.files;
    if (std::find(files.begin(), files.end(), key) == files.end()) {
      if (files.size() >= kFilesRemembered) files.erase(files.begin());
      files.push_back(key);
    }
    g.failures = 0;
    Release(g, lease, key);
    return reply;
  }
  if (w.pid <= 0) {
    // Stopped for another request it served at the same time (or to make room): not this
    // file's doing.
    const std::string end = w.end;
    Release(g, lease, key);
    return MakeError(ErrorKind::kLimit, request.path + ": its parse worker (for " + name + ") " +
                                            end + " while serving another request");
  }
  const std::string end = BuryLocked(&g, w, killed_by_us);
  if (failure.empty()) failure = end;
  ++stats_.failed;
  ++g.failures;
  const uint64_t now = MonotonicNowNs();
  g.retry_at_ns =
      now + std::min<uint64_t>(30000 * kMs, (250 * kMs) << std::min(g.failures - 1, 7u));
  g.last_failure = failure + " reading " + request.path;
  Backoff& b = files_[key];
  ++b.failures;
  b.until_ns =
      now + std::min<uint64_t>(600000 * kMs, (10000 * kMs) << std::min(b.failures - 1, 6u));
  b.why = "its parse worker (for " + name + ") " + failure;
  if (files_.size() > 4096) {
    for (auto it = files_.begin(); it != files_.end();) {
      it = it->second.until_ns <= now ? files_.erase(it) : std::next(it);
    }
  }
  JITSYM_LOG(kWarning, "parse worker for ", name, " ", failure, " reading ", request.path,
             " (request of ", request.addrs.size(),
             " addresses); its lookups answer "
             "native_failed; the file is not read again for ",
             Seconds(b.until_ns - now), ", the next worker starts in ",
             Seconds(g.retry_at_ns - now));
  Release(g, lease, key);
  return MakeError(ErrorKind::kLimit,
                   request.path + ": its parse worker (for " + name + ") " + failure);
}

ParserStats WorkerPool::Stats() {
  std::lock_guard lock(mu_);
  ParserStats s = stats_;
  s.workers = LiveLocked();
  for (const auto& [name, g] : groups_) {
    for (const auto& w : g.workers) s.bytes += w->bytes;
  }
  return s;
}

}  // namespace jitsym::parse_worker
