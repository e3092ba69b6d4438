#include "daemon/server/session.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <exception>
#include <new>
#include <utility>

#include "daemon/util/log.h"

namespace jitsym::server {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
// Buffers are returned to this size once idle, so a single big batch does not pin memory.
constexpr size_t kIdleInputBytes = kReadChunk;
constexpr size_t kIdleOutputBytes = 4 << 20;  // a compact 8192-address native answer: ~4 MiB

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

// Makes the handler's answer keep the protocol's promises whatever the handler did: the id is
// echoed, there is one result per address in order, and unparsable addresses come back as
// per-address errors carrying the input text.
void Normalize(const proto::Request& request, proto::Response* response) {
  response->id_json = request.id_json;
  const auto* lookup = std::get_if<proto::LookupRequest>(&request.body);
  auto* answer = std::get_if<proto::LookupResponse>(&response->body);
  if (lookup == nullptr || answer == nullptr) return;
  if (answer->results.size() != lookup->addrs.size()) {
    *response = proto::MakeErrorResponse(
        request.id_json, proto::kErrInternal,
        "internal error: " + std::to_string(answer->results.size()) + " results for " +
            std::to_string(lookup->addrs.size()) + " addresses");
    return;
  }
  for (size_t i = 0; i < lookup->addrs.size(); ++i) {
    const proto::AddressQuery& q = lookup->addrs[i];
    if (q.error.empty()) continue;
    proto::LookupResult& r = answer->results[i];
    r = proto::LookupResult{};
    r.error = q.error;
    r.raw = q.raw;
  }
}

}  // namespace

Session::Session(std::shared_ptr<ServerState> state, Socket socket, PeerCredentials peer)
    : state_(std::move(state)), socket_(std::move(socket)), peer_(peer), in_(kReadChunk) {
  state_->connections_open.fetch_add(1, std::memory_order_relaxed);
}

Session::~Session() {
  state_->buffered_request_bytes.fetch_sub(charged_, std::memory_order_relaxed);
  {
    std::lock_guard lock(state_->mutex);
    state_->sessions.erase(this);
  }
  state_->connections_open.fetch_sub(1, std::memory_order_relaxed);
}

void Session::Start() {
  boost::asio::post(socket_.get_executor(), [self = shared_from_this()] { self->ReadMore(); });
}

void Session::Close() {
  boost::asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
}

