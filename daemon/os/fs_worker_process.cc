// The zygote and the workers of fs_worker_process.h. Everything here after fork() is system
// calls on static buffers: no allocation, no locks, no logging.
#include "daemon/os/fs_worker_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jitsym::os::fsworker {
namespace {

Request g_request;
Reply g_reply;
alignas(64) char g_buffer[1 << 20];

// openat2, or where a seccomp filter refuses it (ENOSYS: systemd's RestrictSUIDSGID=) openat,
// which answers alike for what workers are asked: one component (no '/') with O_NOFOLLOW,
// where RESOLVE_NO_SYMLINKS adds nothing.
int Openat2(int dirfd, const char* path, uint64_t flags, uint64_t resolve) {
  open_how how{};
  how.flags = flags;
  how.resolve = resolve;
  const int fd = static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof(how)));
  if (fd >= 0 || errno != ENOSYS || (resolve & ~uint64_t{RESOLVE_NO_SYMLINKS}) != 0 ||
      (flags & O_NOFOLLOW) == 0 || std::strchr(path, '/') != nullptr) {
    return fd;
  }
  return ::openat(dirfd, path, static_cast<int>(flags));
}

// Writes `n` into a decimal at `out` (at most 20 digits), returns its end.
char* Decimal(char* out, uint64_t n) {
  char digits[24];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  while (k > 0) *out++ = digits[--k];
  *out = '\0';
  return out;
}

// open("/proc/self/fd/<fd>", flags): the object an O_PATH descriptor names, opened for real.
int Reopen(int fd, int flags) {
  char path[64] = "/proc/self/fd/";
  Decimal(path + std::strlen(path), static_cast<uint64_t>(fd));
  return ::open(path, flags | O_CLOEXEC);
}

int OpenTarget(int fd, int flags) {
  if (g_request.path_len == 0) return Reopen(fd, flags);
  const uint64_t resolve = (g_request.flags & kNoSymlinks) ? RESOLVE_NO_SYMLINKS : 0;
  return Openat2(fd, g_request.path, static_cast<uint64_t>(flags | O_CLOEXEC | O_NOFOLLOW),
                 resolve);
}

bool FullPwrite(int fd, const char* data, size_t n, uint64_t at) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
    at += static_cast<uint64_t>(w);
  }
  return true;
}

