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
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
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
      if (!lookup->addrs.empty() && lookup->addrs[0].addr == kHold) {
        // Holds its thread until released, as a lookup waiting on a hung worker would.
        const int now = ++holding;
        for (int seen = max_holding; now > seen && !max_holding.compare_exchange_weak(seen, now);) {
        }
        while (hold) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        --holding;
      }
      proto::LookupResponse answer;
      answer.strings = lookup->strings;  // as the query engine does
      // The names the answers point to, owned by the response as the index is by the daemon's.
      auto names = std::make_shared<std::deque<std::string>>();
      answer.keepalive = names;
      for (const proto::AddressQuery& q : lookup->addrs) {
        proto::LookupResult& r = answer.results.emplace_back();
        r.addr = q.addr;
        if (q.addr != 0 && q.error.empty()) {
          r.found = true;
          std::string& name = names->emplace_back("fn_" + proto::FormatAddress(q.addr));
          // Addresses from 2^48 up have long names: answers too big for the compact form.
          if (q.addr >> 48) name.append(1000, 'x');
          r.name = name;
          r.start = q.addr;
          r.size = 1;
          r.origin = proto::Origin::kJitdump;
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

  static constexpr uint64_t kHold = 0xb10c;
  std::atomic<int> last_peer_pid{0};
  std::atomic<unsigned> last_peer_uid{0};
  std::atomic<bool> hold{false};
  std::atomic<int> holding{0}, max_holding{0};
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

// Reads one whole response line from a raw socket (no decoding: the bytes are compared).
std::string ReadRawLine(ClientConnection& c) {
  std::string_view line;
  std::string error;
  EXPECT_TRUE(c.ReadLine(&line, &error)) << error;
  return std::string(line) + "\n";
}

// Fakes the peer of every connection (SO_PEERCRED cannot be made to lie in a test).
std::function<std::optional<PeerCredentials>(int)> PeerIs(unsigned uid) {
  return [uid](int) -> std::optional<PeerCredentials> {
    PeerCredentials peer;
    peer.pid = 1234;
    peer.uid = uid;
    peer.gid = uid;
    return peer;
  };
}

TEST(PeerCredentialsTest, DefaultIsNobodyNotRoot) {
  const PeerCredentials unfilled;
  EXPECT_NE(unfilled.uid, 0u);
  EXPECT_NE(unfilled.gid, 0u);
}

TEST(PeerCredentialsTest, FailedSoPeercredIsNoPeer) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);  // not a socket: getsockopt fails with ENOTSOCK
  EXPECT_FALSE(ReadPeerCredentials(fds[0]).has_value());
  close(fds[0]);
  close(fds[1]);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  const auto peer = ReadPeerCredentials(pair[0]);
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->uid, getuid());
  EXPECT_EQ(peer->pid, getpid());
  close(pair[0]);
  close(pair[1]);
}

TEST_F(ServerTest, PeerWithoutCredentialsIsRefusedNotTakenForRoot) {
  ServerOptions options;
  options.peer_credentials_for_testing = [](int) { return std::optional<PeerCredentials>(); };
  StartServer(options);
  auto c = Connect();
  std::string error;
  auto response = c->Call(Lookup({1}), &error);
  ASSERT_TRUE(response) << error;
  EXPECT_EQ(ErrorCode(*response), proto::kErrPermission);
  EXPECT_EQ(handler_.last_peer_pid, 0);  // the handler never saw the request
  EXPECT_EQ(server_->counters().connections_rejected, 1u);
}

// The answer to a lookup of many addresses is produced in slices and written in pieces; its
// bytes are exactly those of the whole answer encoded at once.
TEST_F(ServerTest, SlicedAnswerEqualsTheWholeAnswerByteForByte) {
  ServerOptions options;
  options.answer_slice = 7;
  options.output_high_water = 100;  // a write every few results
  StartServer(options);
  auto c = Connect();
  for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{1000}}) {
    std::vector<uint64_t> addrs;
    for (size_t i = 0; i < n; ++i) addrs.push_back(i % 5 == 0 ? 0 : 0x1000 + i);
    proto::Request request = Lookup(addrs, "\"id-" + std::to_string(n) + "\"");
    auto& lookup = std::get<proto::LookupRequest>(request.body);
    if (n > 2) {  // an unparsable entry in the middle of a slice
      lookup.addrs[3].error = "not an address";
      lookup.addrs[3].raw = "zz";
    }
    lookup.fields = proto::kFieldName | proto::kFieldStart;
    std::string error;
    ASSERT_TRUE(c->SendRequest(request, &error)) << error;
    const std::string streamed = ReadRawLine(*c);
    // What the handler says for the whole batch as the server decodes it, with the unparsable
    // entry's error, encoded at once.
    std::string line;
    proto::EncodeRequest(request, &line);
    line.pop_back();
    const proto::Request decoded = *proto::DecodeRequest(line).request;
    FakeHandler whole_handler;
    proto::Response whole = whole_handler.Handle(decoded, PeerCredentials{});
    whole.id_json = request.id_json;
    auto& results = std::get<proto::LookupResponse>(whole.body);
    results.fields = lookup.fields;
    const auto& queries = std::get<proto::LookupRequest>(decoded.body).addrs;
    for (size_t i = 0; i < queries.size(); ++i) {
      if (queries[i].error.empty()) continue;
      results.results[i] = proto::LookupResult{};
      results.results[i].error = queries[i].error;
      results.results[i].raw = queries[i].raw;
    }
    std::string expected;
    proto::EncodeResponse(whole, &expected);
    EXPECT_EQ(streamed, expected) << n << " addresses";
  }
}

