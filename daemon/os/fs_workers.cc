// The pool of fs_workers.h.
#include "daemon/os/fs_workers.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::os {
namespace {

// Owner of mounts that name none (an overlay): they share one bound.
constexpr uint32_t kUnknownOwner = UINT32_MAX;

std::string Seconds(uint64_t ns) {
  const uint64_t tenths = (ns + 50'000'000) / 100'000'000;
  return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : "") +
         " s";
}

bool Exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

bool Send(int sock, const fsworker::Request& request, std::span<const int> fds) {
  const size_t size = offsetof(fsworker::Request, path) + request.path_len + 1;
  iovec iov{const_cast<fsworker::Request*>(&request), std::min(size, sizeof(request))};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  ssize_t n;
  do {
    n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(iov.iov_len);
}

}  // namespace

FsWorkers& FsWorkers::Shared() {
  // Never destroyed: threads may still call it while the process exits.
  static FsWorkers* pool = new FsWorkers(Options{});
  return *pool;
}

FsWorkers::FsWorkers(Options options) : options_(options) {}

FsWorkers::~FsWorkers() {
  // Idle workers and the zygote see their sockets close and exit; stuck ones die when their
  // request ends (they were killed, or their parent, the zygote, is gone).
  idle_.clear();
  zygote_.reset();
}

void FsWorkers::Prepare() {
  std::lock_guard lock(mu_);
  if (zygote_.valid()) return;
  int sock = -1;
  zygote_pid_ = fsworker::StartZygote(&sock);
  if (zygote_pid_ < 0) {
    JITSYM_LOG(kError,
               "cannot start the process for calls on FUSE filesystems: ", std::strerror(errno));
    return;
  }
  zygote_.reset(sock);
}

uint32_t FsWorkers::OwnerOf(const Mount& fs) { return fs.owner.value_or(kUnknownOwner); }

void FsWorkers::ReapLocked() {
  std::erase_if(stuck_, [](const Stuck& s) { return Exited(s.pidfd.get()); });
  stats_.stuck = stuck_.size();
}

bool FsWorkers::SpawnLocked(Worker* out, std::string* why) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!zygote_.valid()) {
      int sock = -1;
      zygote_pid_ = fsworker::StartZygote(&sock);
      if (zygote_pid_ < 0) {
        *why = std::string("cannot start a worker process: ") + std::strerror(errno);
        return false;
      }
      zygote_.reset(sock);
    }
    int sock = -1, pidfd = -1;
    if (fsworker::SpawnWorker(zygote_.get(), &sock, &pidfd)) {
      out->sock.reset(sock);
      out->pidfd.reset(pidfd);
      return true;
    }
    *why = std::string("cannot start a worker process: ") + std::strerror(errno);
    JITSYM_LOG(kWarning,
               "the process that starts workers for FUSE calls is gone; starting it again");
    zygote_.reset();  // gone: started again once
    if (zygote_pid_ > 0) ::waitpid(zygote_pid_, nullptr, WNOHANG);
  }
  return false;
}