// Copies [from, to) of `in` into `out`; returns where the copy ended (sooner at the file's end).
int64_t CopyRange(int in, int out, uint64_t from, uint64_t to) {
  uint64_t at = from;
  while (at < to) {
    const size_t want =
        static_cast<size_t>(to - at < sizeof(g_buffer) ? to - at : sizeof(g_buffer));
    const ssize_t n = ::pread(in, g_buffer, want, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    if (!FullPwrite(out, g_buffer, static_cast<size_t>(n), at)) return -1;
    at += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(at);
}

void DoLookUp(int fd, int* passed) {
  const uint64_t resolve = (g_request.flags & kNoSymlinks) ? RESOLVE_NO_SYMLINKS : 0;
  const int got = Openat2(fd, g_request.path_len ? g_request.path : ".",
                          O_PATH | O_NOFOLLOW | O_CLOEXEC, resolve);
  if (got < 0) {
    g_reply.error = errno;
    return;
  }
  *passed = got;
  g_reply.passed_fd = 1;
  if (::fstat(got, &g_reply.st) != 0) {
    g_reply.error = errno;
    return;
  }
  g_reply.has_stat = 1;
  if (S_ISLNK(g_reply.st.st_mode)) {
    const ssize_t n = ::readlinkat(got, "", g_reply.data, kMaxData);
    if (n < 0) {
      g_reply.error = errno;
      return;
    }
    g_reply.data_len = static_cast<uint32_t>(n);
  }
}

void DoStat(int fd) {
  const int flags = AT_SYMLINK_NOFOLLOW | (g_request.path_len ? 0 : AT_EMPTY_PATH);
  if (::fstatat(fd, g_request.path_len ? g_request.path : "", &g_reply.st, flags) != 0) {
    g_reply.error = errno;
    return;
  }
  g_reply.has_stat = 1;
}

void DoCopy(int fd, int memfd) {
  const int in = OpenTarget(fd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (in < 0) {
    g_reply.error = errno;
    return;
  }
  struct stat& st = g_reply.st;
  const uint64_t offset = g_request.offset;
  if (::fstat(in, &st) != 0) {
    g_reply.error = errno;
  } else if (!S_ISREG(st.st_mode)) {
    g_reply.has_stat = 1;
    g_reply.error = EINVAL;
  } else if ((g_request.flags & kExpect) &&
             (static_cast<uint64_t>(st.st_dev) != g_request.expect_dev ||
              static_cast<uint64_t>(st.st_ino) != g_request.expect_ino)) {
    g_reply.has_stat = 1;
    g_reply.error = ESTALE;
  } else if (g_request.max_size != 0 && static_cast<uint64_t>(st.st_size) > g_request.max_size) {
    g_reply.has_stat = 1;
    g_reply.error = EFBIG;
  } else {
    g_reply.has_stat = 1;
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t length = g_request.length < kMaxCopy ? g_request.length : kMaxCopy;
    const uint64_t head_end = g_request.head < size ? g_request.head : size;
    const uint64_t end = offset >= size ? size : (size - offset < length ? size : offset + length);
    const int64_t head_got = head_end > 0 ? CopyRange(in, memfd, 0, head_end) : 0;
    const int64_t got = offset < end ? CopyRange(in, memfd, offset, end) : 0;
    if (head_got < 0 || got < 0) {
      g_reply.error = errno;
    } else {
      // A read that ended early means the file shrank meanwhile: it ends there.
      uint64_t shown = end;
      if (static_cast<uint64_t>(head_got) < head_end && static_cast<uint64_t>(head_got) < shown) {
        shown = static_cast<uint64_t>(head_got);
      }
      if (offset < end && static_cast<uint64_t>(got) < shown) shown = static_cast<uint64_t>(got);
      if (::ftruncate(memfd, static_cast<off_t>(shown)) != 0) {
        g_reply.error = errno;
      } else {
        g_reply.size = shown;
        g_reply.copied = shown > offset ? shown - offset : 0;
      }
    }
  }
  // Closing a file of a FUSE filesystem asks its server (FLUSH): here, where it may hang.
  ::close(in);
}

void DoList(int fd) {
  const int dir = OpenTarget(fd, O_RDONLY | O_DIRECTORY);
  if (dir < 0) {
    g_reply.error = errno;
    return;
  }
  if (g_request.offset != 0 && ::lseek(dir, static_cast<off_t>(g_request.offset), SEEK_SET) < 0) {
    g_reply.error = errno;
    ::close(dir);
    return;
  }
  uint32_t used = 0;
  uint64_t next = 0;
  bool full = false;
  while (!full) {
    const long n = ::syscall(SYS_getdents64, dir, g_buffer, 32768);
    if (n < 0) {
      g_reply.error = errno;
      break;
    }
    if (n == 0) {
      next = 0;
      break;
    }
    long pos = 0;
    while (pos < n) {
      struct Dirent64 {
        uint64_t d_ino;
        int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[1];
      };
      const auto* e = reinterpret_cast<const Dirent64*>(g_buffer + pos);
      const size_t len = std::strlen(e->d_name);
      if (used + len + 1 > kMaxData) {
        full = true;
        break;  // `next` is where this entry is
      }
      std::memcpy(g_reply.data + used, e->d_name, len + 1);
      used += static_cast<uint32_t>(len + 1);
      next = static_cast<uint64_t>(e->d_off);
      pos += e->d_reclen;
    }
  }
  g_reply.data_len = used;
  g_reply.next = full ? next : 0;
  ::close(dir);
}

[[noreturn]] void RunWorker(int sock) {
  for (;;) {
    iovec iov{&g_request, sizeof(g_request)};
    alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(0);  // the daemon is gone
    int fds[2] = {-1, -1};
    int nfds = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t k = 0; k < count; ++k) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
        if (nfds < 2) {
          fds[nfds++] = fd;
        } else {
          ::close(fd);
        }
      }
    }
    std::memset(static_cast<void*>(&g_reply), 0, kReplyHeader);
    if (static_cast<size_t>(n) < offsetof(Request, path) || g_request.path_len >= kMaxPath ||
        static_cast<size_t>(n) < offsetof(Request, path) + g_request.path_len) {
      g_reply.error = EINVAL;
    } else {
      g_request.path[g_request.path_len] = '\0';
    }
    int passed = -1;
    if (g_reply.error == 0) {
      if (nfds < 1) {
        g_reply.error = EBADF;
      } else {
        switch (g_request.op) {
          case Op::kLookUp:
            DoLookUp(fds[0], &passed);
            break;
          case Op::kStat:
            DoStat(fds[0]);
            break;
          case Op::kCopy:
            if (nfds < 2) {
              g_reply.error = EBADF;
            } else {
              DoCopy(fds[0], fds[1]);
            }
            break;
          case Op::kList:
            DoList(fds[0]);
            break;
          case Op::kWaitForTesting: {
            char c;
            while (::read(fds[0], &c, 1) < 0 && errno == EINTR) {
            }
            break;
          }
          default:
            g_reply.error = EINVAL;
        }
      }
    }
    for (int k = 0; k < nfds; ++k) ::close(fds[k]);
    iovec out{&g_reply, kReplyHeader + g_reply.data_len};
    msghdr reply{};
    reply.msg_iov = &out;
    reply.msg_iovlen = 1;
    alignas(cmsghdr) char out_control[CMSG_SPACE(sizeof(int))];
    if (passed >= 0 && g_reply.passed_fd) {
      reply.msg_control = out_control;
      reply.msg_controllen = sizeof(out_control);
      cmsghdr* c = CMSG_FIRSTHDR(&reply);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &passed, sizeof(int));
    } else {
      g_reply.passed_fd = 0;
    }
    const ssize_t sent = ::sendmsg(sock, &reply, MSG_NOSIGNAL);
    if (passed >= 0) ::close(passed);  // an O_PATH descriptor: closing it asks no filesystem
    if (sent < 0) ::_exit(0);
  }
}