// A compact request larger than one slice is answered in the plain form, which streams; the
// client's decoder reads both.
TEST_F(ServerTest, CompactRequestOverASliceIsAnsweredPlain) {
  ServerOptions options;
  options.answer_slice = 10;
  StartServer(options);
  auto c = Connect();
  std::vector<uint64_t> addrs;
  for (uint64_t i = 1; i <= 25; ++i) addrs.push_back(i);
  proto::Request request = Lookup(addrs);
  std::get<proto::LookupRequest>(request.body).strings = true;
  std::string error;
  auto response = c->Call(request, &error);
  ASSERT_TRUE(response) << error;
  const auto& results = std::get<proto::LookupResponse>(response->body).results;
  ASSERT_EQ(results.size(), addrs.size());
  EXPECT_EQ(results[24].name, "fn_0x19");
  // Within one slice, the compact form as before.
  addrs.resize(10);
  request = Lookup(addrs);
  std::get<proto::LookupRequest>(request.body).strings = true;
  ASSERT_TRUE(c->SendRequest(request, &error)) << error;
  EXPECT_NE(ReadRawLine(*c).find("\"strings\":["), std::string::npos);
}

TEST_F(ServerTest, CompactRequestWithLongStringsIsAnsweredPlain) {
  StartServer();
  auto c = Connect();
  std::vector<uint64_t> addrs;
  for (uint64_t i = 1; i <= 5000; ++i) addrs.push_back((uint64_t{1} << 48) + i);  // 5 MB of names
  proto::Request request = Lookup(addrs);
  std::get<proto::LookupRequest>(request.body).strings = true;
  std::string error;
  ASSERT_TRUE(c->SendRequest(request, &error)) << error;
  const std::string line = ReadRawLine(*c);
  EXPECT_EQ(line.find("\"strings\":["), std::string::npos);
  auto response = proto::DecodeResponse(std::string_view(line).substr(0, line.size() - 1));
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(std::get<proto::LookupResponse>(response->body).results.size(), addrs.size());
}

TEST_F(ServerTest, LookupOverTheUsersMemoryShareIsBusyAndTheConnectionStaysOpen) {
  ServerOptions options;
  options.max_user_request_bytes = 1 << 20;  // less than 100,000 decoded addresses
  options.peer_credentials_for_testing = PeerIs(1000);
  StartServer(options);
  auto c = Connect();
  std::vector<uint64_t> many(100000, 1);
  std::string error;
  auto response = c->Call(Lookup(many, "1"), &error);
  ASSERT_TRUE(response) << error;
  EXPECT_EQ(ErrorCode(*response), proto::kErrBusy);
  EXPECT_NE(std::get<proto::ErrorResponse>(response->body).message.find("per-user"),
            std::string::npos);
  EXPECT_EQ(server_->counters().requests_busy, 1u);
  // Small lookups still go through, on the same connection.
  response = c->Call(Lookup({1, 2, 3}, "2"), &error);
  ASSERT_TRUE(response) << error;
  EXPECT_EQ(std::get<proto::LookupResponse>(response->body).results.size(), 3u);
}

TEST_F(ServerTest, PerUserConnectionQuotaSaysWhichLimit) {
  ServerOptions options;
  options.max_user_connections = 2;
  options.peer_credentials_for_testing = PeerIs(1000);
  StartServer(options);
  auto a = Connect();
  auto b = Connect();
  std::string error;
  ASSERT_TRUE(a->Call({"", proto::PingRequest{}}, &error)) << error;
  ASSERT_TRUE(b->Call({"", proto::PingRequest{}}, &error)) << error;
  auto third = Connect();
  auto response = third->Call({"", proto::PingRequest{}}, &error);  // refused before it sends
  ASSERT_TRUE(response) << error;
  EXPECT_EQ(ErrorCode(*response), proto::kErrBusy);
  EXPECT_NE(std::get<proto::ErrorResponse>(response->body).message.find("per-user"),
            std::string::npos);
  // A slot freed is a slot for the same user again.
  a.reset();
  ASSERT_TRUE(Eventually([&] { return server_->counters().connections_open == 1; }));
  auto again = Connect();
  EXPECT_TRUE(again->Call({"", proto::PingRequest{}}, &error)) << error;
}

