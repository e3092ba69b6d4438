#include "daemon/server/session.h"

#include <sys/socket.h>

#include <algorithm>
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

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunk = 64 * 1024;
// Buffers are returned to this size once idle, so a single big batch does not pin memory.
constexpr size_t kIdleInputBytes = kReadChunk;
constexpr size_t kIdleOutputBytes = 4 << 20;
// How soon a session whose person has all his query threads busy looks again.
constexpr std::chrono::milliseconds kDeferral(2);
// Request lines up to this size are not charged to the memory budget: what they decode to is
// a few KiB (a ping, a sample's frames), and taking the budget's lock for each would be waste.
constexpr size_t kUnchargedLineBytes = 4096;
// A compact answer is built whole (its string table comes first); one whose strings add up to
// more than this is sent in the plain form instead, which streams.
constexpr size_t kMaxCompactStringBytes = 4 << 20;
// A connection's string table (docs/protocol.md, *Strings kept across answers*) pins the
// slices its strings point into: at most this many (their modules and index views), and it
// starts anew past this much text (what the client holds).
constexpr size_t kMaxPinnedSlices = 16;
constexpr uint64_t kMaxConnectionStringBytes = 16 << 20;
// A connection with no answer in progress for this long lets its pinned slices go.
constexpr auto kStringPinIdle = std::chrono::seconds(2);

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

// The handler's reply from `call`, its response normalized; exceptions become an "internal"
// error.
template <typename Call>
Reply Guarded(const proto::Request& request, Call&& call) {
  Reply reply;
  try {
    reply = call();
    if (reply.producer == nullptr) Normalize(request, &reply.response);
  } catch (const std::exception& e) {
    JITSYM_LOG(kError, "request handler failed: ", e.what());
    reply = {proto::MakeErrorResponse(request.id_json, proto::kErrInternal,
                                      std::string("internal error: ") + e.what()),
             nullptr};
  } catch (...) {
    JITSYM_LOG(kError, "request handler failed with a non-standard exception");
    reply = {proto::MakeErrorResponse(request.id_json, proto::kErrInternal, "internal error"),
             nullptr};
  }
  return reply;
}

// What a decoded lookup request holds in memory.
uint64_t DecodedBytes(const proto::LookupRequest& lookup) {
  uint64_t n = lookup.addrs.capacity() * sizeof(proto::AddressQuery);
  for (const proto::AddressQuery& q : lookup.addrs) {
    if (!q.error.empty()) n += q.error.capacity() + q.raw.capacity();
  }
  return n;
}

}  // namespace

struct Session::Stream {
  // The request with its addresses moved out: each slice's addresses are put back into it.
  proto::Request request;
  std::vector<proto::AddressQuery> addrs;
  size_t next = 0;          // first address not resolved yet
  bool have_slice = false;  // `slice` holds an answer not yet (fully) encoded
  proto::Response slice;    // the answer to the current slice
  size_t emitted = 0;       // results of `slice` encoded so far
  size_t total_emitted = 0;
  bool started = false;  // the answer's head has been written
  bool binary = false;   // the binary answer form: frames of results after a header line
  // Its string table: the slice's strings are borrowed from what the slice keeps alive, so it
  // forgets them with the slice. Not used when the answer uses the connection's table.
  proto::BinaryAnswerEncoder encoder;
  bool connection_strings = false;
  uint64_t charged = 0;  // charged to ServerState::memory for `addrs`

  const std::vector<proto::LookupResult>& results() const {
    static const std::vector<proto::LookupResult> kNone;
    const auto* lookup = std::get_if<proto::LookupResponse>(&slice.body);
    return lookup ? lookup->results : kNone;
  }
};

Session::Session(std::shared_ptr<ServerState> state, Socket socket, PeerCredentials peer)
    : state_(std::move(state)),
      socket_(std::move(socket)),
      peer_(std::move(peer)),
      timer_(socket_.get_executor()),
      deferred_(socket_.get_executor()),
      in_(kReadChunk),
      last_progress_(Clock::now()) {}

Session::~Session() {
  state_->memory.Release(peer_.person, charged_);
  if (stream_) state_->memory.Release(peer_.person, stream_->charged);
  if (pulled_) state_->memory.Release(peer_.person, pulled_->charged());
  {
    std::lock_guard lock(state_->mutex);
    state_->sessions.erase(this);
    auto it = state_->connections_by_person.find(peer_.person);
    if (it != state_->connections_by_person.end() && --it->second == 0) {
      state_->connections_by_person.erase(it);
    }
    state_->connections_open.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Session::Start() {
  boost::asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->ArmTimer();
    self->ReadMore();
  });
}

