// The daemon's socket server: newline-delimited JSON requests over a Unix stream socket
// (docs/protocol.md), answered by a RequestHandler.
//
// Threading: the io_context may be run by several threads. Each connection is a session whose
// handlers run on its own strand, so one connection's requests are handled strictly in order
// while different connections are handled in parallel; RequestHandler::Handle is therefore
// called concurrently for different connections.
//
// Memory per connection is bounded: a request line longer than max_request_bytes is answered
// with "too_large" and the connection closed; a lookup is resolved and encoded in slices of
// answer_slice addresses, each slice's text written before the next is produced, so an answer
// of 2^20 addresses takes the memory of one slice and a client that does not read stops the
// production (backpressure). Other answers that may be large are produced step by step
// (AnswerProducer) on the same terms. Long request lines being received and decoded requests being
// answered are charged to a memory budget shared by all connections, with a per-user share
// (admission.h): beyond it a request is answered "busy".
//
// Connection slots: a total, a per-user share and a reserve for root (admission.h); a refused
// connection gets one "busy" line saying which limit it hit. A connection that sends nothing for
// idle_timeout, takes longer than request_timeout to send one request line (slowloris) or reads
// nothing of its answer for idle_timeout is closed.
//
// Writes use MSG_NOSIGNAL (Boost.Asio does on Linux), and the daemon ignores SIGPIPE as well, so a
// client that disappears mid-answer only ends its session.
#ifndef JITSYM_DAEMON_SERVER_SERVER_H_
#define JITSYM_DAEMON_SERVER_SERVER_H_

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/security/peer_credentials.h"
#include "proto/protocol.h"

namespace jitsym::server {

// Who is connecting; read at accept time and passed to the handler with each request. The
// credentials belong to security/ (every access decision starts from them); the server names them
// as part of its own interface.
using security::PeerCredentials;
using security::ReadPeerCredentials;

// An answer the handler produces while it is sent, for the answers that may be large (symbols,
// processes, explain; lookups have their slices): the session asks for one step at a time while
// what it has to write is below output_high_water, and for none while the client does not read
// (backpressure), so an answer of any size holds that much text plus what the producer needs to
// go on (its cursor and what that reads: an index view, a process's snapshot). The text is the
// protocol's, the request's id echoed; the server never looks into it.
class AnswerProducer {
 public:
  virtual ~AnswerProducer() = default;
  // Appends the next step of the answer to *out: its head, one element, or its end, which ends
  // the line with '\n' and returns false. A step that throws is taken back (*out cut to where
  // it was), so a producer changes its state only once a step's text is appended.
  virtual bool Step(std::string* out) = 0;
  // A step threw after earlier ones were sent: appends what ends the answer as a valid line
  // that says it failed (what is open closed, then proto::EncodeAnswerFailure).
  virtual void Fail(std::string_view code, std::string_view message, std::string* out) = 0;
  // Memory it holds of its own (its cursor, tables; not what it shares with the index),
  // charged to the memory budget while the answer is sent.
  virtual size_t memory_bytes() const { return 0; }
};

// A handler's answer: a whole response, or the producer of one.
struct Reply {
  proto::Response response;                  // when producer is null
  std::unique_ptr<AnswerProducer> producer;  // its step that throws first is an "internal" error
};

// Implemented by the daemon's query engine.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Called concurrently from server threads (never concurrently for one connection). Exceptions
  // become an "internal" error response. The server sets the response's id from the request. For
  // a lookup, results must have one entry per address, in order; the server fills in the
  // per-address error (found:false, error, raw) for entries the decoder could not parse.
  // Lookups are handed over in slices of at most ServerOptions::answer_slice addresses (the
  // request's other members unchanged), each answered on its own; an error response to the
  // first slice is the answer to the whole request.
  virtual proto::Response Handle(const proto::Request& request, const PeerCredentials& peer) = 0;
  // Any request but a lookup: the answer whole, or its producer, which the session pulls the
  // answer from as the client reads it. Called concurrently like Handle; the default is Handle.
  virtual Reply Respond(const proto::Request& request, const PeerCredentials& peer) {
    return {Handle(request, peer), nullptr};
  }
  // Takes back a lookup slice's response once it is sent, so that its storage may serve a later
  // one (8,192 results and their frames, allocated afresh for each slice otherwise). Called
  // concurrently like Handle. The default drops it.
  virtual void Recycle(proto::Response&& spent) { (void)spent; }
};

struct ServerOptions {
  size_t max_request_bytes = proto::kMaxRequestBytes;
  // Connections beyond these are answered with a "busy" error and closed. Root may use all of
  // max_connections; others all but privileged_connections, at most max_user_connections each.
  size_t max_connections = 1024;
  size_t max_user_connections = 64;
  size_t privileged_connections = 16;
  // Answers are written once this much text is ready (and at the end of what is ready); no more
  // is produced, and no more requests are read, until it is written.
  size_t output_high_water = 1 << 20;
  // Addresses of a lookup resolved at once.
  size_t answer_slice = 8192;
  // Memory held by requests: input buffered beyond 64 KiB per connection (long request lines)
  // and decoded lookup requests being answered, summed over connections, and per uid (root has
  // no per-user share). A connection whose request would take more is answered "busy" (closed
  // while its line is being received, kept open after a whole line), so that many connections
  // each sending a line just under max_request_bytes cannot exhaust memory.
  size_t max_buffered_request_bytes = 320u << 20;
  size_t max_user_request_bytes = 160u << 20;
  // Zero: no timeout. Idle: no request, or no progress writing an answer, for this long.
  // Request: from the first byte of a request line to its newline.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
  // Query threads one (unprivileged) person's requests may hold at once; his further requests
  // wait, holding none, until one of his is answered. 0: no share. main.cc: threads - 1.
  size_t person_threads = 0;
  // The person a peer's uid counts as for the per-user shares (security::Accounts::PersonOf);
  // none: every uid on its own.
  std::function<unsigned(unsigned uid)> person_of;
  // For tests: replaces ReadPeerCredentials.
  std::function<std::optional<PeerCredentials>(int fd)> peer_credentials_for_testing;
};

// Monotonic totals since the server was created (connections_open is current).
struct Counters {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;
  uint64_t connections_rejected = 0;   // over a connection limit, or peer unknown
  uint64_t connections_timed_out = 0;  // closed by idle_timeout or request_timeout
  uint64_t requests_busy = 0;          // refused by the request memory budget
  uint64_t requests = 0;               // request lines, valid or not
  uint64_t addresses = 0;              // addresses in lookup requests
  uint64_t errors = 0;                 // error responses sent
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
