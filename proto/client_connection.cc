#include "proto/client_connection.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "proto/array_answer_reader.h"
#include "proto/daemon_socket.h"

namespace jitsym::proto {
namespace {

constexpr size_t kReadChunk = 256 * 1024;

std::string ErrnoText(int err) { return std::strerror(err); }

// Opens a socket and connects it to `path`. Returns the descriptor, or -1 with *err set (EAGAIN:
// not accepted within the timeout) or *problem saying what is wrong with the path itself.
int Dial(const std::string& path, int timeout_ms, int* err, std::string* problem) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    *problem = path.empty() ? "socket path is empty"
                            : "socket path is too long (at most " +
                                  std::to_string(sizeof(addr.sun_path) - 1) + " bytes)";
    return -1;
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    *problem = "cannot create a socket: " + ErrnoText(errno);
    return -1;
  }
  if (timeout_ms > 0) {
    // For a Unix socket the send timeout also bounds connect (a full backlog).
    timeval tv{};
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    *err = errno;
    ::close(fd);
    return -1;
  }
  return fd;
}

// What to do about the failure that ended the search, at `path`.
std::string Hint(int err, const std::string& path) {
  switch (err) {
    case ENOENT:
    case ECONNREFUSED:
      return " (is jitsymd running? start it or set --socket/JITSYM_SOCKET)";
    case EACCES:
    case EPERM:
      return PermissionHint(ObserveSocketPermission(path));
    case ENOTDIR:
    case ENOTSOCK:
      return " (that path is not a socket; set --socket/JITSYM_SOCKET)";
    default:
      return "";
  }
}

}  // namespace

Result<std::unique_ptr<ClientConnection>> ClientConnection::ConnectFirst(
    std::span<const std::string> paths, int timeout_ms) {
  if (paths.empty()) return MakeError(ErrorKind::kUsage, "no socket to connect to jitsymd at");
  std::string tried;  // "P1: why, nor at P2: why"
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    int err = 0;
    std::string problem;
    const int fd = Dial(path, timeout_ms, &err, &problem);
    if (fd >= 0) {
      return std::unique_ptr<ClientConnection>(new ClientConnection(fd, path, timeout_ms));
    }
    if (err == EAGAIN || err == EWOULDBLOCK) {
      return MakeError(ErrorKind::kIo,
                       ClientConnection(-1, path, timeout_ms).TimeoutText("accept the connection"));
    }
    if (err != 0 && !problem.empty()) return MakeError(ErrorKind::kIo, problem);  // no socket()
    if (!tried.empty()) tried += ", nor at ";
    if (!problem.empty()) {
      // Nobody can listen at a path that does not fit a socket address either.
      tried += "'" + path + "': " + problem;
      if (i + 1 < paths.size()) continue;
      return MakeError(ErrorKind::kUsage, "cannot connect to jitsymd at " + tried +
                                              " (set --socket or JITSYM_SOCKET)");
    }
    tried += path + ": " + ErrnoText(err);
    if (NobodyListens(err) && i + 1 < paths.size()) continue;
    return MakeError(ErrorKind::kIo, "cannot connect to jitsymd at " + tried + Hint(err, path));
  }
  return MakeError(ErrorKind::kIo, "cannot connect to jitsymd");  // not reached
}

std::unique_ptr<ClientConnection> ClientConnection::Connect(const std::string& path,
                                                            std::string* error, int timeout_ms) {
  Result<std::unique_ptr<ClientConnection>> r = ConnectFirst({&path, 1}, timeout_ms);
  if (!r) {
    *error = r.error().message;
    return nullptr;
  }
  return std::move(*r);
}

ClientConnection::ClientConnection(int fd, std::string path, int timeout_ms)
    : fd_(fd), path_(std::move(path)), timeout_ms_(timeout_ms), buffer_(kReadChunk) {}

std::string ClientConnection::TimeoutText(std::string_view what) const {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", timeout_ms_ / 1000.0);
  return "jitsymd at " + path_ + " did not " + std::string(what) + " within " + seconds +
         " s (is it stopped or overloaded? --timeout sets the limit)";
}

ClientConnection::~ClientConnection() {
  if (fd_ >= 0) ::close(fd_);
}

