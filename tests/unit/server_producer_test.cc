// Answers the server pulls from a handler's AnswerProducer (server.h), in-process behind a real
// Unix socket: backpressure (a client that does not read stops the production), the bytes of
// the whole answer, failures before and after the first step, and the memory budget.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daemon/server/server.h"
#include "proto/client_connection.h"

namespace jitsym::server {
namespace {

using proto::ClientConnection;

proto::SymbolEntry Entry(uint64_t i) {
  proto::SymbolEntry e;
  e.start = 0x7f0000000000 + i * 64;
  e.size = 64;
  e.name = "sym_" + std::to_string(i) + std::string(1000, 'x');
  e.origin = proto::Origin::kJitdump;
  return e;
}

// A symbols answer of `count` entries, one per step; throws at step `throw_at` (0: the head).
class CountingProducer : public AnswerProducer {
 public:
  CountingProducer(std::string id, int64_t pid, uint64_t count, int64_t throw_at,
                   std::atomic<uint64_t>* steps)
      : id_(std::move(id)), pid_(pid), count_(count), throw_at_(throw_at), steps_(steps) {}

  bool Step(std::string* out) override {
    if (static_cast<int64_t>(done_) == throw_at_) {
      out->append("half an element that must never be sent");
      throw std::runtime_error("boom");
    }
    if (done_ == 0) {
      proto::EncodeSymbolsResponseBegin(id_, pid_, 1, out);
    } else if (done_ <= count_) {
      if (done_ > 1) out->push_back(',');
      proto::EncodeSymbolEntry(Entry(done_ - 1), out);
    } else {
      proto::EncodeListResponseEnd(out);
      return false;
    }
    ++done_;
    steps_->fetch_add(1);
    return true;
  }
  void Fail(std::string_view code, std::string_view message, std::string* out) override {
    out->push_back(']');
    proto::EncodeAnswerFailure(code, message, out);
  }
  // pid 666's holds a gigabyte; the others 16 MiB, so that a charge not given back shows.
  size_t memory_bytes() const override { return pid_ == 666 ? size_t{1} << 30 : 16u << 20; }

