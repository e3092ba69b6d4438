// One client connection of the Server (internal to daemon/server).
#ifndef JITSYM_DAEMON_SERVER_SESSION_H_
#define JITSYM_DAEMON_SERVER_SESSION_H_

#include <atomic>
#include <boost/asio/local/stream_protocol.hpp>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/server/server.h"

namespace jitsym::server {

class Session;

// What sessions share with the server; kept alive by every session so a late handler never
// touches a destroyed Server.
struct ServerState {
  ServerState(RequestHandler& h, ServerOptions o) : handler(h), options(o) {}

  RequestHandler& handler;
  const ServerOptions options;
  std::atomic<bool> stopped{false};

  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> connections_rejected{0};
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> addresses{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> buffered_request_bytes{0};  // see ServerOptions::max_buffered_request_bytes

  std::mutex mutex;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;  // guarded by mutex
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;

  // `socket`'s executor must be a strand of its own: every handler of the session runs on it.
  Session(std::shared_ptr<ServerState> state, Socket socket, PeerCredentials peer);
  ~Session();

  void Start();
  // Thread-safe: closes the connection on the session's strand.
  void Close();

 private:
  void ReadMore();
  void OnRead(const boost::system::error_code& ec, size_t n);
  // Answers complete buffered request lines until the output reaches the high-water mark,
  // then writes, or reads more input.
  void Continue();
  void OnWritten(const boost::system::error_code& ec, size_t n);
  void HandleLine(std::string_view line);
  void Answer(const proto::Response& response);
  void CloseNow();

  std::shared_ptr<ServerState> state_;
  Socket socket_;
  PeerCredentials peer_;
  std::vector<char> in_;
  size_t charged_ = 0;  // in_.size() beyond the idle size, counted in buffered_request_bytes
  size_t begin_ = 0;    // unconsumed input is in_[begin_, end_)
  size_t end_ = 0;
  size_t scanned_ = 0;  // in_[begin_, scanned_) holds no '\n'
  std::string out_;
  bool close_after_write_ = false;
  bool closed_ = false;
};

}  // namespace jitsym::server

#endif  // JITSYM_DAEMON_SERVER_SESSION_H_
