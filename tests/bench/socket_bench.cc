// End-to-end throughput of the query socket: proto encode -> Unix socket -> server decode ->
// handler -> encode -> socket -> client decode, one client, batches of addresses. The handler
// answers every address with a fixed ~40-character name, so this measures the protocol and the
// server, not the index.
//
//   socket_bench [--benchmark_filter=...]   run the benchmarks
//   socket_bench --serve PATH               run only the fake daemon on PATH (until SIGINT), to
//                                           time the CLI: `... | jitsym --socket PATH lookup ...`
#include <benchmark/benchmark.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <semaphore>
#include <string>
#include <thread>

#include "daemon/server/server.h"
#include "proto/client_connection.h"
#include "proto/protocol.h"

namespace jitsym {
namespace {

constexpr char kName[] = "java.util.concurrent.ConcurrentHashMap::putVal";  // ~40 chars

class FixedNameHandler : public server::RequestHandler {
 public:
  proto::Response Handle(const proto::Request& request,
                         const server::PeerCredentials& peer) override {
    if (const auto* lookup = std::get_if<proto::LookupRequest>(&request.body)) {
      proto::LookupResponse answer;
      answer.results.resize(lookup->addrs.size());
      for (size_t i = 0; i < lookup->addrs.size(); ++i) {
        proto::LookupResult& r = answer.results[i];
        const uint64_t addr = lookup->addrs[i].addr;
        r.addr = addr;
        r.found = true;
        r.name = kName;
        r.start = addr & ~uint64_t{0xfff};
        r.offset = addr - r.start;
        r.size = 0x1000;
        r.origin = proto::Origin::kJitdump;
        r.source = "/tmp/jit-1234.dump";
      }
      return {"", std::move(answer)};
    }
    if (std::holds_alternative<proto::VersionRequest>(request.body)) {
      return {"", proto::VersionResponse{"socket_bench", proto::kProtocolVersion}};
    }
    if (std::holds_alternative<proto::StatsRequest>(request.body)) {
      return {"", proto::StatsResponse{}};
    }
    if (std::holds_alternative<proto::ProcessesRequest>(request.body)) {
      return {"", proto::ProcessesResponse{}};
    }
    return {"", proto::PingResponse{}};
  }
};

// A server on a temporary socket, run by `threads` io threads.
class BenchServer {
 public:
  explicit BenchServer(int threads = 1) : server_(io_, handler_) {
    char dir[] = "/tmp/jitsym-bench-XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    dir_ = dir;
    path_ = dir_ + "/jitsymd.sock";
    server_.Listen(path_);
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~BenchServer() {
    server_.Stop();
    for (auto& t : threads_) t.join();
    std::filesystem::remove_all(dir_);
  }
  const std::string& path() const { return path_; }

 private:
  boost::asio::io_context io_;
  FixedNameHandler handler_;
  server::Server server_;
  std::string dir_;
  std::string path_;
  std::vector<std::thread> threads_;
};

proto::Request MakeLookup(size_t batch) {
  proto::LookupRequest lookup;
  lookup.pid = 1234;
  for (size_t i = 0; i < batch; ++i) {
    lookup.addrs.push_back({0x7f3a12000000 + i * 0x37, std::nullopt, "", ""});
  }
  return {"", std::move(lookup)};
}

std::unique_ptr<proto::ClientConnection> ConnectOrDie(const std::string& path) {
  std::string error;
  auto c = proto::ClientConnection::Connect(path, &error);
  if (!c) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::abort();
  }
  return c;
}

// One batch at a time: send, wait, decode.
void BM_LookupRoundTrip(benchmark::State& state) {
  const size_t batch = static_cast<size_t>(state.range(0));
  BenchServer server;
  auto c = ConnectOrDie(server.path());
  const proto::Request request = MakeLookup(batch);
  std::string encoded;
  proto::Response response;
  std::string error;
  for (auto _ : state) {
    encoded.clear();
    proto::EncodeRequest(request, &encoded);
    if (!c->Send(encoded, &error) || !c->ReadResponse(&response, &error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    benchmark::DoNotOptimize(std::get<proto::LookupResponse>(response.body).results.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
}
BENCHMARK(BM_LookupRoundTrip)->Arg(1024)->Arg(8192)->UseRealTime();

// As `jitsym lookup` does it: a writer thread keeps up to `depth` batches in flight while this
// thread reads and decodes answers.
void BM_LookupPipelined(benchmark::State& state) {
  const size_t batch = static_cast<size_t>(state.range(0));
  constexpr int kDepth = 4;
  BenchServer server;
  auto c = ConnectOrDie(server.path());
  const proto::Request request = MakeLookup(batch);
  std::counting_semaphore<kDepth> slots(kDepth);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    std::string encoded;
    std::string error;
    while (true) {
      slots.acquire();
      if (done) break;
      encoded.clear();
      proto::EncodeRequest(request, &encoded);  // encoding is part of the measured work
      if (!c->Send(encoded, &error)) break;
    }
  });
  proto::Response response;
  std::string error;
  int64_t answered = 0;
  for (auto _ : state) {
    if (!c->ReadResponse(&response, &error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    if (std::get<proto::LookupResponse>(response.body).results.size() != batch) {
      state.SkipWithError("short answer");
      break;
    }
    ++answered;
    slots.release();
  }
  done = true;
  slots.release();
  // Drain what is still in flight so the writer is not blocked on a full socket.
  c->ShutdownWrite();
  std::string_view line;
  while (c->ReadLine(&line, &error)) {
  }
  writer.join();
  state.SetItemsProcessed(answered * static_cast<int64_t>(batch));
}
BENCHMARK(BM_LookupPipelined)->Arg(8192)->UseRealTime();

// The pieces, without the socket.
void BM_EncodeLookupResponse(benchmark::State& state) {
  FixedNameHandler handler;
  const proto::Response response = handler.Handle(MakeLookup(8192), {});
  std::string out;
  for (auto _ : state) {
    out.clear();
    proto::EncodeResponse(response, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 8192);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(out.size()));
}
BENCHMARK(BM_EncodeLookupResponse);

void BM_DecodeLookupResponse(benchmark::State& state) {
  FixedNameHandler handler;
  std::string line;
  proto::EncodeResponse(handler.Handle(MakeLookup(8192), {}), &line);
  line.pop_back();
  proto::Response response;
  std::string error;
  for (auto _ : state) {
    if (Status st = proto::DecodeResponseInto(line, &response); !st.ok()) {
      state.SkipWithError(st.error().message.c_str());
    }
  }
  state.SetItemsProcessed(state.iterations() * 8192);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(line.size()));
}
BENCHMARK(BM_DecodeLookupResponse);

void BM_DecodeLookupRequest(benchmark::State& state) {
  std::string line;
  proto::EncodeRequest(MakeLookup(8192), &line);
  line.pop_back();
  for (auto _ : state) {
    proto::DecodeRequestResult result = proto::DecodeRequest(line);
    benchmark::DoNotOptimize(result.request);
  }
  state.SetItemsProcessed(state.iterations() * 8192);
}
BENCHMARK(BM_DecodeLookupRequest);

int Serve(const std::string& path) {
  boost::asio::io_context io;
  FixedNameHandler handler;
  server::Server server(io, handler);
  try {
    server.Listen(path);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "socket_bench: %s\n", e.what());
    return 1;
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) { server.Stop(); });
  std::fprintf(stderr, "socket_bench: fake jitsymd on %s (Ctrl-C to stop)\n", path.c_str());
  io.run();
  return 0;
}

}  // namespace
}  // namespace jitsym

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc == 3 && std::strcmp(argv[1], "--serve") == 0) return jitsym::Serve(argv[2]);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
