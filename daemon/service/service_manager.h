// The daemon's side of the service manager (systemd) protocols, through libsystemd: the listening
// socket passed by socket activation (LISTEN_FDS), state notifications (NOTIFY_SOCKET: READY=1,
// RELOADING=1, STOPPING=1, STATUS=...) and watchdog keep-alives (WATCHDOG_USEC). Outside systemd
// every call is a cheap no-op, so the daemon runs the same way by hand.
#ifndef JITSYM_DAEMON_SERVICE_SERVICE_MANAGER_H_
#define JITSYM_DAEMON_SERVICE_SERVICE_MANAGER_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace jitsym::service {

// The listening socket systemd passed, if any: exactly one AF_UNIX stream socket in listening
// state. Takes it out of the environment (so children do not inherit it) and marks it
// close-on-exec. Throws std::runtime_error when sockets were passed but are not usable.
std::optional<int> TakeListeningSocket();

// Sends one notification ("READY=1\nSTATUS=..."); false if there is no NOTIFY_SOCKET or the send
// failed.
bool Notify(std::string_view state);

// STATUS= text: one line, at most a few hundred bytes.
std::string StatusLine(std::string_view text);

// The watchdog interval systemd expects keep-alives within (WATCHDOG_USEC for this process).
std::optional<std::chrono::microseconds> WatchdogInterval();

// Sends WATCHDOG=1 from the daemon's event loops themselves: a timer on the ingest loop fires
// every half interval and posts the keep-alive to the query loop, so a wedged ingest loop (the
// timer never fires) or a wedged query loop (the posted handler never runs) stops the
// keep-alives and systemd restarts the daemon. Each tick also refreshes STATUS= from `status`.
class Watchdog {
 public:
  Watchdog(boost::asio::io_context& ingest_io, boost::asio::io_context& query_io,
           std::function<std::string()> status);
  // Starts the keep-alives if systemd asked for them; the status refresh runs either way when
  // there is a NOTIFY_SOCKET.
  void Start();
  void Stop();  // from the ingest loop's thread, or before it runs

 private:
  void Arm();

  boost::asio::io_context& ingest_io_;
  boost::asio::io_context& query_io_;
  std::function<std::string()> status_;
  boost::asio::steady_timer timer_;
  std::chrono::microseconds period_{0};
  std::string last_status_;
  bool keepalive_ = false;
  bool stopped_ = false;
};

}  // namespace jitsym::service

#endif  // JITSYM_DAEMON_SERVICE_SERVICE_MANAGER_H_