Result<FsWorkers::Answer> FsWorkers::Call(const Mount& fs, const std::string& what,
                                          const fsworker::Request& request,
                                          std::span<const int> fds) {
  const uint64_t started = MonotonicNowNs();
  const uint32_t owner = OwnerOf(fs);
  Worker worker;
  {
    std::lock_guard lock(mu_);
    ++stats_.calls;
    ReapLocked();
    if (auto s = silent_.find(fs.dev); s != silent_.end() && started < s->second.until_ns) {
      ++stats_.refused;
      return MakeError(ErrorKind::kIo, what + ": not asked: " + fs.Describe() +
                                           " did not answer before; asked again in " +
                                           Seconds(s->second.until_ns - started));
    }
    const size_t mine = static_cast<size_t>(std::count_if(
        stuck_.begin(), stuck_.end(), [owner](const Stuck& s) { return s.owner == owner; }));
    const std::string whose =
        owner == kUnknownOwner ? std::string("unknown owners") : "user_id " + std::to_string(owner);
    if (auto w = waiting_.find(owner);
        w != waiting_.end() && w->second >= options_.max_waiting_per_owner) {
      ++stats_.refused;
      return MakeError(ErrorKind::kIo, what + ": not asked: " + fs.Describe() +
                                           ": another call on a FUSE filesystem of " + whose +
                                           " is being waited for");
    }
    if (stuck_.size() >= options_.max_stuck || mine >= options_.max_stuck_per_owner) {
      ++stats_.refused;
      return MakeError(ErrorKind::kIo, what + ": not asked: " + fs.Describe() + ": " +
                                           std::to_string(mine) + " calls on FUSE filesystems of " +
                                           whose + " (" + std::to_string(stuck_.size()) +
                                           " in all) are still unanswered");
    }
    // An idle worker that is gone (killed from outside) is replaced.
    while (!idle_.empty() && Exited(idle_.back().pidfd.get())) idle_.pop_back();
    if (!idle_.empty()) {
      worker = std::move(idle_.back());
      idle_.pop_back();
    } else if (std::string why; !SpawnLocked(&worker, &why)) {
      return MakeError(ErrorKind::kIo, what + ": " + why);
    }
    ++waiting_[owner];
  }
  // The owner's turn is given back however this ends.
  struct Turn {
    FsWorkers* self;
    uint32_t owner;
    ~Turn() {
      std::lock_guard lock(self->mu_);
      if (--self->waiting_[owner] == 0) self->waiting_.erase(owner);
    }
  } turn{this, owner};
  Answer answer;
  answer.reply = std::make_unique<fsworker::Reply>();
  if (!Send(worker.sock.get(), request, fds)) {
    return MakeError(ErrorKind::kIo, what + ": the worker process is gone");
  }
  const uint64_t timeout_ns = static_cast<uint64_t>(options_.timeout.count()) * 1'000'000;
  int ready = 0;
  for (;;) {
    const uint64_t now = MonotonicNowNs();
    const uint64_t left = started + timeout_ns > now ? started + timeout_ns - now : 0;
    pollfd p{worker.sock.get(), POLLIN, 0};
    ready = ::poll(&p, 1, static_cast<int>((left + 999'999) / 1'000'000));
    if (ready < 0 && errno == EINTR) continue;
    break;
  }
  if (ready <= 0) {
    // No answer: the worker is left to its request; the mount is not asked again for a while.
    if (options_.kill_stuck) {
      ::syscall(SYS_pidfd_send_signal, worker.pidfd.get(), SIGKILL, nullptr, 0);
    }
    uint64_t pause_ns = 0;
    {
      std::lock_guard lock(mu_);
      ++stats_.unanswered;
      Silence& s = silent_[fs.dev];
      const uint64_t base = static_cast<uint64_t>(options_.backoff.count()) * 1'000'000;
      const uint64_t most = static_cast<uint64_t>(options_.max_backoff.count()) * 1'000'000;
      pause_ns = std::min(most, base << std::min(s.level, 20));
      ++s.level;
      s.until_ns = MonotonicNowNs() + pause_ns;
      stuck_.push_back({std::move(worker.pidfd), owner, fs.dev});
      stats_.stuck = stuck_.size();
    }
    const std::string message = what + ": " + fs.Describe() + " did not answer within " +
                                Seconds(timeout_ns) + " (" + fs.guard_reason +
                                "); given up, and not asked again for " + Seconds(pause_ns);
    JITSYM_LOG(kWarning, message);
    return MakeError(ErrorKind::kIo, message);
  }
  iovec iov{answer.reply.get(), sizeof(fsworker::Reply)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(worker.sock.get(), &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int))) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
      answer.fd.reset(fd);
    }
  }
  if (n < static_cast<ssize_t>(fsworker::kReplyHeader) ||
      static_cast<size_t>(n) != fsworker::kReplyHeader + answer.reply->data_len) {
    return MakeError(ErrorKind::kIo, what + ": the worker process failed");
  }
  std::lock_guard lock(mu_);
  silent_.erase(fs.dev);  // it answers
  if (idle_.size() < options_.idle) idle_.push_back(std::move(worker));
  return answer;
}

FsWorkers::Stats FsWorkers::stats() {
  std::lock_guard lock(mu_);
  ReapLocked();
  return stats_;
}

}  // namespace jitsym::os
