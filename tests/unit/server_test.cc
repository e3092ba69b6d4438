// The socket server, in-process: a fake handler behind a real Unix socket, driven through the
// protocol's client connection.
#include "daemon/server/server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "proto/client_connection.h"

namespace jitsym::server {
namespace {

using proto::ClientConnection;

// Answers lookups with "fn_<hex>" for every non-zero address, throws for "processes".
class FakeHandler : public RequestHandler {
 public:
  proto::Response Handle(const proto::Request& request, const PeerCredentials& peer) override {
    last_peer_pid = peer.pid;
    last_peer_uid = peer.uid;
    if (const auto* lookup = std::get_if<proto::LookupRequest>(&request.body)) {
      proto::LookupResponse answer;
      for (const proto::AddressQuery& q : lookup->addrs) {
        proto::LookupResult& r = answer.results.emplace_back();
        r.addr = q.addr;
        if (q.addr != 0 && q.error.empty()) {
          r.found = true;
          r.name = "fn_" + proto::FormatAddress(q.addr);
          r.start = q.addr;
          r.size = 1;
          r.origin = "jitdump";
        }
      }
      return {"", std::move(answer)};
    }
    if (std::holds_alternative<proto::ProcessesRequest>(request.body)) {
      throw std::runtime_error("boom");
    }
    if (std::holds_alternative<proto::VersionRequest>(request.body)) {
      return {"", proto::VersionResponse{"test", 1}};
    }
    return {"", proto::PingResponse{}};
  }

  std::atomic<int> last_peer_pid{0};
  std::atomic<unsigned> last_peer_uid{0};
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/jitsym-server-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    path_ = dir_ + "/run/sub/jitsymd.sock";  // parent directories are created by Listen
  }

  void TearDown() override {
    StopServer();
    std::filesystem::remove_all(dir_);
  }

  void StartServer(ServerOptions options = {}, int threads = 4) {
    server_ = std::make_unique<Server>(io_, handler_, options);
    server_->Listen(path_);
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  void StopServer() {
    if (server_) server_->Stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    server_.reset();
  }

  std::unique_ptr<ClientConnection> Connect() {
    std::string error;
    auto connection = ClientConnection::Connect(path_, &error);
    EXPECT_TRUE(connection) << error;
    return connection;
  }

  // Waits up to 5 s for a condition that the server's threads make true.
  template <typename F>
  bool Eventually(F&& condition) {
    for (int i = 0; i < 500; ++i) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return condition();
  }

  std::string dir_;
  std::string path_;
  boost::asio::io_context io_;
  FakeHandler handler_;
  std::unique_ptr<Server> server_;
  std::vector<std::thread> threads_;
};

proto::Request Lookup(std::vector<uint64_t> addrs, std::string id = "") {
  proto::LookupRequest lookup;
  lookup.pid = 42;
  for (uint64_t a : addrs) lookup.addrs.push_back({a, std::nullopt, "", ""});
  return {std::move(id), std::move(lookup)};
}

std::string ErrorCode(const proto::Response& response) {
  const auto* error = std::get_if<proto::ErrorResponse>(&response.body);
  return error ? error->code : "";
}

TEST_F(ServerTest, PingAndPeerCredentials) {
  StartServer();
  auto c = Connect();
  std::string error;
  auto response = c->Call({"17", proto::PingRequest{}}, &error);
  ASSERT_TRUE(response) << error;
  EXPECT_TRUE(std::holds_alternative<proto::PingResponse>(response->body));
  EXPECT_EQ(response->id_json, "17");
  EXPECT_EQ(handler_.last_peer_pid, getpid());
  EXPECT_EQ(handler_.last_peer_uid, getuid());
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);
}

TEST_F(ServerTest, LookupAnswersEveryAddressInOrder) {
  StartServer();
  auto c = Connect();
  std::string error;
  auto response = c->Call(Lookup({0x1000, 0, 0x2000}), &error);
  ASSERT_TRUE(response) << error;
  const auto& results = std::get<proto::LookupResponse>(response->body).results;
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].name, "fn_0x1000");
  EXPECT_FALSE(results[1].found);
  EXPECT_EQ(results[2].name, "fn_0x2000");
  EXPECT_EQ(server_->counters().addresses, 3u);
}

