// One client connection of the Server (internal to daemon/server).
#ifndef JITSYM_DAEMON_SERVER_SESSION_H_
#define JITSYM_DAEMON_SERVER_SESSION_H_

#include <atomic>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/server/admission.h"
#include "daemon/server/pulled_answer.h"
#include "daemon/server/server.h"

namespace jitsym::server {

class Session;

// What sessions share with the server; kept alive by every session so a late handler never
// touches a destroyed Server.
struct ServerState {
  ServerState(RequestHandler& h, ServerOptions o)
      : handler(h),
        options(std::move(o)),
        memory(options.max_buffered_request_bytes, options.max_user_request_bytes),
        threads(options.person_threads) {}

  RequestHandler& handler;
  const ServerOptions options;
  MemoryBudget memory;
  ThreadShare threads;  // query threads answering one person's requests at once
  std::atomic<bool> stopped{false};

  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> connections_rejected{0};
  std::atomic<uint64_t> connections_timed_out{0};
  std::atomic<uint64_t> requests_busy{0};
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> addresses{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> bytes_sent{0};

  std::mutex mutex;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;  // guarded by mutex
  std::unordered_map<unsigned, size_t> connections_by_person;     // guarded by mutex
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;

  // `socket`'s executor must be a strand of its own: every handler of the session runs on it.
  // The caller has counted the connection in state->connections_open and connections_by_person;
  // the session uncounts it when it ends.
  Session(std::shared_ptr<ServerState> state, Socket socket, PeerCredentials peer);
  ~Session();

  void Start();
  // Thread-safe: closes the connection on the session's strand.
  void Close();

 private:
  // A lookup answer being produced slice by slice (see server.h).
  struct Stream;

  void ReadMore();
  void OnRead(const boost::system::error_code& ec, size_t n);
  // Produces answers (the current stream, then complete buffered request lines) until the
  // output reaches the high-water mark, then writes, or reads more input.
  void Continue();
  void OnWritten(const boost::system::error_code& ec, size_t n);
  void HandleLine(std::string_view line);
  // Starts answering a lookup as a stream, taking over `charged` bytes of the memory budget;
  // false when it was answered whole instead (a small compact answer).
  bool StartStream(proto::Request request, uint64_t charged);
  // Appends more of the current stream's text to out_.
  void Produce();
  // The end of a streamed answer: "]}\n", or a binary answer's end marker.
  void EndAnswer(const Stream& s);
  void EndStream();
  // Any other request: the handler's answer (RequestHandler::Respond), whole or pulled from its
  // producer step by step (Pull) until the output reaches the high-water mark.
  void StartAnswer(const proto::Request& request);
  void Pull();
  void EndPulled();
  // A binary answer that uses the connection's string table starts: the table starts anew if
  // it forgot strings or grew past its bound. Returns how many strings it keeps.
  uint64_t BeginConnectionStrings();
  // A slice of such an answer was sent: its strings stay referable, so what they point into is
  // pinned, up to kMaxPinnedSlices slices (then the table forgets them).
  void PinSlice(proto::Response* slice);
  // The table's strings are never referred to again; the pinned slices are let go.
  void ForgetConnectionStrings();
  // The handler's answer to one request (a slice of a lookup), normalized; exceptions become
  // an "internal" error.
  proto::Response CallHandler(const proto::Request& request);
  void Answer(const proto::Response& response);
  // Input buffer back to its idle size once it holds less than that.
  void ShrinkInput();
  // The idle/request deadline (see ServerOptions), checked periodically.
  void ArmTimer();
  void OnTimer();
  void CloseNow();
  // Whether the next step of Continue calls the handler (a slice to answer, a whole request
  // line to handle): it takes one of the person's query threads (ServerState::threads).
  bool NextNeedsHandler() const;
  // Continue again shortly, holding no thread meanwhile: the person's share is in use.
  void Defer();

  std::shared_ptr<ServerState> state_;
  Socket socket_;
  PeerCredentials peer_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer deferred_;  // Defer()
  std::vector<char> in_;
  size_t charged_ = 0;  // in_.size() beyond the idle size, charged to state_->memory
  size_t begin_ = 0;    // unconsumed input is in_[begin_, end_)
  size_t end_ = 0;
  size_t scanned_ = 0;  // in_[begin_, scanned_) holds no '\n'
  std::string out_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<PulledAnswer> pulled_;  // the answer being pulled from a producer
  // The connection's string table (binary answers that ask "string_table":"connection"): the
  // encoder remembers strings by address, so the slices whose strings it may refer to are
  // pinned (their keepalives) until it forgets them: past kMaxPinnedSlices slices or
  // kMaxConnectionStringBytes of text, or once the connection is idle (OnTimer).
  proto::BinaryAnswerEncoder connection_strings_;
  std::vector<std::shared_ptr<const void>> pinned_slices_;
  bool writing_ = false;
  bool close_after_write_ = false;
  bool closed_ = false;
  std::chrono::steady_clock::time_point last_progress_;  // last byte read or written
  bool reading_ = false;                                 // a read is pending
  std::chrono::steady_clock::time_point reading_since_;  // when it was started
  // Time spent waiting for the rest of the partial line in in_ (request_timeout).
  std::chrono::steady_clock::duration line_waited_{};
};

}  // namespace jitsym::server

#endif  // JITSYM_DAEMON_SERVER_SESSION_H_