bool ClientConnection::Send(std::string_view data, std::string* error) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *error = TimeoutText("take the request");
        return false;
      }
      *error = "cannot send to jitsymd at " + path_ + ": " + ErrnoText(errno);
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool ClientConnection::SendRequest(const Request& request, std::string* error) {
  send_buffer_.clear();
  EncodeRequest(request, &send_buffer_);
  return Send(send_buffer_, error);
}

bool ClientConnection::ReadLine(std::string_view* line, std::string* error) {
  for (;;) {
    if (const void* nl = std::memchr(buffer_.data() + scanned_, '\n', end_ - scanned_)) {
      const size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - buffer_.data());
      size_t len = pos - begin_;
      if (len > 0 && buffer_[pos - 1] == '\r') --len;
      *line = std::string_view(buffer_.data() + begin_, len);
      begin_ = scanned_ = pos + 1;
      return true;
    }
    scanned_ = end_;
    if (end_ - begin_ > max_line_bytes_) {
      *error = "response from jitsymd is longer than " + std::to_string(max_line_bytes_) + " bytes";
      return false;
    }
    // Make room: drop consumed bytes, then grow.
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      scanned_ -= begin_;
      begin_ = 0;
    }
    if (buffer_.size() - end_ < kReadChunk)
      buffer_.resize(std::max(buffer_.size() * 2, end_ + kReadChunk));
    const ssize_t n = ::recv(fd_, buffer_.data() + end_, buffer_.size() - end_, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *error = TimeoutText("answer");
        return false;
      }
      *error = "cannot read from jitsymd at " + path_ + ": " + ErrnoText(errno);
      return false;
    }
    if (n == 0) {
      *error = end_ == begin_ ? "jitsymd closed the connection"
                              : "jitsymd closed the connection in the middle of a response";
      return false;
    }
    end_ += static_cast<size_t>(n);
  }
}

bool ClientConnection::ReadBytes(size_t n, std::string* out, std::string* error) {
  const size_t buffered = std::min(n, end_ - begin_);
  out->append(buffer_.data() + begin_, buffered);
  begin_ += buffered;
  scanned_ = std::max(scanned_, begin_);
  n -= buffered;
  if (n == 0) return true;
  // The rest straight into *out: a frame is up to a megabyte, no need to pass it through
  // buffer_.
  const size_t at = out->size();
  out->resize(at + n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd_, out->data() + at + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      out->resize(at + got);
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *error = TimeoutText("answer");
        return false;
      }
      *error = "cannot read from jitsymd at " + path_ + ": " + ErrnoText(errno);
      return false;
    }
    if (r == 0) {
      out->resize(at + got);
      *error = "jitsymd closed the connection in the middle of a response";
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

bool ClientConnection::ReadBinaryFrames(LookupResponse* lookup, std::string* error) {
  // The frames go into the response's own text, which the results' strings then point into.
  if (lookup->text == nullptr || lookup->text.use_count() != 1) {
    lookup->text = std::make_shared<std::string>();
  }
  std::string& frames = *lookup->text;
  frames.clear();
  for (;;) {
    const size_t at = frames.size();
    if (!ReadBytes(kBinaryFramePrefixBytes, &frames, error)) return false;
    const uint32_t length = BinaryFrameLength(frames.data() + at);
    if (length == 0) break;
    // Checked before anything is read: the decoder checks again, with the offset.
    if (length > kMaxBinaryFrameBytes || frames.size() + length > max_line_bytes_) {
      *error = "malformed response from jitsymd: binary answer: offset " + std::to_string(at) +
               ": a frame of " + std::to_string(length) + " bytes is over the limit";
      return false;
    }
    if (!ReadBytes(length, &frames, error)) return false;
  }
  ConnectionStrings* table = nullptr;
  if (lookup->strings_kept) {
    // The connection's table: all of it kept, or a new one (the old one lives on in the
    // responses that point into it).
    const uint64_t have = strings_ ? strings_->size() : 0;
    if (*lookup->strings_kept == 0) {
      strings_ = std::make_shared<ConnectionStrings>();
    } else if (*lookup->strings_kept != have) {
      *error = "malformed response from jitsymd: binary answer: keeps " +
               std::to_string(*lookup->strings_kept) + " strings of a table of " +
               std::to_string(have);
      return false;
    }
    table = strings_.get();
    lookup->keepalive = strings_;
  }
  if (Status st = DecodeBinaryLookupFrames(frames, lookup, table); !st.ok()) {
    *error = "malformed response from jitsymd: " + st.error().message;
    return false;
  }
  return true;
}

bool ClientConnection::ReadResponse(Response* response, std::string* error) {
  std::string_view line;
  if (!ReadLine(&line, error)) return false;
  if (Status st = DecodeResponseInto(line, response); !st.ok()) {
    *error = "malformed response from jitsymd: " + st.error().message;
    return false;
  }
  if (auto* lookup = std::get_if<LookupResponse>(&response->body);
      lookup != nullptr && lookup->binary) {
    return ReadBinaryFrames(lookup, error);
  }
  return true;
}

std::optional<Response> ClientConnection::Call(const Request& request, std::string* error) {
  if (!SendRequest(request, error)) {
    // A refused connection: the daemon wrote why, then closed, before the request went out.
    Response refusal;
    std::string ignored;
    if (ReadResponse(&refusal, &ignored) && std::holds_alternative<ErrorResponse>(refusal.body)) {
      return refusal;
    }
    return std::nullopt;
  }
  Response response;
  if (!ReadResponse(&response, error)) return std::nullopt;
  return response;
}

bool ClientConnection::ReadLinePart(std::string_view* part, bool* line_end, std::string* error) {
  for (;;) {
    if (begin_ < end_) {
      const char* at = buffer_.data() + begin_;
      if (const void* nl = std::memchr(at, '\n', end_ - begin_)) {
        const size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - buffer_.data());
        *part = std::string_view(at, pos - begin_);
        *line_end = true;
        begin_ = scanned_ = pos + 1;
        return true;
      }
      *part = std::string_view(at, end_ - begin_);
      *line_end = false;
      begin_ = scanned_ = end_;
      return true;
    }
    begin_ = end_ = scanned_ = 0;  // all of it handed over: read into the start again
    const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *error = TimeoutText("answer");
        return false;
      }
      *error = "cannot read from jitsymd at " + path_ + ": " + ErrnoText(errno);
      return false;
    }
    if (n == 0) {
      *error = "jitsymd closed the connection in the middle of a response";
      return false;
    }
    end_ = static_cast<size_t>(n);
  }
}