 private:
  std::string id_;
  int64_t pid_;
  uint64_t count_;
  int64_t throw_at_;
  std::atomic<uint64_t>* steps_;
  uint64_t done_ = 0;
};

// Symbols of pid P: P * 1000 entries, pulled; pids 7 and 8 throw at the head and at the 10th
// entry; pid 666's producer holds a gigabyte. Everything else: a ping.
class ProducingHandler : public RequestHandler {
 public:
  proto::Response Handle(const proto::Request&, const PeerCredentials&) override {
    return {"", proto::PingResponse{}};
  }
  Reply Respond(const proto::Request& request, const PeerCredentials& peer) override {
    const auto* symbols = std::get_if<proto::SymbolsRequest>(&request.body);
    if (symbols == nullptr) return RequestHandler::Respond(request, peer);
    const int64_t throw_at = symbols->pid == 7 ? 0 : symbols->pid == 8 ? 10 : -1;
    return {{},
            std::make_unique<CountingProducer>(request.id_json, symbols->pid,
                                               static_cast<uint64_t>(symbols->pid) * 1000, throw_at,
                                               &steps)};
  }
  std::atomic<uint64_t> steps{0};
};

class ServerProducerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/jitsym-producer-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    ServerOptions options;
    options.output_high_water = 64 << 10;
    options.max_buffered_request_bytes = 64 << 20;  // the test runs as root: no per-user share
    options.max_user_request_bytes = 64 << 20;
    server_ = std::make_unique<Server>(io_, handler_, options);
    server_->Listen(dir_ + "/jitsymd.sock");
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  void TearDown() override {
    server_->Stop();
    for (auto& t : threads_) t.join();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<ClientConnection> Connect() {
    std::string error;
    auto c = ClientConnection::Connect(dir_ + "/jitsymd.sock", &error);
    EXPECT_TRUE(c) << error;
    return c;
  }
  static proto::Request Symbols(int64_t pid, std::string id = "") {
    return {std::move(id), proto::SymbolsRequest{pid}};
  }

  std::string dir_;
  boost::asio::io_context io_;
  ProducingHandler handler_;
  std::unique_ptr<Server> server_;
  std::vector<std::thread> threads_;
};

TEST_F(ServerProducerTest, AClientThatDoesNotReadStopsTheProductionThenGetsItAll) {
  auto c = Connect();
  std::string error;
  ASSERT_TRUE(c->SendRequest(Symbols(100), &error)) << error;  // 100,000 entries, ~100 MB
  // Not read: the producer stops once the socket buffers and the high water are full.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const uint64_t stalled = handler_.steps.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(handler_.steps.load(), stalled) << "production went on with nothing read";
  EXPECT_LT(stalled, 5000u) << "more than the high water and the socket buffers were produced";
  // Read slowly, element by element: all of it, in order.
  uint64_t n = 0;
  const auto element = [&](std::string_view text) {
    proto::SymbolEntry e;
    if (Status st = proto::DecodeSymbolEntry(text, &e); !st.ok()) return st;
    if (e.name != Entry(n).name || e.start != Entry(n).start) {
      return Status(MakeError(ErrorKind::kMalformed, "entry " + std::to_string(n) + " differs"));
    }
    if (++n % 20000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return OkStatus();
  };
  std::optional<proto::Response> rest = c->ReadArrayAnswer("symbols", element, &error);
  ASSERT_TRUE(rest) << error;
  EXPECT_EQ(n, 100000u);
  const auto& body = std::get<proto::SymbolsResponse>(rest->body);
  EXPECT_EQ(body.pid, 100);
  EXPECT_TRUE(body.symbols.empty());
  // The next answer on the connection: whole, with its id.
  auto small = c->Call(Symbols(1, "9"), &error);
  ASSERT_TRUE(small) << error;
  EXPECT_EQ(small->id_json, "9");
  EXPECT_EQ(std::get<proto::SymbolsResponse>(small->body).symbols.size(), 1000u);
}

TEST_F(ServerProducerTest, ThePulledAnswerIsTheWholeAnswerByteForByte) {
  auto c = Connect();
  std::string error;
  ASSERT_TRUE(c->SendRequest(Symbols(3, "\"x\""), &error));
  std::string_view line;
  ASSERT_TRUE(c->ReadLine(&line, &error)) << error;
  proto::SymbolsResponse whole;
  whole.pid = 3;
  whole.incarnation = 1;
  for (uint64_t i = 0; i < 3000; ++i) whole.symbols.push_back(Entry(i));
  std::string want;
  proto::EncodeResponse({"\"x\"", whole}, &want);
  want.pop_back();
  EXPECT_EQ(line, want);
}

TEST_F(ServerProducerTest, AFailureBeforeTheFirstStepIsAnErrorAnswer) {
  auto c = Connect();
  std::string error;
  auto response = c->Call(Symbols(7, "1"), &error);
  ASSERT_TRUE(response) << error;
  const auto* e = std::get_if<proto::ErrorResponse>(&response->body);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, proto::kErrInternal);
  EXPECT_EQ(response->id_json, "1");
  EXPECT_TRUE(c->Call({"", proto::PingRequest{}}, &error)) << error;
}

TEST_F(ServerProducerTest, AFailureAfterTheFirstStepEndsTheLineWithTheError) {
  auto c = Connect();
  std::string error;
  ASSERT_TRUE(c->SendRequest(Symbols(8, "2"), &error));
  std::string_view line;
  ASSERT_TRUE(c->ReadLine(&line, &error)) << error;
  EXPECT_EQ(line.find("half an element"), std::string_view::npos) << "a partial step was sent";
  EXPECT_NE(line.find("],\"error\":{\"code\":\"internal\""), std::string_view::npos) << line;
  Result<proto::Response> r = proto::DecodeResponse(line);
  ASSERT_TRUE(r) << r.error().message;
  const auto* e = std::get_if<proto::ErrorResponse>(&r->body);
  ASSERT_NE(e, nullptr) << "the client takes it for a failure";
  EXPECT_NE(e->message.find("answer incomplete"), std::string::npos) << e->message;
  // The connection goes on; the error was counted.
  EXPECT_TRUE(c->Call({"", proto::PingRequest{}}, &error)) << error;
  EXPECT_EQ(server_->counters().errors, 1u);
}

TEST_F(ServerProducerTest, AProducerOverTheUsersMemoryShareIsBusy) {
  auto c = Connect();
  std::string error;
  auto response = c->Call(Symbols(666), &error);
  ASSERT_TRUE(response) << error;
  const auto* e = std::get_if<proto::ErrorResponse>(&response->body);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, proto::kErrBusy);
  EXPECT_EQ(handler_.steps.load(), 0u);
  // What was charged for an answer goes back with it: many answers in a row fit in 64 MiB.
  for (int i = 0; i < 50; ++i) {
    auto ok = c->Call(Symbols(1), &error);
    ASSERT_TRUE(ok) << error;
    ASSERT_TRUE(std::holds_alternative<proto::SymbolsResponse>(ok->body)) << i;
  }
}

}  // namespace
}  // namespace jitsym::server
