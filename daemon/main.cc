// jitsymd: indexes JIT code described by runtimes' side files and answers address-to-symbol
// queries over a Unix socket. main() only wires options, threads and signals.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/ingest/ingester.h"
#include "daemon/query/query_engine.h"
#include "daemon/security/limits.h"
#include "daemon/security/peer_access.h"
#include "daemon/server/server.h"
#include "daemon/util/log.h"
#include "proto/protocol.h"

namespace {

constexpr const char* kUsage =
    "Usage: jitsymd [OPTIONS]\n"
    "Indexes the code maps JIT runtimes write (perf jitdump jit-<pid>.dump, perf maps\n"
    "perf-<pid>.map, Mono log profiler *.mlpd, .NET ReadyToRun *.ni.r2rmap) found in watched\n"
    "directories and answers address-to-symbol lookups on a Unix socket (see jitsym(1)).\n"
    "\n"
    "Options:\n"
    "  --watch DIR         directory to watch; repeatable (default: /tmp)\n"
    "  --r2rmap-dir DIR    directory searched for <image>.ni.r2rmap when a process maps\n"
    "                      <image>.dll and no watched directory has its r2rmap; repeatable\n"
    "  --socket PATH       listening socket (default: /run/jitsymd/jitsymd.sock for root,\n"
    "                      $XDG_RUNTIME_DIR/jitsymd.sock otherwise)\n"
    "  --threads N         query threads (default: number of CPUs, at least 2)\n"
    "  --log-level LEVEL   debug, info, warning or error (default: info)\n"
    "  --trusted-group NAME  members of this group may query every process and image\n"
    "                      (default: root and each process's owner only)\n"
    "  --pending-timeout-ms N  how long a file naming a pid that does not exist (yet) waits\n"
    "                      for the process before it is ignored (default: 5000)\n"
    "  --limit-file-bytes N, --limit-file-ranges N, --limit-user-bytes N,\n"
    "  --limit-user-files N, --limit-total-bytes N, --limit-total-files N\n"
    "                      what the watched files may make the daemon hold, per file, per\n"
    "                      owner and in total (defaults: 8 GiB, 64 Mi ranges, 32 GiB, 1024\n"
    "                      files, 128 GiB, 8192 files); see docs/operations.md\n"
    "  --version           print the version and exit\n"
    "  -h, --help          print this help and exit\n";

struct Options {
  std::vector<std::string> watch;
  std::vector<std::string> r2rmap_dirs;
  std::string socket;
  int threads = 0;
  jitsym::log::Level level = jitsym::log::Level::kInfo;
  jitsym::security::AccessPolicy access;
  jitsym::security::Limits limits;
  int pending_timeout_ms = 5000;
};

[[noreturn]] void UsageError(const std::string& message) {
  std::fprintf(stderr, "jitsymd: %s\nTry 'jitsymd --help'.\n", message.c_str());
  std::exit(2);
}

uint64_t ParseCount(const std::string& name, const std::string& value, uint64_t min) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < min) {
    UsageError(name + " takes a number of at least " + std::to_string(min));
  }
  return n;
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string value;
    auto take = [&](std::string_view name) -> bool {
      if (arg == name) {
        if (i + 1 >= argc) UsageError(std::string(name) + " needs a value");
        value = argv[++i];
        return true;
      }
      if (arg.size() > name.size() + 1 && arg.starts_with(name) && arg[name.size()] == '=') {
        value = std::string(arg.substr(name.size() + 1));
        return true;
      }
      return false;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--version") {
      std::printf("jitsymd %s (protocol %d)\n", JITSYM_VERSION, jitsym::proto::kProtocolVersion);
      std::exit(0);
    } else if (take("--watch")) {
      o.watch.push_back(value);
    } else if (take("--r2rmap-dir")) {
      o.r2rmap_dirs.push_back(value);
    } else if (take("--socket")) {
      o.socket = value;
    } else if (take("--threads")) {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), o.threads);
      if (ec != std::errc() || end != value.data() + value.size() || o.threads < 1 ||
          o.threads > 256) {
        UsageError("--threads takes a number from 1 to 256");
      }
    } else if (take("--log-level")) {
      auto level = jitsym::log::ParseLevel(value);
      if (!level) UsageError("unknown log level '" + value + "'");
      o.level = *level;
    } else if (take("--trusted-group")) {
      o.access.trusted_gid = jitsym::security::ResolveGroup(value);
      if (!o.access.trusted_gid) UsageError("no group named '" + value + "'");
    } else if (take("--pending-timeout-ms")) {
      o.pending_timeout_ms = static_cast<int>(
          std::min<uint64_t>(ParseCount("--pending-timeout-ms", value, 0), 3600 * 1000));
    } else if (take("--limit-file-bytes")) {
      o.limits.file_bytes = ParseCount("--limit-file-bytes", value, 1);
    } else if (take("--limit-file-ranges")) {
      o.limits.file_ranges = ParseCount("--limit-file-ranges", value, 1);
    } else if (take("--limit-user-bytes")) {
      o.limits.user_bytes = ParseCount("--limit-user-bytes", value, 1);
    } else if (take("--limit-user-files")) {
      o.limits.user_files = ParseCount("--limit-user-files", value, 1);
    } else if (take("--limit-total-bytes")) {
      o.limits.total_bytes = ParseCount("--limit-total-bytes", value, 1);
    } else if (take("--limit-total-files")) {
      o.limits.total_files = ParseCount("--limit-total-files", value, 1);
    } else {
      UsageError("unknown option '" + std::string(arg) + "'");
    }
  }
  jitsym::query::SetR2rmapSearchDirs(o.r2rmap_dirs);  // read by the query engine it builds
  if (o.watch.empty()) o.watch.push_back("/tmp");
  if (o.socket.empty()) o.socket = jitsym::proto::DefaultSocketPath();
  if (o.threads == 0) o.threads = std::max(2u, std::thread::hardware_concurrency());
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jitsym;
  Options options = ParseOptions(argc, argv);
  log::SetLevel(options.level);
  ::signal(SIGPIPE, SIG_IGN);

  index::ViewCell cell;
  boost::asio::io_context ingest_io;
  boost::asio::io_context server_io;

  ingest::IngesterOptions ingest_options;
  ingest_options.watch_dirs = options.watch;
  ingest_options.limits = options.limits;
  ingest_options.pending_timeout_ms = options.pending_timeout_ms;
  ingest::Ingester ingester(ingest_io, ingest_options, cell);

  server::Server* server_ptr = nullptr;
  query::QueryEngine engine(
      cell, [&server_ptr] { return server_ptr ? server_ptr->counters() : server::Counters{}; });
  engine.set_access_policy(options.access);
  server::Server server(server_io, engine);
  server_ptr = &server;

  try {
    ingester.Start();
    server.Listen(options.socket);
  } catch (const std::exception& e) {
    JITSYM_LOG(kError, e.what());
    return 1;
  }
  JITSYM_LOG(kInfo, "ready: serving ", options.socket, " with ", options.threads,
             " query threads (jitsymd ", JITSYM_VERSION, ")");

  boost::asio::signal_set signals(server_io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    JITSYM_LOG(kInfo, "received ", ::strsignal(sig), "; stopping");
    server.Stop();
    boost::asio::post(ingest_io, [&] {
      ingester.Stop();
      ingest_io.stop();
    });
  });

  std::thread ingest_thread([&] { ingest_io.run(); });
  std::vector<std::thread> query_threads;
  for (int i = 1; i < options.threads; ++i) query_threads.emplace_back([&] { server_io.run(); });
  server_io.run();
  for (auto& t : query_threads) t.join();
  ingest_thread.join();
  JITSYM_LOG(kInfo, "stopped");
  return 0;
}