void Session::Close() {
  boost::asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
}

void Session::CloseNow() {
  if (closed_) return;
  closed_ = true;
  // The request buffer goes back to the budget before the client can see the connection
  // close, not when the last pending handler lets go of the session: a client that saw the
  // close may send its next long line at once.
  // (The buffer itself is freed with the session; handlers still queued may look at it.)
  state_->memory.Release(peer_.person, charged_);
  charged_ = 0;
  boost::system::error_code ignored;
  timer_.cancel();
  deferred_.cancel();
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (stream_) EndStream();
  if (pulled_) EndPulled();  // lets go of what the producer holds (an index view)
}

void Session::ArmTimer() {
  const auto& o = state_->options;
  std::chrono::milliseconds shortest = std::chrono::milliseconds::max();
  if (o.idle_timeout.count() > 0) shortest = std::min(shortest, o.idle_timeout);
  if (o.request_timeout.count() > 0) shortest = std::min(shortest, o.request_timeout);
  if (shortest == std::chrono::milliseconds::max()) return;
  // Checked a few times per timeout: a connection is closed at most a quarter late.
  const auto tick = std::clamp<std::chrono::milliseconds>(
      shortest / 4, std::chrono::milliseconds(50), std::chrono::milliseconds(5000));
  timer_.expires_after(tick);
  timer_.async_wait(boost::asio::bind_executor(
      socket_.get_executor(), [self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec) self->OnTimer();
      }));
}