// The process state a zygote or worker starts from: no descriptor of the daemon but `keep`
// (moved to 3), standard streams on /dev/null, default signal handling (SIGCHLD ignored: the
// zygote's children are reaped by the kernel), killed when its parent goes.
bool Detach(int keep, pid_t parent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) return false;
  if (keep != 3) {
    if (::dup2(keep, 3) < 0) return false;
  }
  ::syscall(SYS_close_range, 4u, ~0u, 0u);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    if (null > 3) ::close(null);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::sigaction(sig, &dfl, nullptr);
  }
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGCHLD, &ign, nullptr);
  ::sigaction(SIGPIPE, &ign, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  return true;
}

[[noreturn]] void RunZygote(int sock) {
  ::prctl(PR_SET_NAME, "jitsymd-fs", 0, 0, 0);
  const pid_t self = ::getpid();
  for (;;) {
    char ask = 0;
    const ssize_t n = ::recv(sock, &ask, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(0);  // the daemon is gone
    int sv[2] = {-1, -1};
    int32_t result = 0;
    int pidfd = -1;
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      result = errno;
    } else {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(sv[0]);
        if (!Detach(sv[1], self)) ::_exit(1);
        RunWorker(3);
      }
      if (pid < 0) {
        result = errno;
      } else {
        pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (pidfd < 0) {
          result = errno;
          ::kill(pid, SIGKILL);
        }
      }
      ::close(sv[1]);
    }
    iovec iov{&result, sizeof(result)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
    if (result == 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(2 * sizeof(int));
      const int fds[2] = {sv[0], pidfd};
      std::memcpy(CMSG_DATA(c), fds, sizeof(fds));
    }
    const ssize_t sent = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (sv[0] >= 0) ::close(sv[0]);
    if (pidfd >= 0) ::close(pidfd);
    if (sent < 0) ::_exit(0);
  }
}

}  // namespace

int StartZygote(int* sock) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int saved = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    errno = saved;
    return -1;
  }
  if (pid == 0) {
    if (!Detach(sv[1], parent)) ::_exit(1);
    RunZygote(3);
  }
  ::close(sv[1]);
  *sock = sv[0];
  return pid;
}

bool SpawnWorker(int zygote_sock, int* worker_sock, int* pidfd) {
  const char ask = 1;
  if (::send(zygote_sock, &ask, 1, MSG_NOSIGNAL) != 1) return false;
  int32_t result = 0;
  iovec iov{&result, sizeof(result)};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(zygote_sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof(result)) return false;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (result != 0 || c == nullptr || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(2 * sizeof(int))) {
    errno = result != 0 ? result : EPROTO;
    return false;
  }
  int fds[2];
  std::memcpy(fds, CMSG_DATA(c), sizeof(fds));
  *worker_sock = fds[0];
  *pidfd = fds[1];
  return true;
}

}  // namespace jitsym::os::fsworker