void Session::CloseNow() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void Session::ReadMore() {
  if (closed_) return;
  // Drop consumed input, then make sure a whole chunk fits.
  if (begin_ == end_) {
    begin_ = end_ = scanned_ = 0;
    if (in_.size() > kIdleInputBytes) {
      std::vector<char>(kIdleInputBytes).swap(in_);
      state_->buffered_request_bytes.fetch_sub(charged_, std::memory_order_relaxed);
      charged_ = 0;
    }
  } else if (begin_ > 0) {
    std::memmove(in_.data(), in_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    scanned_ -= begin_;
    begin_ = 0;
  }
  if (in_.size() - end_ < kReadChunk) {
    // Double, but never much past the longest line accepted.
    const size_t limit = state_->options.max_request_bytes + kReadChunk;
    const size_t size = std::max(std::min(in_.size() * 2, limit), end_ + kReadChunk);
    const size_t charge = size - kIdleInputBytes - charged_;
    const uint64_t total =
        state_->buffered_request_bytes.fetch_add(charge, std::memory_order_relaxed) + charge;
    if (total > state_->options.max_buffered_request_bytes) {
      state_->buffered_request_bytes.fetch_sub(charge, std::memory_order_relaxed);
      Answer(proto::MakeErrorResponse("", proto::kErrBusy,
                                      "too many long requests being received; retry later"));
      close_after_write_ = true;
      Continue();
      return;
    }
    charged_ += charge;
    in_.resize(size);
  }
  socket_.async_read_some(
      boost::asio::buffer(in_.data() + end_, in_.size() - end_),
      boost::asio::bind_executor(socket_.get_executor(),
                                 [self = shared_from_this()](const boost::system::error_code& ec,
                                                             size_t n) { self->OnRead(ec, n); }));
}

void Session::OnRead(const boost::system::error_code& ec, size_t n) {
  if (ec) {
    // EOF, reset by peer, or Close(): the session just ends. Requests still buffered without a
    // newline are incomplete and dropped.
    CloseNow();
    return;
  }
  end_ += n;
  state_->bytes_received.fetch_add(n, std::memory_order_relaxed);
  Continue();
}

void Session::Continue() {
  if (closed_) return;
  const size_t max_bytes = state_->options.max_request_bytes;
  while (out_.size() < state_->options.output_high_water && !close_after_write_) {
    const void* nl = std::memchr(in_.data() + scanned_, '\n', end_ - scanned_);
    if (nl == nullptr) {
      scanned_ = end_;
      if (end_ - begin_ > max_bytes) {
        Answer(proto::MakeErrorResponse(
            "", proto::kErrTooLarge,
            "request line longer than " + std::to_string(max_bytes) + " bytes"));
        close_after_write_ = true;
      }
      break;
    }
    const size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - in_.data());
    std::string_view line(in_.data() + begin_, pos - begin_);
    begin_ = scanned_ = pos + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_bytes) {
      Answer(proto::MakeErrorResponse(
          "", proto::kErrTooLarge,
          "request line longer than " + std::to_string(max_bytes) + " bytes"));
      close_after_write_ = true;
      break;
    }
    if (IsBlank(line)) continue;  // not a request: convenient for people typing into nc
    HandleLine(line);
  }
  if (!out_.empty()) {
    boost::asio::async_write(socket_, boost::asio::buffer(out_),
                             boost::asio::bind_executor(socket_.get_executor(),
                                                        [self = shared_from_this()](
                                                            const boost::system::error_code& ec,
                                                            size_t n) { self->OnWritten(ec, n); }));
  } else if (close_after_write_) {
    CloseNow();
  } else {
    // Idle until the client sends more: give back a large answer's buffer. Not after each
    // write: a client with batches in flight has the next request waiting, and its answer
    // would grow the buffer again page by page.
    if (out_.capacity() > kIdleOutputBytes) std::string().swap(out_);
    ReadMore();
  }
}

void Session::OnWritten(const boost::system::error_code& ec, size_t n) {
  state_->bytes_sent.fetch_add(n, std::memory_order_relaxed);
  if (ec) {
    CloseNow();  // EPIPE / ECONNRESET: the client went away
    return;
  }
  out_.clear();
  if (close_after_write_) {
    CloseNow();
    return;
  }
  Continue();
}

void Session::HandleLine(std::string_view line) {
  state_->requests.fetch_add(1, std::memory_order_relaxed);
  proto::DecodeRequestResult decoded = proto::DecodeRequest(line);
  if (!decoded.request) {
    Answer(*decoded.error);
    return;
  }
  const proto::Request& request = *decoded.request;
  if (const auto* lookup = std::get_if<proto::LookupRequest>(&request.body)) {
    state_->addresses.fetch_add(lookup->addrs.size(), std::memory_order_relaxed);
  }
  proto::Response response;
  try {
    response = state_->handler.Handle(request, peer_);
    Normalize(request, &response);
  } catch (const std::exception& e) {
    JITSYM_LOG(kError, "request handler failed: ", e.what());
    response = proto::MakeErrorResponse(request.id_json, proto::kErrInternal,
                                        std::string("internal error: ") + e.what());
  } catch (...) {
    JITSYM_LOG(kError, "request handler failed with a non-standard exception");
    response = proto::MakeErrorResponse(request.id_json, proto::kErrInternal, "internal error");
  }
  Answer(response);
}

void Session::Answer(const proto::Response& response) {
  if (std::holds_alternative<proto::ErrorResponse>(response.body)) {
    state_->errors.fetch_add(1, std::memory_order_relaxed);
  }
  const size_t size_before = out_.size();
  try {
    proto::EncodeResponse(response, &out_);
  } catch (const std::bad_alloc&) {
    // Never leave half a line in the stream.
    out_.resize(size_before);
    proto::EncodeResponse(proto::MakeErrorResponse(response.id_json, proto::kErrInternal,
                                                   "out of memory encoding the response"),
                          &out_);
  }
}

}  // namespace jitsym::server