void Session::OnTimer() {
  if (closed_) return;
  const auto& o = state_->options;
  const auto now = Clock::now();
  const bool idle = o.idle_timeout.count() > 0 && now - last_progress_ >= o.idle_timeout;
  // The request clock runs only while the daemon waits for the rest of a line, not while it
  // answers the requests before it (a pipelined line read in part waits for those).
  const bool slow = reading_ && end_ > begin_ && o.request_timeout.count() > 0 &&
                    line_waited_ + (now - reading_since_) >= o.request_timeout;
  // An idle connection does not keep slices alive for the strings of answers to come.
  if (!stream_ && !pinned_slices_.empty() && now - last_progress_ >= kStringPinIdle) {
    ForgetConnectionStrings();
  }
  if (!idle && !slow) {
    ArmTimer();
    return;
  }
  state_->connections_timed_out.fetch_add(1, std::memory_order_relaxed);
  if (!writing_) {
    // Best effort, never blocking: the client may be reading nothing at all.
    std::string line;
    const std::string message = slow ? "request line not complete after " +
                                           std::to_string(o.request_timeout.count()) +
                                           " ms (the request timeout); closing"
                                     : "no request for " + std::to_string(o.idle_timeout.count()) +
                                           " ms (the idle timeout); closing";
    proto::EncodeResponse(proto::MakeErrorResponse("", proto::kErrTimeout, message), &line);
    state_->errors.fetch_add(1, std::memory_order_relaxed);
    [[maybe_unused]] ssize_t n =
        ::send(socket_.native_handle(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  JITSYM_LOG(kDebug, "closing the connection of pid ", peer_.pid, " uid ", peer_.uid, ": ",
             slow       ? "request timeout"
             : writing_ ? "answer not read"
                        : "idle");
  CloseNow();
}

void Session::ReadMore() {
  if (closed_) return;
  // Drop consumed input, then make sure a whole chunk fits.
  if (begin_ == end_) {
    begin_ = end_ = scanned_ = 0;
    if (in_.size() > kIdleInputBytes) ShrinkInput();
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
    const MemoryBudget::Result r = state_->memory.TryCharge(peer_.person, charge);
    if (r != MemoryBudget::Result::kOk) {
      state_->requests_busy.fetch_add(1, std::memory_order_relaxed);
      Answer(proto::MakeErrorResponse(
          "", proto::kErrBusy, MemoryBusyMessage(r, state_->memory, peer_.uid, peer_.person)));
      close_after_write_ = true;
      Continue();
      return;
    }
    charged_ += charge;
    in_.resize(size);
  }
  reading_ = true;
  reading_since_ = Clock::now();
  socket_.async_read_some(
      boost::asio::buffer(in_.data() + end_, in_.size() - end_),
      boost::asio::bind_executor(socket_.get_executor(),
                                 [self = shared_from_this()](const boost::system::error_code& ec,
                                                             size_t n) { self->OnRead(ec, n); }));
}

void Session::ShrinkInput() {
  const size_t pending = end_ - begin_;
  if (in_.size() <= kIdleInputBytes || pending > kIdleInputBytes / 2) return;
  std::vector<char> small(kIdleInputBytes);
  std::memcpy(small.data(), in_.data() + begin_, pending);
  in_.swap(small);
  scanned_ -= begin_;
  end_ = pending;
  begin_ = 0;
  state_->memory.Release(peer_.person, charged_);
  charged_ = 0;
}

void Session::OnRead(const boost::system::error_code& ec, size_t n) {
  if (ec) {
    // EOF, reset by peer, or Close(): the session just ends. Requests still buffered without a
    // newline are incomplete and dropped.
    CloseNow();
    return;
  }
  const auto now = Clock::now();
  reading_ = false;
  // Waiting for a line's first byte is idleness; waiting for the rest of it is the line's.
  line_waited_ = begin_ == end_ ? Clock::duration::zero() : line_waited_ + (now - reading_since_);
  last_progress_ = now;
  end_ += n;
  state_->bytes_received.fetch_add(n, std::memory_order_relaxed);
  Continue();
}

bool Session::NextNeedsHandler() const {
  if (stream_)
    return !stream_->have_slice && !(stream_->started && stream_->next == stream_->addrs.size());
  if (pulled_) return false;
  return std::memchr(in_.data() + scanned_, '\n', end_ - scanned_) != nullptr;
}

void Session::Defer() {
  deferred_.expires_after(kDeferral);
  deferred_.async_wait(boost::asio::bind_executor(
      socket_.get_executor(), [self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec && !self->writing_) self->Continue();
      }));
}

void Session::Continue() {
  if (closed_) return;
  const size_t max_bytes = state_->options.max_request_bytes;
  const bool privileged = IsPrivilegedUid(peer_.uid);
  bool deferred = false;
  while (out_.size() < state_->options.output_high_water && !close_after_write_) {
    // One of the person's query threads for the step that calls the handler, or later.
    struct Slot {
      ThreadShare* share = nullptr;
      unsigned person = 0;
      bool privileged = false;
      ~Slot() {
        if (share != nullptr) share->Release(person, privileged);
      }
    } slot;
    if (NextNeedsHandler()) {
      if (!state_->threads.TryTake(peer_.person, privileged)) {
        deferred = true;
        break;
      }
      slot.share = &state_->threads;
      slot.person = peer_.person;
      slot.privileged = privileged;
    }
    if (stream_) {
      Produce();
      continue;
    }
    if (pulled_) {
      Pull();
      continue;
    }
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
    // What follows is the start of the next line, with a clock of its own.
    line_waited_ = Clock::duration::zero();
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
    // A long line has been decoded: its buffer is not needed while the answer is written.
    ShrinkInput();
  }
  if (!out_.empty()) {
    writing_ = true;
    boost::asio::async_write(socket_, boost::asio::buffer(out_),
                             boost::asio::bind_executor(socket_.get_executor(),
                                                        [self = shared_from_this()](
                                                            const boost::system::error_code& ec,
                                                            size_t n) { self->OnWritten(ec, n); }));
  } else if (close_after_write_) {
    CloseNow();
  } else if (deferred) {
    Defer();
  } else {
    // Idle until the client sends more: give back a large answer's buffer. Not after each
    // write: a client with batches in flight has the next request waiting, and its answer
    // would grow the buffer again page by page.
    if (out_.capacity() > kIdleOutputBytes) std::string().swap(out_);
    ReadMore();
  }
}

void Session::OnWritten(const boost::system::error_code& ec, size_t n) {
  writing_ = false;
  const auto now = Clock::now();
  state_->bytes_sent.fetch_add(n, std::memory_order_relaxed);
  if (ec) {
    CloseNow();  // EPIPE / ECONNRESET: the client went away
    return;
  }
  last_progress_ = now;
  out_.clear();
  if (close_after_write_) {
    CloseNow();
    return;
  }
  Continue();
}

void Session::HandleLine(std::string_view line) {
  state_->requests.fetch_add(1, std::memory_order_relaxed);
  // A lookup line decodes to up to 2^20 entries (about 90 MiB): the bound is charged before
  // decoding, so that many connections decoding at once cannot exceed the budget even briefly.
  uint64_t charge = 0;
  if (line.size() > kUnchargedLineBytes) {
    charge = DecodedRequestBound(line);
    const MemoryBudget::Result r = state_->memory.TryCharge(peer_.person, charge);
    if (r != MemoryBudget::Result::kOk) {
      state_->requests_busy.fetch_add(1, std::memory_order_relaxed);
      Answer(proto::MakeErrorResponse(
          "", proto::kErrBusy, MemoryBusyMessage(r, state_->memory, peer_.uid, peer_.person)));
      return;
    }
  }
  proto::DecodeRequestResult decoded = proto::DecodeRequest(line);
  if (!decoded.request) {
    state_->memory.Release(peer_.person, charge);
    Answer(*decoded.error);
    return;
  }
  proto::Request& request = *decoded.request;
  if (auto* lookup = std::get_if<proto::LookupRequest>(&request.body)) {
    state_->addresses.fetch_add(lookup->addrs.size(), std::memory_order_relaxed);
    // Keep charged only what the request really holds.
    const uint64_t held = std::min(charge, DecodedBytes(*lookup));
    state_->memory.Release(peer_.person, charge - held);
    StartStream(std::move(request), held);
    return;
  }
  state_->memory.Release(peer_.person, charge);
  StartAnswer(request);
}

void Session::StartAnswer(const proto::Request& request) {
  Reply reply = Guarded(request, [&] { return state_->handler.Respond(request, peer_); });
  if (reply.producer == nullptr) {
    Answer(reply.response);
    return;
  }
  // What the producer holds of its own is request memory too.
  const uint64_t held = reply.producer->memory_bytes();
  if (held > 0) {
    const MemoryBudget::Result r = state_->memory.TryCharge(peer_.person, held);
    if (r != MemoryBudget::Result::kOk) {
      state_->requests_busy.fetch_add(1, std::memory_order_relaxed);
      Answer(
          proto::MakeErrorResponse(request.id_json, proto::kErrBusy,
                                   MemoryBusyMessage(r, state_->memory, peer_.uid, peer_.person)));
      return;
    }
  }
  pulled_ = std::make_unique<PulledAnswer>(std::move(reply.producer), request.id_json, held);
}

void Session::Pull() {
  switch (pulled_->Pull(&out_, state_->options.output_high_water)) {
    case PulledAnswer::Outcome::kMore:
      return;
    case PulledAnswer::Outcome::kDone:
      break;
    case PulledAnswer::Outcome::kFailed:
      Answer(pulled_->error());
      break;
    case PulledAnswer::Outcome::kCutShort:
      state_->errors.fetch_add(1, std::memory_order_relaxed);
      break;
    case PulledAnswer::Outcome::kBroken:
      state_->errors.fetch_add(1, std::memory_order_relaxed);
      close_after_write_ = true;  // the client sees the line cut, then the end
      break;
  }
  EndPulled();
}

void Session::EndPulled() {
  state_->memory.Release(peer_.person, pulled_->charged());
  pulled_.reset();
}

proto::Response Session::CallHandler(const proto::Request& request) {
  auto handle = [&] { return Reply{state_->handler.Handle(request, peer_), nullptr}; };
  return Guarded(request, handle).response;
}

bool Session::StartStream(proto::Request request, uint64_t charged) {
  auto& lookup = std::get<proto::LookupRequest>(request.body);
  auto stream = std::make_unique<Stream>();
  stream->charged = charged;
  const size_t slice = std::max<size_t>(1, state_->options.answer_slice);
  // A binary answer streams whatever its size: each frame has its own string table.
  stream->binary = lookup.binary;
  stream->connection_strings = lookup.binary && lookup.connection_strings;
  if (lookup.strings && !lookup.binary && lookup.addrs.size() <= slice) {
    // The compact form needs every string before the first result: answered whole, as long as
    // its strings stay small.
    proto::Response response = CallHandler(request);
    const auto* answer = std::get_if<proto::LookupResponse>(&response.body);
    size_t string_bytes = 0;
    if (answer != nullptr) {
      for (const proto::LookupResult& r : answer->results) {
        string_bytes += proto::LookupResultStringBytes(r);
      }
    }
    if (answer == nullptr || string_bytes <= kMaxCompactStringBytes) {
      state_->memory.Release(peer_.person, charged);
      Answer(response);
      return false;
    }
    // Too big to build whole: sent in the plain form, starting from this answer.
    stream->slice = std::move(response);
    stream->have_slice = true;
    stream->next = lookup.addrs.size();
  }
  stream->addrs = std::move(lookup.addrs);
  lookup.addrs.clear();
  lookup.strings = false;
  stream->request = std::move(request);
  stream_ = std::move(stream);
  return true;
}

void Session::Produce() {
  Stream& s = *stream_;
  if (!s.have_slice) {
    if (s.started && s.next == s.addrs.size()) {
      EndAnswer(s);
      EndStream();
      return;
    }
    const size_t n =
        std::min(std::max<size_t>(1, state_->options.answer_slice), s.addrs.size() - s.next);
    auto& lookup = std::get<proto::LookupRequest>(s.request.body);
    lookup.addrs.assign(s.addrs.begin() + static_cast<ptrdiff_t>(s.next),
                        s.addrs.begin() + static_cast<ptrdiff_t>(s.next + n));
    s.slice = CallHandler(s.request);
    if (auto* error = std::get_if<proto::ErrorResponse>(&s.slice.body)) {
      if (!s.started) {  // a request-level error: the whole answer
        Answer(s.slice);
        EndStream();
        return;
      }
      // Part of the answer is out already: this slice's addresses carry the error instead.
      JITSYM_LOG(kWarning, "lookup slice failed: ", error->message);
      proto::LookupResponse failed;
      for (const proto::AddressQuery& q : lookup.addrs) {
        proto::LookupResult& r = failed.results.emplace_back();
        r.addr = q.addr;
        r.error = error->message;
      }
      s.slice.body = std::move(failed);
      Normalize(s.request, &s.slice);  // unparsable entries keep their own errors
    }
    s.next += n;
    s.have_slice = true;
    s.emitted = 0;
  }
  if (!s.started) {
    if (s.binary) {
      std::optional<uint64_t> kept;
      if (s.connection_strings) kept = BeginConnectionStrings();
      proto::EncodeBinaryLookupBegin(s.request.id_json, &out_, kept);
    } else {
      proto::EncodeLookupResponseBegin(s.request.id_json, &out_);
    }
    s.started = true;
  }
  const auto& results = s.results();
  const uint32_t fields = std::get<proto::LookupRequest>(s.request.body).fields;
  const size_t high_water = state_->options.output_high_water;
  if (s.binary) {
    proto::BinaryAnswerEncoder& encoder = s.connection_strings ? connection_strings_ : s.encoder;
    while (s.emitted < results.size() && out_.size() < high_water) {
      s.emitted += encoder.EncodeFrame(std::span(results).subspan(s.emitted), fields,
                                       proto::kBinaryFrameTarget, &out_);
    }
  }
  while (s.emitted < results.size() && out_.size() < high_water) {
    if (s.total_emitted++ > 0) out_.push_back(',');
    proto::EncodeLookupResult(results[s.emitted++], &out_, fields);
  }
  if (s.emitted == results.size()) {
    s.have_slice = false;
    if (s.connection_strings) {
      PinSlice(&s.slice);
    } else {
      s.encoder.ForgetStrings();
    }
    // Drops the slice's keepalive (index view, modules), unless pinned; the handler may keep
    // the storage.
    state_->handler.Recycle(std::exchange(s.slice, proto::Response{}));
    if (s.next == s.addrs.size() && s.started) {
      EndAnswer(s);
      EndStream();
    }
  }
}

uint64_t Session::BeginConnectionStrings() {
  if (connection_strings_.forgot() ||
      connection_strings_.text_bytes() > kMaxConnectionStringBytes) {
    connection_strings_.Reset();
    pinned_slices_.clear();
  }
  return connection_strings_.sent();
}

void Session::PinSlice(proto::Response* slice) {
  if (auto* lookup = std::get_if<proto::LookupResponse>(&slice->body);
      lookup != nullptr && lookup->keepalive != nullptr) {
    pinned_slices_.push_back(std::move(lookup->keepalive));
  }
  if (pinned_slices_.size() > kMaxPinnedSlices) ForgetConnectionStrings();
}

void Session::ForgetConnectionStrings() {
  connection_strings_.ForgetStrings();  // before what they point into may go
  pinned_slices_.clear();
}

void Session::EndAnswer(const Stream& s) {
  if (s.binary) {
    proto::EncodeBinaryLookupEnd(&out_);
  } else {
    proto::EncodeLookupResponseEnd(&out_);
  }
}

void Session::EndStream() {
  state_->memory.Release(peer_.person, stream_->charged);
  stream_.reset();
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