TEST_F(ServerTest, UnparsableAddressesComeBackAsPerAddressErrors) {
  StartServer();
  auto c = Connect();
  std::string error;
  // The fake handler ignores AddressQuery::error; the server still reports it with the input.
  ASSERT_TRUE(c->Send(R"({"op":"lookup","pid":1,"addrs":["0x10","bogus",{"addr":"0x20"}]})"
                      "\n",
                      &error));
  proto::Response response;
  ASSERT_TRUE(c->ReadResponse(&response, &error)) << error;
  const auto& results = std::get<proto::LookupResponse>(response.body).results;
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].found);
  EXPECT_FALSE(results[1].found);
  EXPECT_EQ(results[1].error, "invalid address");
  EXPECT_EQ(results[1].raw, "bogus");
  EXPECT_EQ(results[2].name, "fn_0x20");
}

TEST_F(ServerTest, MalformedRequestGetsAnErrorAndTheConnectionStaysUsable) {
  StartServer();
  auto c = Connect();
  std::string error;
  for (const char* bad :
       {"garbage\n", "[1,2]\n", "{\"op\":\"nope\",\"id\":3}\n", "{\"v\":2,\"op\":\"ping\"}\n"}) {
    ASSERT_TRUE(c->Send(bad, &error));
    proto::Response response;
    ASSERT_TRUE(c->ReadResponse(&response, &error)) << error;
    EXPECT_FALSE(ErrorCode(response).empty()) << bad;
  }
  auto response = c->Call({"", proto::PingRequest{}}, &error);
  ASSERT_TRUE(response) << error;
  EXPECT_TRUE(std::holds_alternative<proto::PingResponse>(response->body));
  EXPECT_EQ(server_->counters().errors, 4u);
}

TEST_F(ServerTest, HandlerExceptionBecomesInternalError) {
  StartServer();
  auto c = Connect();
  std::string error;
  auto response = c->Call({"\"p\"", proto::ProcessesRequest{}}, &error);
  ASSERT_TRUE(response) << error;
  EXPECT_EQ(ErrorCode(*response), proto::kErrInternal);
  EXPECT_EQ(response->id_json, "\"p\"");
  EXPECT_TRUE(c->Call({"", proto::PingRequest{}}, &error));
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  auto c = Connect();
  std::string batch;
  constexpr int kRequests = 300;
  for (int i = 0; i < kRequests; ++i) {
    switch (i % 4) {
      case 0:
        proto::EncodeRequest(Lookup({static_cast<uint64_t>(i) + 1}, std::to_string(i)), &batch);
        break;
      case 1:
        proto::EncodeRequest({std::to_string(i), proto::PingRequest{}}, &batch);
        break;
      case 2:
        batch += "{\"id\":" + std::to_string(i) + ",\"op\":\"lookup\"}\r\n";  // bad, and CRLF
        break;
      default:
        batch += "\n  \n";  // blank lines are not requests
        proto::EncodeRequest({std::to_string(i), proto::VersionRequest{}}, &batch);
    }
  }
  std::string error;
  ASSERT_TRUE(c->Send(batch, &error));
  proto::Response response;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(c->ReadResponse(&response, &error)) << i << ": " << error;
    EXPECT_EQ(response.id_json, std::to_string(i));
    if (i % 4 == 0) {
      const auto& results = std::get<proto::LookupResponse>(response.body).results;
      ASSERT_EQ(results.size(), 1u);
      EXPECT_EQ(results[0].addr, static_cast<uint64_t>(i) + 1);
    } else if (i % 4 == 2) {
      EXPECT_EQ(ErrorCode(response), proto::kErrBadRequest);
    }
  }
  EXPECT_EQ(server_->counters().requests, static_cast<uint64_t>(kRequests));
}

