#include "daemon/service/service_manager.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include <boost/asio/post.hpp>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "daemon/util/log.h"

namespace jitsym::service {

std::optional<int> TakeListeningSocket() {
  const int n = ::sd_listen_fds(1);
  if (n < 0) {
    throw std::runtime_error(std::string("cannot read the sockets passed by systemd: ") +
                             std::strerror(-n));
  }
  if (n == 0) return std::nullopt;
  if (n != 1) {
    throw std::runtime_error("systemd passed " + std::to_string(n) +
                             " sockets; jitsymd.socket must have exactly one ListenStream=");
  }
  const int fd = SD_LISTEN_FDS_START;
  if (::sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0) {
    throw std::runtime_error(
        "the socket passed by systemd is not a listening Unix stream socket; jitsymd.socket "
        "needs ListenStream=/path");
  }
  return fd;
}

bool Notify(std::string_view state) {
  if (std::getenv("NOTIFY_SOCKET") == nullptr) return false;
  return ::sd_notify(0, std::string(state).c_str()) > 0;
}

std::string StatusLine(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 400)) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out;
}

std::optional<std::chrono::microseconds> WatchdogInterval() {
  uint64_t usec = 0;
  if (::sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec);
}

Watchdog::Watchdog(boost::asio::io_context& ingest_io, boost::asio::io_context& query_io,
                   std::function<std::string()> status)
    : ingest_io_(ingest_io), query_io_(query_io), status_(std::move(status)), timer_(ingest_io) {}

void Watchdog::Start() {
  const bool notify = std::getenv("NOTIFY_SOCKET") != nullptr;
  if (auto interval = WatchdogInterval()) {
    keepalive_ = true;
    period_ = *interval / 2;
    JITSYM_LOG(kInfo, "watchdog: keep-alive every ", period_.count() / 1000, " ms");
  } else if (notify) {
    period_ = std::chrono::seconds(5);  // status refresh only
  } else {
    return;
  }
  Arm();
}

void Watchdog::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void Watchdog::Arm() {
  timer_.expires_after(period_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    // On the ingest loop: the status is computed here (it reads the published view), and the
    // keep-alive goes out from the query loop.
    std::string status = StatusLine(status_());
    std::string message = keepalive_ ? "WATCHDOG=1" : "";
    if (status != last_status_) {
      if (!message.empty()) message += '\n';
      message += "STATUS=" + status;
      last_status_ = std::move(status);
    }
    if (!message.empty()) {
      boost::asio::post(query_io_, [message = std::move(message)] { Notify(message); });
    }
    Arm();
  });
}

}  // namespace jitsym::service
