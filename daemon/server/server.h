// The daemon's socket server: newline-delimited JSON requests over a Unix stream socket
// (docs/protocol.md), answered by a RequestHandler.
//
// Threading: the io_context may be run by several threads. Each connection is a session whose
// handlers run on its own strand, so one connection's requests are handled strictly in order
// while different connections are handled in parallel; RequestHandler::Handle is therefore
// called concurrently for different connections.
//
// Memory per connection is bounded: a request line longer than max_request_bytes is answered
// with "too_large" and the connection closed, and a session does not read further requests while
// it has a large answer to write (backpressure on a client that does not read).
//
// Writes use MSG_NOSIGNAL (Boost.Asio does on Linux), and the daemon ignores SIGPIPE as well, so a
// client that disappears mid-answer only ends its session.
#ifndef JITSYM_DAEMON_SERVER_SERVER_H_
#define JITSYM_DAEMON_SERVER_SERVER_H_

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proto/protocol.h"

namespace jitsym::server {

// The connecting process, from SO_PEERCRED at accept time.
struct PeerCredentials {
  int pid = 0;
  unsigned uid = 0;
  unsigned gid = 0;
  // Supplementary groups at connect time (SO_PEERGROUPS); empty when the kernel cannot tell.
  std::vector<unsigned> groups;
};

// Implemented by the daemon's query engine.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Called concurrently from server threads (never concurrently for one connection). Exceptions
  // become an "internal" error response. The server sets the response's id from the request. For
  // a lookup, results must have one entry per address, in order; the server fills in the
  // per-address error (found:false, error, raw) for entries the decoder could not parse.
  virtual proto::Response Handle(const proto::Request& request, const PeerCredentials& peer) = 0;
};

struct ServerOptions {
  size_t max_request_bytes = proto::kMaxRequestBytes;
  // Further connections are answered with a "busy" error and closed.
  size_t max_connections = 1024;
  // Answers to pipelined requests are collected up to this size before being written; no more
  // requests are read from a connection until its pending output is written.
  size_t output_high_water = 1 << 20;
  // Input buffered beyond 64 KiB per connection (long request lines), summed over connections:
  // a connection whose line would take more is answered "busy" and closed, so that many
  // connections each sending a line just under max_request_bytes cannot exhaust memory.
  size_t max_buffered_request_bytes = 512u << 20;
};

// Monotonic totals since the server was created (connections_open is current).
struct Counters {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;
  uint64_t connections_rejected = 0;  // over max_connections
  uint64_t requests = 0;              // request lines, valid or not
  uint64_t addresses = 0;             // addresses in lookup requests
  uint64_t errors = 0;                // error responses sent
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
};

class Server {
 public:
  // `io` and `handler` must outlive every thread running io (the server's handlers hold only
  // shared state of their own, so destroying the Server first is safe).
  Server(boost::asio::io_context& io, RequestHandler& handler, ServerOptions options = {});
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Creates the parent directory if missing (0755), removes a stale socket file (only if it is a
  // socket nobody answers on), binds, makes the socket 0666 (access control is by peer
  // credentials, not file mode) and starts accepting. Throws std::system_error with a message
  // naming the path, e.g. when another jitsymd is serving it or the path is not a socket.
  void Listen(const std::string& path);
  // Accepts on an already-listening socket (systemd socket activation). Takes ownership.
  void Adopt(int listening_fd);
  // Stops accepting and closes every session (asynchronously, on the io_context's threads);
  // io.run() returns once nothing else is pending. Removes the socket file Listen created.
  // Idempotent, callable from any thread.
  void Stop();

  Counters counters() const;
  // The path given to Listen, empty otherwise.
  const std::string& path() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace jitsym::server

#endif  // JITSYM_DAEMON_SERVER_SERVER_H_