TEST_F(ServerTest, OversizeLineIsRefusedAndTheConnectionClosed) {
  ServerOptions options;
  options.max_request_bytes = 1024;
  StartServer(options);
  for (const bool with_newline : {false, true}) {
    auto c = Connect();
    std::string error;
    std::string line(4096, 'x');
    if (with_newline) line += "\n";
    ASSERT_TRUE(c->Send(line, &error));
    proto::Response response;
    ASSERT_TRUE(c->ReadResponse(&response, &error)) << error;
    EXPECT_EQ(ErrorCode(response), proto::kErrTooLarge);
    std::string_view rest;
    EXPECT_FALSE(c->ReadLine(&rest, &error));  // closed
  }
  // A request just under the limit is fine.
  auto c = Connect();
  std::string error;
  EXPECT_TRUE(c->Call(Lookup({1, 2, 3}), &error)) << error;
}

TEST_F(ServerTest, LongLinesOnManyConnectionsShareOneBudget) {
  ServerOptions options;
  options.max_request_bytes = 4 << 20;
  options.max_buffered_request_bytes = 3 << 20;  // not enough for two 2 MiB buffers
  StartServer(options);
  // Two connections send most of a long line each, without its end.
  auto a = Connect();
  auto b = Connect();
  std::string error;
  const std::string part((1 << 20) - 100, 'x');  // a 2 MiB buffer each
  ASSERT_TRUE(a->Send(part, &error)) << error;
  ASSERT_TRUE(Eventually([&] { return server_->counters().bytes_received >= part.size(); }));
  // The second one does not fit beside the first: "busy", then closed.
  b->Send(part, &error);  // may fail once the server has closed it
  proto::Response response;
  ASSERT_TRUE(b->ReadResponse(&response, &error)) << error;
  EXPECT_EQ(ErrorCode(response), proto::kErrBusy);
  std::string_view rest;
  EXPECT_FALSE(b->ReadLine(&rest, &error));
  // The first finishes its line (a bad request, but answered) and the budget is released.
  ASSERT_TRUE(a->Send("\n", &error)) << error;
  ASSERT_TRUE(a->ReadResponse(&response, &error)) << error;
  EXPECT_EQ(ErrorCode(response), proto::kErrBadRequest);
  auto c = Connect();
  ASSERT_TRUE(c->Send(part, &error)) << error;
  ASSERT_TRUE(c->Send("\n", &error)) << error;
  ASSERT_TRUE(c->ReadResponse(&response, &error)) << error;
  EXPECT_EQ(ErrorCode(response), proto::kErrBadRequest);
}

