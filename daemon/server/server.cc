#include "daemon/server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstring>
#include <system_error>
#include <vector>

#include "daemon/server/admission.h"
#include "daemon/server/session.h"
#include "daemon/util/log.h"

namespace jitsym::server {
namespace {

using boost::asio::local::stream_protocol;

[[noreturn]] void ThrowErrno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// mkdir -p for the socket's directory; components that exist are left as they are.
void CreateParentDirectories(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return;
  const std::string dir = path.substr(0, slash);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      ThrowErrno(errno, "cannot create socket directory " + prefix);
    }
  }
}

// A socket file left behind by a daemon that died is removed; one that still answers means
// another jitsymd is running, and anything that is not a socket is not ours to delete.
void RemoveStaleSocket(const std::string& path, const sockaddr_un& addr) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    ThrowErrno(errno, "cannot inspect " + path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    ThrowErrno(EEXIST, path + " exists and is not a socket; refusing to replace it");
  }
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (probe < 0) ThrowErrno(errno, "cannot create a socket");
  const int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = rc == 0 ? 0 : errno;
  ::close(probe);
  if (rc == 0 || err == EAGAIN || err == EINPROGRESS) {
    // EAGAIN: its backlog is full, so something is listening.
    ThrowErrno(EADDRINUSE, "another jitsymd is already serving " + path);
  }
  if (err != ECONNREFUSED) ThrowErrno(err, "cannot probe existing socket " + path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    ThrowErrno(errno, "cannot remove stale socket " + path);
  }
}

bool IsTransientAcceptError(const boost::system::error_code& ec) {
  return ec == boost::asio::error::connection_aborted || ec.value() == EINTR ||
         ec.value() == EPROTO || ec.value() == ECONNABORTED;
}

}  // namespace

