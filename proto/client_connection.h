// A blocking connection to jitsymd, for the CLI, tests and benchmarks.
//
// Send() and ReadLine() may be called from two different threads at once (one writer, one
// reader): that is how `jitsym lookup` keeps several batches in flight. Anything else needs
// external locking. Writes use MSG_NOSIGNAL, so a daemon that goes away is an error, not SIGPIPE.
#ifndef JITSYM_PROTO_CLIENT_CONNECTION_H_
#define JITSYM_PROTO_CLIENT_CONNECTION_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/util/result.h"
#include "proto/protocol.h"

namespace jitsym::proto {

class ClientConnection {
 public:
  // Response lines longer than this are treated as a broken connection.
  static constexpr size_t kDefaultMaxLineBytes = size_t{1} << 30;

  // Connects to the daemon's socket. On failure returns nullptr and sets *error to a message
  // that says what to do, e.g. "cannot connect to jitsymd at /run/jitsymd/jitsymd.sock: No such
  // file or directory (is jitsymd running? start it or set --socket/JITSYM_SOCKET)".
  // With timeout_ms > 0, connecting, each send and each wait for response bytes fail with a
  // message saying that jitsymd did not answer in time (a stopped or overloaded daemon) once
  // they wait that long.
  static std::unique_ptr<ClientConnection> Connect(const std::string& path, std::string* error,
                                                   int timeout_ms = 0);
  // Connects to the first of `paths` where a daemon listens (the client's default search,
  // proto/daemon_socket.h). A path where nobody listens (NobodyListens) moves on to the next;
  // any other failure ends the search there. The error names every path tried and why each
  // failed, with what to do about the last: "cannot connect to jitsymd at
  // /tmp/jitsymd-1000.sock: No such file or directory, nor at /run/jitsymd/jitsymd.sock:
  // Permission denied (the socket admits members of the group jitsym: ...)". path() says
  // which one answered.
  static Result<std::unique_ptr<ClientConnection>> ConnectFirst(std::span<const std::string> paths,
                                                                int timeout_ms = 0);

  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Writes all of `data` (one or more encoded request lines).
  bool Send(std::string_view data, std::string* error);
  bool SendRequest(const Request& request, std::string* error);

  // Reads the next line, without its '\n' (and '\r'). The view stays valid until the next
  // ReadLine. Returns false at end of stream (*error says "jitsymd closed the connection") or
  // on error.
  bool ReadLine(std::string_view* line, std::string* error);
  // Reads and decodes the next response: a line, and for a binary lookup answer the frames
  // that follow its header line.
  bool ReadResponse(Response* response, std::string* error);

  // One request, one response. Must not be mixed with pipelined use on another thread. When the
  // daemon refused the connection (a "busy" line, then close) before the request could be sent,
  // that error response is returned, not the failure to send.
  std::optional<Response> Call(const Request& request, std::string* error);

  // Reads the next line in pieces, whatever its length: *part is the next bytes of it (valid
  // until the next read), *line_end says the line ends there (its newline not included).
  bool ReadLinePart(std::string_view* part, bool* line_end, std::string* error);
  // As Call, for an answer whose array `member` ("symbols", "processes") may be larger than the
  // client should hold: each element's text is handed to `element` as it arrives, and the
  // response returned is the rest of the answer (that array empty). A failure of `element`
  // ends the call with its message in *error.
  std::optional<Response> CallArrayAnswer(
      const Request& request, std::string_view member,
      const std::function<Status(std::string_view element)>& element, std::string* error);
  // The reading half of CallArrayAnswer, for a request already sent.
  std::optional<Response> ReadArrayAnswer(
      std::string_view member, const std::function<Status(std::string_view element)>& element,
      std::string* error);

  // Half-closes the write side: the daemon sees end of input after the last request.
  void ShutdownWrite();
  // Shuts both directions down, waking a thread blocked in Send or ReadLine; the fd stays open
  // until destruction.
  void Shutdown();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  void set_max_line_bytes(size_t n) { max_line_bytes_ = n; }

 private:
  ClientConnection(int fd, std::string path, int timeout_ms);
  // "jitsymd at PATH did not answer within 30 s ...".
  std::string TimeoutText(std::string_view what) const;
  // Appends the next n bytes of the stream to *out.
  bool ReadBytes(size_t n, std::string* out, std::string* error);
  // The frames of a binary lookup answer (after its header line), decoded into *lookup.
  bool ReadBinaryFrames(LookupResponse* lookup, std::string* error);

  int fd_;
  std::string path_;
  int timeout_ms_ = 0;
  size_t max_line_bytes_ = kDefaultMaxLineBytes;
  std::vector<char> buffer_;
  size_t begin_ = 0;  // unconsumed data is buffer_[begin_, end_)
  size_t end_ = 0;
  size_t scanned_ = 0;  // buffer_[begin_, scanned_) is known to hold no '\n'
  std::string send_buffer_;
  // The strings of binary answers that keep them across the connection ("strings_kept").
  std::shared_ptr<ConnectionStrings> strings_;
};

}  // namespace jitsym::proto

#endif  // JITSYM_PROTO_CLIENT_CONNECTION_H_