TEST_F(ServerTest, ClientVanishingMidStreamOnlyEndsItsSession) {
  StartServer();
  std::vector<uint64_t> many(100000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = i + 1;
  std::string big;
  proto::EncodeRequest(Lookup(many), &big);
  for (int round = 0; round < 5; ++round) {
    auto c = Connect();
    std::string error;
    ASSERT_TRUE(c->Send(big, &error));  // ~2 MB in; the answer is several MB
    // Read a little of the answer, then hang up without reading the rest.
    char buf[100];
    ASSERT_GT(recv(c->fd(), buf, sizeof(buf), 0), 0);
  }
  ASSERT_TRUE(Eventually([&] { return server_->counters().connections_open == 0; }));
  auto c = Connect();
  std::string error;
  EXPECT_TRUE(c->Call({"", proto::PingRequest{}}, &error)) << error;
}

TEST_F(ServerTest, SlowReaderDoesNotMakeTheServerBuffer) {
  StartServer();
  auto c = Connect();
  std::vector<uint64_t> addrs(1000);
  for (size_t i = 0; i < addrs.size(); ++i) addrs[i] = 0x7f0000000000 + i;
  std::string request;
  proto::EncodeRequest(Lookup(addrs), &request);  // ~17 KB in, ~90 KB out
  ASSERT_EQ(fcntl(c->fd(), F_SETFL, O_NONBLOCK), 0);
  // Never read. Without backpressure the server would keep reading requests and buffering
  // answers, and these sends would go on for ever.
  size_t sent = 0;
  size_t offset = 0;
  int stalls = 0;
  constexpr size_t kLimit = 64 << 20;
  while (stalls < 20 && sent < kLimit) {
    const ssize_t n = send(c->fd(), request.data() + offset, request.size() - offset, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      offset = (offset + static_cast<size_t>(n)) % request.size();
      stalls = 0;
    } else {
      ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << strerror(errno);
      ++stalls;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_LT(sent, kLimit);
  EXPECT_LT(server_->counters().bytes_received, size_t{16} << 20);
}

TEST_F(ServerTest, ManyConcurrentClients) {
  StartServer();
  constexpr int kClients = 64;
  constexpr int kRounds = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      std::string error;
      auto c = ClientConnection::Connect(path_, &error);
      if (!c) {
        ++failures;
        return;
      }
      for (int round = 0; round < kRounds; ++round) {
        std::vector<uint64_t> addrs;
        for (int i = 0; i < 100; ++i) addrs.push_back((uint64_t(t) << 32) | (round * 100 + i + 1));
        auto response = c->Call(Lookup(addrs, std::to_string(round)), &error);
        if (!response || response->id_json != std::to_string(round)) {
          ++failures;
          return;
        }
        const auto& results = std::get<proto::LookupResponse>(response->body).results;
        for (size_t i = 0; i < addrs.size(); ++i) {
          if (results[i].name != "fn_" + proto::FormatAddress(addrs[i])) ++failures;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures, 0);
  const Counters counters = server_->counters();
  EXPECT_EQ(counters.requests, uint64_t{kClients * kRounds});
  EXPECT_EQ(counters.addresses, uint64_t{kClients * kRounds * 100});
  EXPECT_GE(counters.connections_accepted, uint64_t{kClients});
}

TEST_F(ServerTest, ConnectionLimit) {
  ServerOptions options;
  options.max_connections = 1;
  StartServer(options);
  auto first = Connect();
  std::string error;
  ASSERT_TRUE(first->Call({"", proto::PingRequest{}}, &error)) << error;
  auto second = Connect();
  proto::Response response;
  ASSERT_TRUE(second->ReadResponse(&response, &error)) << error;
  EXPECT_EQ(ErrorCode(response), proto::kErrBusy);
  EXPECT_EQ(server_->counters().connections_rejected, 1u);
  EXPECT_TRUE(first->Call({"", proto::PingRequest{}}, &error)) << error;
}

TEST_F(ServerTest, ListenRefusesAPathAnotherServerIsServing) {
  StartServer();
  boost::asio::io_context other_io;
  Server other(other_io, handler_);
  try {
    other.Listen(path_);
    FAIL() << "second Listen succeeded";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EADDRINUSE);
    EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
  }
  auto c = Connect();  // the first server is untouched
  std::string error;
  EXPECT_TRUE(c->Call({"", proto::PingRequest{}}, &error)) << error;
}

TEST_F(ServerTest, ListenReplacesAStaleSocket) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.c_str(), path_.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);  // the file stays, nobody listens: what a crashed daemon leaves
  StartServer();
  auto c = Connect();
  std::string error;
  EXPECT_TRUE(c->Call({"", proto::PingRequest{}}, &error)) << error;
}

TEST_F(ServerTest, ListenRefusesToReplaceANonSocket) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  {
    FILE* f = fopen(path_.c_str(), "w");
    fclose(f);
  }
  Server server(io_, handler_);
  EXPECT_THROW(server.Listen(path_), std::system_error);
  EXPECT_TRUE(std::filesystem::is_regular_file(path_));
}

TEST_F(ServerTest, StopRemovesTheSocketAndClosesSessions) {
  StartServer();
  auto c = Connect();
  std::string error;
  ASSERT_TRUE(c->Call({"", proto::PingRequest{}}, &error));
  StopServer();  // returns only once io.run() has no more work: sessions are gone
  EXPECT_FALSE(std::filesystem::exists(path_));
  std::string_view line;
  EXPECT_FALSE(c->ReadLine(&line, &error));
  EXPECT_FALSE(ClientConnection::Connect(path_, &error));
  EXPECT_NE(error.find("is jitsymd running"), std::string::npos) << error;
}

TEST_F(ServerTest, AdoptServesAnInheritedSocket) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.c_str(), path_.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  server_ = std::make_unique<Server>(io_, handler_);
  server_->Adopt(fd);
  threads_.emplace_back([this] { io_.run(); });
  auto c = Connect();
  std::string error;
  EXPECT_TRUE(c->Call({"", proto::PingRequest{}}, &error)) << error;
}

}  // namespace
}  // namespace jitsym::server