class Server::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(boost::asio::io_context& io, RequestHandler& handler, ServerOptions options)
      : io_(io),
        state_(std::make_shared<ServerState>(handler, std::move(options))),
        strand_(boost::asio::make_strand(io)),
        acceptor_(strand_),
        retry_timer_(strand_) {}

  void Listen(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
      ThrowErrno(ENAMETOOLONG, "socket path '" + path + "' is empty or longer than " +
                                   std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
    }
    std::memcpy(addr.sun_path, path.data(), path.size());
    CreateParentDirectories(path);
    RemoveStaleSocket(path, addr);

    boost::system::error_code ec;
    acceptor_.open(stream_protocol(), ec);
    if (ec) ThrowErrno(ec.value(), "cannot create a socket for " + path);
    acceptor_.bind(stream_protocol::endpoint(path), ec);
    if (ec) {
      acceptor_.close();
      ThrowErrno(ec.value(), "cannot bind " + path);
    }
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      bound_dev_ = st.st_dev;
      bound_ino_ = st.st_ino;
    }
    path_ = path;
    if (::chmod(path.c_str(), 0666) != 0) {
      const int err = errno;
      Unlink();
      acceptor_.close();
      ThrowErrno(err, "cannot chmod " + path);
    }
    acceptor_.listen(SOMAXCONN, ec);
    if (ec) {
      Unlink();
      acceptor_.close();
      ThrowErrno(ec.value(), "cannot listen on " + path);
    }
    StartAccepting();
  }

  void Adopt(int fd) {
    boost::system::error_code ec;
    acceptor_.assign(stream_protocol(), fd, ec);
    if (ec) ThrowErrno(ec.value(), "cannot use the listening socket passed in");
    StartAccepting();
  }

  void Stop() {
    if (state_->stopped.exchange(true)) return;
    boost::asio::post(strand_, [self = shared_from_this()] {
      boost::system::error_code ignored;
      self->retry_timer_.cancel();
      self->acceptor_.close(ignored);
    });
    std::vector<std::shared_ptr<Session>> sessions;
    {
      std::lock_guard lock(state_->mutex);
      for (auto& [raw, weak] : state_->sessions) {
        if (auto session = weak.lock()) sessions.push_back(std::move(session));
      }
    }
    for (auto& session : sessions) session->Close();
    Unlink();
  }

  Counters counters() const {
    const ServerState& s = *state_;
    Counters c;
    c.connections_accepted = s.connections_accepted.load(std::memory_order_relaxed);
    c.connections_open = s.connections_open.load(std::memory_order_relaxed);
    c.connections_rejected = s.connections_rejected.load(std::memory_order_relaxed);
    c.connections_timed_out = s.connections_timed_out.load(std::memory_order_relaxed);
    c.requests_busy = s.requests_busy.load(std::memory_order_relaxed);
    c.requests = s.requests.load(std::memory_order_relaxed);
    c.addresses = s.addresses.load(std::memory_order_relaxed);
    c.errors = s.errors.load(std::memory_order_relaxed);
    c.bytes_received = s.bytes_received.load(std::memory_order_relaxed);
    c.bytes_sent = s.bytes_sent.load(std::memory_order_relaxed);
    return c;
  }

  const std::string& path() const { return path_; }

 private:
  void StartAccepting() {
    boost::asio::post(strand_, [self = shared_from_this()] { self->Accept(); });
  }

  void Accept() {
    if (state_->stopped) return;
    // Each connection gets a strand of its own.
    acceptor_.async_accept(
        boost::asio::any_io_executor(boost::asio::make_strand(io_)),
        boost::asio::bind_executor(strand_,
                                   [self = shared_from_this()](const boost::system::error_code& ec,
                                                               stream_protocol::socket socket) {
                                     self->OnAccept(ec, std::move(socket));
                                   }));
  }

  void OnAccept(const boost::system::error_code& ec, stream_protocol::socket socket) {
    if (state_->stopped || ec == boost::asio::error::operation_aborted) return;
    if (ec) {
      if (IsTransientAcceptError(ec)) {
        Accept();
        return;
      }
      // Out of descriptors or memory: wait a little instead of spinning on the error, and say
      // so once per episode (every 100 ms would flood the journal while it lasts).
      if (!accept_failing_) {
        JITSYM_LOG(kWarning, "accept on ", path_, " failed: ", ec.message(),
                   "; retrying every 100 ms");
        accept_failing_ = true;
      }
      retry_timer_.expires_after(std::chrono::milliseconds(100));
      retry_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (!e) self->Accept();
      });
      return;
    }
    if (accept_failing_) {
      JITSYM_LOG(kInfo, "accepting on ", path_, " again");
      accept_failing_ = false;
    }
    state_->connections_accepted.fetch_add(1, std::memory_order_relaxed);
    const ServerOptions& o = state_->options;
    std::optional<PeerCredentials> peer =
        o.peer_credentials_for_testing ? o.peer_credentials_for_testing(socket.native_handle())
                                       : ReadPeerCredentials(socket.native_handle());
    if (!peer) {
      // Never guess: a peer taken for root could read every process's symbols.
      JITSYM_LOG(kWarning, "refused a connection: SO_PEERCRED failed: ", std::strerror(errno));
      Reject(socket, proto::kErrPermission,
             "jitsymd cannot tell which user is connecting (SO_PEERCRED failed); refused");
    } else {
      peer->person = o.person_of ? o.person_of(peer->uid) : peer->uid;
      const ConnectionLimits limits{o.max_connections, o.max_user_connections,
                                    o.privileged_connections};
      std::shared_ptr<Session> session;
      Admission admission;
      {
        std::lock_guard lock(state_->mutex);
        auto it = state_->connections_by_person.find(peer->person);
        admission = AdmitConnection(limits, IsPrivilegedUid(peer->uid),
                                    state_->connections_open.load(std::memory_order_relaxed),
                                    it == state_->connections_by_person.end() ? 0 : it->second);
        if (admission == Admission::kAdmit) {
          ++state_->connections_by_person[peer->person];
          state_->connections_open.fetch_add(1, std::memory_order_relaxed);
          session = std::make_shared<Session>(state_, std::move(socket), std::move(*peer));
          state_->sessions.emplace(session.get(), session);
        }
      }
      if (session) {
        session->Start();
      } else {
        Reject(socket, proto::kErrBusy,
               ConnectionBusyMessage(admission, limits, peer->uid, peer->person));
      }
    }
    Accept();
  }

  // Best effort: one short error line without blocking, then close. The write side is shut
  // down first so the client reads the line, then end of stream.
  void Reject(stream_protocol::socket& socket, std::string_view code, std::string message) {
    state_->connections_rejected.fetch_add(1, std::memory_order_relaxed);
    state_->errors.fetch_add(1, std::memory_order_relaxed);
    std::string line;
    proto::EncodeResponse(proto::MakeErrorResponse("", code, std::move(message)), &line);
    [[maybe_unused]] ssize_t n =
        ::send(socket.native_handle(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    boost::system::error_code ignored;
    socket.shutdown(stream_protocol::socket::shutdown_send, ignored);
    socket.close(ignored);
  }

  // Removes the socket file, unless someone else has replaced it since.
  void Unlink() {
    if (path_.empty() || bound_ino_ == 0) return;
    struct stat st;
    if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == bound_dev_ && st.st_ino == bound_ino_) {
      ::unlink(path_.c_str());
    }
    bound_ino_ = 0;
  }

  boost::asio::io_context& io_;
  std::shared_ptr<ServerState> state_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  stream_protocol::acceptor acceptor_;
  bool accept_failing_ = false;  // on the strand
  boost::asio::steady_timer retry_timer_;
  std::string path_;
  dev_t bound_dev_ = 0;
  ino_t bound_ino_ = 0;
};

Server::Server(boost::asio::io_context& io, RequestHandler& handler, ServerOptions options)
    : impl_(std::make_shared<Impl>(io, handler, options)) {}

Server::~Server() { impl_->Stop(); }

void Server::Listen(const std::string& path) { impl_->Listen(path); }
void Server::Adopt(int listening_fd) { impl_->Adopt(listening_fd); }
void Server::Stop() { impl_->Stop(); }
Counters Server::counters() const { return impl_->counters(); }
const std::string& Server::path() const { return impl_->path(); }

}  // namespace jitsym::server