TEST_F(ServerTest, IdleConnectionIsClosedWithATimeoutLine) {
  ServerOptions options;
  options.idle_timeout = std::chrono::milliseconds(200);
  StartServer(options);
  auto c = Connect();
  std::string error;
  ASSERT_TRUE(c->Call({"", proto::PingRequest{}}, &error)) << error;
  proto::Response response;
  ASSERT_TRUE(c->ReadResponse(&response, &error)) << error;  // nothing sent: the timeout line
  EXPECT_EQ(ErrorCode(response), proto::kErrTimeout);
  std::string_view rest;
  EXPECT_FALSE(c->ReadLine(&rest, &error));
  EXPECT_EQ(server_->counters().connections_timed_out, 1u);
}

TEST_F(ServerTest, RequestLineTricklingInIsCut) {
  ServerOptions options;
  options.request_timeout = std::chrono::milliseconds(300);
  StartServer(options);
  auto c = Connect();
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  // One byte every 50 ms: never idle, never a whole line.
  bool closed = false;
  for (int i = 0; i < 100 && !closed; ++i) {
    closed = !c->Send("x", &error);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pollfd p{c->fd(), POLLIN, 0};
    if (poll(&p, 1, 0) == 1) break;
  }
  proto::Response response;
  ASSERT_TRUE(c->ReadResponse(&response, &error)) << error;
  EXPECT_EQ(ErrorCode(response), proto::kErrTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// A pipelined request read in part waits while the answer before it is written: that wait is
// the daemon's, not a slow client's, and does not count against the request timeout.
TEST_F(ServerTest, PartOfAPipelinedLineWaitingForALongAnswerIsNotCut) {
  ServerOptions options;
  options.request_timeout = std::chrono::milliseconds(1000);
  StartServer(options);
  auto c = Connect();
  std::vector<uint64_t> many(200000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = i + 1;
  std::string batch;
  proto::EncodeRequest(Lookup(many, "1"), &batch);
  batch += "{\"v\":1,\"id\":2,\"op\":\"pi";
  std::string error;
  ASSERT_TRUE(c->Send(batch, &error)) << error;
  // Not reading: the daemon's write of the first answer (megabytes) blocks for a while.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  proto::Response response;
  ASSERT_TRUE(c->ReadResponse(&response, &error)) << error;
  EXPECT_EQ(response.id_json, "1");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(c->Send("ng\"}\n", &error)) << error;
  ASSERT_TRUE(c->ReadResponse(&response, &error)) << error;
  EXPECT_EQ(response.id_json, "2");
  EXPECT_TRUE(std::holds_alternative<proto::PingResponse>(response.body)) << ErrorCode(response);
}

TEST_F(ServerTest, ClientTimesOutOnADaemonThatDoesNotAnswer) {
  // A socket that accepts (the kernel does, into the backlog) but never answers: a stopped
  // daemon.
  const std::string path = dir_ + "/silent.sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  std::string error;
  auto c = ClientConnection::Connect(path, &error, 200);
  ASSERT_TRUE(c) << error;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(c->Call({"", proto::PingRequest{}}, &error));
  EXPECT_NE(error.find("did not answer within 0.2 s"), std::string::npos) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  close(fd);
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

TEST_F(ServerTest, OnePersonHoldsAtMostItsShareOfQueryThreadsAndWaitsHoldingNone) {
  ServerOptions options;
  options.person_threads = 1;
  // The first two connections are uid 1000's, the third 1001's.
  auto connections = std::make_shared<std::atomic<int>>(0);
  options.peer_credentials_for_testing = [connections](int) -> std::optional<PeerCredentials> {
    PeerCredentials peer;
    peer.pid = 1234;
    peer.uid = peer.gid = (*connections)++ < 2 ? 1000 : 1001;
    return peer;
  };
  StartServer(options, 3);
  handler_.hold = true;
  auto a = Connect(), b = Connect(), c = Connect();
  std::string error;
  ASSERT_TRUE(a->SendRequest(Lookup({FakeHandler::kHold}, "1"), &error)) << error;
  ASSERT_TRUE(Eventually([&] { return handler_.holding == 1; }));
  // uid 1000's second request waits without a thread: it is not in the handler...
  ASSERT_TRUE(b->SendRequest(Lookup({FakeHandler::kHold}, "2"), &error)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(handler_.holding, 1);
  // ...and another person is answered meanwhile, on one of the threads left.
  auto answer = c->Call(Lookup({5}, "3"), &error);
  ASSERT_TRUE(answer) << error;
  EXPECT_EQ(std::get<proto::LookupResponse>(answer->body).results.at(0).found, true);
  // Released: both of uid 1000's are answered, one after the other.
  handler_.hold = false;
  for (auto* conn : {a.get(), b.get()}) {
    proto::Response r;
    ASSERT_TRUE(conn->ReadResponse(&r, &error)) << error;
    EXPECT_TRUE(std::holds_alternative<proto::LookupResponse>(r.body));
  }
  EXPECT_EQ(handler_.max_holding, 1);
}

}  // namespace
}  // namespace jitsym::server
