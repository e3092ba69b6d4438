#include "daemon/parse_worker/channel.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "daemon/util/clock.h"

namespace jitsym::parse_worker {
namespace {

struct Header {
  uint32_t length;  // of the payload
  uint32_t type;
};

bool WriteAll(int sock, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(sock, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Waits until `sock` is readable: 0, or the error to fail with.
Result<void> Wait(int sock, uint64_t deadline_ns, int wake_fd) {
  for (;;) {
    int timeout = -1;
    if (deadline_ns != 0) {
      const uint64_t now = MonotonicNowNs();
      if (now >= deadline_ns) return MakeError(ErrorKind::kLimit, "no answer before the deadline");
      timeout = static_cast<int>(
          std::min<uint64_t>((deadline_ns - now + 999999) / 1000000, 24u * 3600 * 1000));
    }
    pollfd fds[2] = {{sock, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int n = ::poll(fds, wake_fd >= 0 ? 2 : 1, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return MakeError(ErrorKind::kIo, std::string("poll: ") + std::strerror(errno));
    if (n == 0) continue;  // the deadline is checked above
    if (fds[0].revents != 0) return {};
    if (wake_fd >= 0 && fds[1].revents != 0) return MakeError(ErrorKind::kIo, "peer exited");
  }
}

// Reads exactly n bytes (the first read takes the descriptors); kIo "closed" at the end.
Result<void> ReadAll(int sock, char* data, size_t n, uint64_t deadline_ns, int wake_fd,
                     std::vector<os::UniqueFd>* fds) {
  while (n > 0) {
    if (Result<void> ready = Wait(sock, deadline_ns, wake_fd); !ready.ok()) {
      // Bytes already sent are read even when the sender is gone.
      if (ready.error().message != "peer exited") return ready;
      pollfd p{sock, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return ready;
    }
    iovec iov{data, n};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fds != nullptr) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
    }
    const ssize_t r = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return MakeError(ErrorKind::kIo, std::string("recvmsg: ") + std::strerror(errno));
    if (r == 0) return MakeError(ErrorKind::kIo, "closed");
    if (fds != nullptr) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < count; ++k) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
          fds->emplace_back(fd);
        }
      }
      fds = nullptr;  // descriptors come with the first byte only
    }
    data += r;
    n -= static_cast<size_t>(r);
  }
  return {};
}

}  // namespace

bool SendFrame(int sock, uint32_t type, std::string_view payload, const std::vector<int>& fds) {
  if (payload.size() > kMaxFrame || fds.size() > kMaxFds) {
    errno = EMSGSIZE;
    return false;
  }
  const Header h{static_cast<uint32_t>(payload.size()), type};
  iovec iov{const_cast<Header*>(&h), sizeof(h)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t w;
  do {
    w = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (w < 0 && errno == EINTR);
  if (w <= 0) return false;
  // The rest of the header (rarely: a full socket buffer), then the payload.
  const char* rest = reinterpret_cast<const char*>(&h) + w;
  if (!WriteAll(sock, rest, sizeof(h) - static_cast<size_t>(w))) return false;
  return WriteAll(sock, payload.data(), payload.size());
}

Result<Frame> ReceiveFrame(int sock, uint64_t deadline_ns, int wake_fd) {
  Frame frame;
  Header h{};
  if (Result<void> r =
          ReadAll(sock, reinterpret_cast<char*>(&h), sizeof(h), deadline_ns, wake_fd, &frame.fds);
      !r.ok()) {
    return r.error();
  }
  if (h.length > kMaxFrame) {
    return MakeError(ErrorKind::kMalformed, "a frame of " + std::to_string(h.length) +
                                                " bytes (at most " + std::to_string(kMaxFrame) +
                                                ")");
  }
  frame.type = h.type;
  frame.payload.resize(h.length);
  if (Result<void> r = ReadAll(sock, frame.payload.data(), h.length, deadline_ns, wake_fd, nullptr);
      !r.ok()) {
    return r.error();
  }
  return frame;
}

}  // namespace jitsym::parse_worker