std::optional<Response> ClientConnection::CallArrayAnswer(
    const Request& request, std::string_view member,
    const std::function<Status(std::string_view element)>& element, std::string* error) {
  if (!SendRequest(request, error)) {
    Response refusal;  // as in Call: a refused connection says why before it closes
    std::string ignored;
    if (ReadResponse(&refusal, &ignored) && std::holds_alternative<ErrorResponse>(refusal.body)) {
      return refusal;
    }
    return std::nullopt;
  }
  return ReadArrayAnswer(member, element, error);
}

std::optional<Response> ClientConnection::ReadArrayAnswer(
    std::string_view member, const std::function<Status(std::string_view element)>& element,
    std::string* error) {
  ArrayAnswerReader reader{std::string(member)};
  std::string element_error;
  // A failure of the caller's is told as it is, not as a malformed answer.
  auto hand_over = [&](std::string_view text) {
    Status st = element(text);
    if (!st.ok()) element_error = st.error().message;
    return st;
  };
  bool line_end = false;
  while (!line_end) {
    std::string_view part;
    if (!ReadLinePart(&part, &line_end, error)) return std::nullopt;
    if (line_end && !part.empty() && part.back() == '\r') part.remove_suffix(1);
    if (Status st = reader.Feed(part, hand_over); !st.ok()) {
      *error = !element_error.empty()
                   ? element_error
                   : "malformed response from jitsymd: offset " +
                         std::to_string(st.error().offset) + ": " + st.error().message;
      return std::nullopt;
    }
  }
  Result<Response> rest = reader.Finish();
  if (!rest) {
    *error = "malformed response from jitsymd: " + rest.error().message;
    return std::nullopt;
  }
  return std::move(*rest);
}

void ClientConnection::ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }

void ClientConnection::Shutdown() { ::shutdown(fd_, SHUT_RDWR); }

}  // namespace jitsym::proto
