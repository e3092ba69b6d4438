// jitsymd: indexes JIT code described by runtimes' side files and answers address-to-symbol
// queries over a Unix socket. main() only wires settings, threads and signals.
#include <signal.h>
#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config/config.h"
#include "daemon/config/descriptor_budget.h"
#include "daemon/index/index_view.h"
#include "daemon/ingest/ingester.h"
#include "daemon/native/split_units.h"
#include "daemon/os/fs_workers.h"
#include "daemon/parse_worker/worker_main.h"
#include "daemon/query/image_lookup.h"
#include "daemon/query/query_engine.h"
#include "daemon/security/accounts.h"
#include "daemon/security/limits.h"
#include "daemon/security/peer_access.h"
#include "daemon/server/server.h"
#include "daemon/service/service_manager.h"
#include "daemon/util/log.h"
#include "proto/protocol.h"

namespace {

using jitsym::config::Settings;

constexpr const char* kUsageHead =
    "Usage: jitsymd [OPTIONS]\n"
    "Indexes the code maps JIT runtimes write (perf jitdump jit-<pid>.dump, perf maps\n"
    "perf-<pid>.map, Mono log profiler *.mlpd, .NET ReadyToRun *.ni.r2rmap) found in watched\n"
    "directories and answers address-to-symbol lookups on a Unix socket (see jitsym(1)).\n"
    "Every option can also be set in the config file as 'name = value' (see jitsymd(8));\n"
    "SIGHUP reloads it.\n"
    "\n"
    "Options:\n";

[[noreturn]] void UsageError(const std::string& message) {
  std::fprintf(stderr, "jitsymd: %s\nTry 'jitsymd --help'.\n", message.c_str());
  std::exit(2);
}

jitsym::log::Level LevelOf(const Settings& s) {
  return jitsym::log::ParseLevel(s.log_level).value_or(jitsym::log::Level::kInfo);
}

// Loads the settings at start-up: exits with status 2 on a bad option or config file. Sets
// *found to whether the config file exists.
Settings LoadSettings(const jitsym::config::CommandLine& command_line, bool* found) {
  Settings settings;
  if (auto st = jitsym::config::BuildSettings(command_line, &settings, found); !st.ok()) {
    UsageError(st.error().message);
  }
  jitsym::config::ResolveHostDefaults(settings);
  return settings;
}

// Raises the soft descriptor limit to the hard one (the default soft limit, 1024, is what a few
// users' files and connections exhaust) and returns the soft limit in force. Under the systemd
// unit both are LimitNOFILE= already, and setrlimit is not even allowed there.
uint64_t RaiseDescriptorLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    const rlim_t before = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &rl) == 0) {
      JITSYM_LOG(kInfo, "raised the descriptor limit (RLIMIT_NOFILE) from ", before, " to ",
                 rl.rlim_max);
    } else {
      JITSYM_LOG(kWarning, "cannot raise the descriptor limit from ", before, " to ", rl.rlim_max,
                 ": ", std::strerror(errno));
      rl.rlim_cur = before;
    }
  }
  return rl.rlim_cur == RLIM_INFINITY ? (1u << 20) : static_cast<uint64_t>(rl.rlim_cur);
}

// The settings' connection and file limits, as wishes the descriptor limit may lower.
jitsym::config::DescriptorWishes WishesOf(const Settings& s) {
  jitsym::config::DescriptorWishes wishes;
  wishes.connections = s.max_connections;
  wishes.user_connections = s.max_user_connections;
  wishes.total_files = s.limit_total_files;
  wishes.user_files = s.limit_user_files;
  return wishes;
}

// The settings' connection and file limits, lowered to fit `nofile` descriptors.
jitsym::config::DescriptorBudget BudgetFor(uint64_t nofile, const Settings& s) {
  return jitsym::config::ComputeDescriptorBudget(nofile, WishesOf(s));
}

// The STATUS= line for systemctl status.
std::string IndexStatus(const jitsym::index::ViewCell& cell) {
  auto view = cell.Get();
  const size_t processes = view->processes.incarnations();
  const auto& c = view->counters;
  return jitsym::log::Cat(processes, " processes (", c.processes_exited, " exited), ",
                          c.files_followed, " files followed, ", c.ranges, " code ranges, ",
                          c.memory_bytes >> 20, " MiB");
}

// Applies the settings that SIGHUP may change. Other settings wait for a restart.
void ApplyReloadable(const Settings& next, Settings* running, jitsym::ingest::Ingester& ingester,
                     boost::asio::io_context& ingest_io) {
  jitsym::log::SetLevel(LevelOf(next));
  running->log_level = next.log_level;
  running->watch = next.watch;
  running->retention_ms = next.retention_ms;
  running->memory_budget_bytes = next.memory_budget_bytes;
  boost::asio::post(ingest_io, [&ingester, watch = next.watch, retention = next.retention_ms,
                                budget = next.memory_budget_bytes] {
    ingester.SetWatchDirs(watch);
    ingester.SetLifecycle(retention, budget);
  });
}

// The daemon is stopping; a service manager that is still impatient sends SIGKILL.
void IgnoreStopSignals() {
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, nullptr);
  ::sigaction(SIGTERM, &ignore, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jitsym;
  // A process that reads native files for the daemon (parse_worker/worker_main.h).
  if (argc >= 2 && std::string(argv[1]) == parse_worker::kWorkerFlag) {
    return parse_worker::RunParseWorker(std::vector<std::string>(argv + 1, argv + argc));
  }
  config::CommandLine command_line;
  if (auto st = config::ParseCommandLine(argc, argv, &command_line); !st.ok()) {
    UsageError(st.error().message);
  }
  if (command_line.help) {
    std::fputs(kUsageHead, stdout);
    std::fputs(config::OptionsHelp().c_str(), stdout);
    return 0;
  }
  if (command_line.version) {
    std::printf("jitsymd %s (protocol %d)\n", JITSYM_VERSION, proto::kProtocolVersion);
    return 0;
  }
  bool config_found = false;
  Settings settings = LoadSettings(command_line, &config_found);
  if (command_line.print_config) {
    std::fputs(config::FormatConfig(settings).c_str(), stdout);
    // What the descriptor limit makes of them: the soft limit is raised to the hard one at start.
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
      const uint64_t nofile =
          rl.rlim_max == RLIM_INFINITY ? (1u << 20) : static_cast<uint64_t>(rl.rlim_max);
      std::printf("# descriptor budget: %s\n",
                  config::FormatDescriptorBudget(BudgetFor(nofile, settings)).c_str());
    }
    return 0;
  }
  log::SetLevel(LevelOf(settings));
  // The process that starts the workers which make calls on FUSE filesystems (a server that
  // never answers holds a worker, never a thread of the daemon: os/fs_workers.h). Forked now,
  // while the daemon is small and has one thread.
  os::FsWorkers::Shared().Prepare();
  JITSYM_LOG(kInfo, config_found ? "settings from " : "no config file at ",
             command_line.config_path,
             config_found ? " and the command line" : "; defaults and the command line apply");
  ::signal(SIGPIPE, SIG_IGN);
#ifdef __GLIBC__
  // Request lines, decoded lookups and answer slices are large and short-lived: mapped on
  // their own, they go back to the system when freed, so the resident size follows the
  // request memory budget instead of its high-water mark (glibc would otherwise raise the
  // threshold to 32 MiB after the first such free and keep them in its heap).
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  const config::DescriptorBudget descriptors = BudgetFor(RaiseDescriptorLimit(), settings);
  JITSYM_LOG(kInfo, "descriptor budget: ", config::FormatDescriptorBudget(descriptors));
  // Copies of split units a killed daemon left behind (native/split_units.h).
  if (const native::RemovedCopies removed = native::RemoveLeftoverSplitCopies();
      removed.directories > 0) {
    JITSYM_LOG(kInfo, "removed ", removed.directories,
               removed.directories == 1 ? " directory" : " directories",
               " of split-unit copies left by daemons that are gone (", removed.bytes >> 20,
               " MiB)");
  }
  for (const std::string& lowered :
       config::DescribeLoweredLimits(WishesOf(settings), descriptors)) {
    JITSYM_LOG(kWarning, lowered);
  }

  index::ViewCell cell;
  boost::asio::io_context ingest_io;
  boost::asio::io_context server_io;

  ingest::IngesterOptions ingest_options;
  ingest_options.watch_dirs = settings.watch;
  ingest_options.discovery_ms =
      static_cast<int>(std::min<uint64_t>(settings.discovery_interval_ms, 3600ull * 1000));
  ingest_options.retention_ms = settings.retention_ms;
  ingest_options.memory_budget_bytes = settings.memory_budget_bytes;
  ingest_options.pending_timeout_ms =
      static_cast<int>(std::min<uint64_t>(settings.pending_timeout_ms, 24ull * 3600 * 1000));
  security::Limits& limits = ingest_options.limits;
  limits.file_bytes = settings.limit_file_bytes;
  limits.file_ranges = settings.limit_file_ranges;
  limits.user_bytes = settings.limit_user_bytes;
  limits.user_files = descriptors.user_files;
  limits.total_bytes = settings.limit_total_bytes;
  limits.total_files = descriptors.total_files;
  // Per-user shares are per person: a user's subordinate uids (/etc/subuid) count as his.
  security::Accounts accounts;
  auto person_of = [&accounts](uint32_t uid) { return accounts.PersonOf(uid); };
  // One ledger for what every user's files make the daemon hold, whichever thread reads them.
  auto ledger = std::make_shared<security::LimitLedger>(limits, person_of);
  ingest_options.ledger = ledger;
  query::QueryEngine::Options query_options;
  security::AccessPolicy& access = query_options.access;
  if (!settings.trusted_group.empty()) {
    access.trusted_gid = security::ResolveGroup(settings.trusted_group);
    if (!access.trusted_gid) UsageError("trusted-group: no group '" + settings.trusted_group + "'");
  }
  query_options.images.search_dirs = settings.r2rmap_dirs;
  query_options.images.ledger = ledger;
  query_options.processes.perfinfo.ledger = ledger;
  if (!settings.debug_dirs.empty()) query_options.native.debug_dirs = settings.debug_dirs;
  query_options.native.cache_bytes = static_cast<size_t>(settings.debug_cache_mb) << 20;
  // Native files are read in sandboxed processes of each file's owner, never in this one.
  query_options.native.workers = true;
  query_options.native.pool.address_space_bytes = settings.parse_worker_memory_bytes;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer reserves terabytes of address space for its shadow: no RLIMIT_AS there.
  query_options.native.pool.address_space_bytes = 0;
#endif
  query_options.native.pool.timeout_ms = std::max<uint64_t>(settings.parse_worker_timeout_ms, 100);
  query_options.native.pool.log_level = settings.log_level;
  query_options.native.pool.prestart_root = true;
  query_options.native.pool.per_group = static_cast<size_t>(std::max(settings.threads, 2));
  // A module's inflated debug sections count against its owner's quota as side files do.
  query_options.native.pool.inflate_bytes = settings.limit_user_bytes;
  ingest::Ingester ingester(ingest_io, ingest_options, cell);

  server::Server* server_ptr = nullptr;
  query::QueryEngine engine(
      cell, [&server_ptr] { return server_ptr ? server_ptr->counters() : server::Counters{}; },
      std::move(query_options));
  server::ServerOptions server_options;
  server_options.max_connections = descriptors.connections;
  server_options.max_user_connections = descriptors.user_connections;
  // Root's reserve: enough for an administrator's ping and stats while users fill the rest.
  server_options.privileged_connections = std::min<size_t>(16, descriptors.connections / 8);
  server_options.idle_timeout = std::chrono::milliseconds(settings.idle_timeout_ms);
  server_options.request_timeout = std::chrono::milliseconds(settings.request_timeout_ms);
  server_options.max_buffered_request_bytes = settings.request_memory_bytes;
  server_options.max_user_request_bytes = settings.user_request_memory_bytes;
  server_options.person_of = person_of;
  // A request may wait on a worker (a native file's parser, a FUSE mount): one person's requests
  // never hold every query thread.
  server_options.person_threads = static_cast<size_t>(std::max(settings.threads - 1, 1));
  server::Server server(server_io, engine, std::move(server_options));
  server_ptr = &server;

  // The initial scan (Start) reads every file already in the watch directories before the
  // socket is served, so that the first answers after a restart are complete.
  std::string serving;
  try {
    std::optional<int> passed = service::TakeListeningSocket();
    ingester.Start();
    service::Notify("STATUS=reading the files in the watch directories");
    ingester.DrainBacklog();
    if (passed) {
      server.Adopt(*passed);
      serving = "the socket passed by systemd";
    } else {
      server.Listen(settings.socket);
      serving = settings.socket;
    }
  } catch (const std::exception& e) {
    JITSYM_LOG(kError, e.what());
    service::Notify("STATUS=failed to start: " + service::StatusLine(e.what()));
    return 1;
  }
  service::Watchdog watchdog(ingest_io, server_io, [&cell] { return IndexStatus(cell); });

  // SIGHUP: read the config file again; the command line still overrides it. A bad file keeps
  // the running settings.
  boost::asio::signal_set hup(server_io, SIGHUP);
  std::function<void()> wait_hup = [&] {
    hup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      service::Notify("RELOADING=1");
      Settings next;
      if (auto st = config::BuildSettings(command_line, &next); !st.ok()) {
        JITSYM_LOG(kError, "reload: ", st.error().message, "; keeping the running settings");
      } else {
        config::ResolveHostDefaults(next);
        for (const config::SettingDef* def : config::ChangedSettings(settings, next)) {
          if (def->apply == config::Apply::kRestart) {
            JITSYM_LOG(kWarning, "reload: ", def->name, " changed; it takes effect on restart");
          }
        }
        ApplyReloadable(next, &settings, ingester, ingest_io);
        JITSYM_LOG(kInfo, "reloaded ", command_line.config_path);
      }
      service::Notify("READY=1\nSTATUS=" + IndexStatus(cell));
      wait_hup();
    });
  };
  wait_hup();

  // Once stopping, a further SIGINT or SIGTERM changes nothing: the set holds it while it
  // lives, and when it is dropped (below) the signals are ignored from then on, so one during
  // the destructors and the exit still leaves a clean exit status.
  std::optional<boost::asio::signal_set> signals(std::in_place, server_io, SIGINT, SIGTERM);
  signals->async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    JITSYM_LOG(kInfo, "received ", ::strsignal(sig), "; stopping");
    service::Notify("STOPPING=1");
    hup.cancel();
    server.Stop();
    boost::asio::post(ingest_io, [&] {
      watchdog.Stop();
      ingester.Stop();
      ingest_io.stop();
    });
  });

  // Ready only once the signal handlers are in place: a SIGTERM right after READY must stop
  // the daemon cleanly, not kill it.
  JITSYM_LOG(kInfo, "ready: serving ", serving, " with ", settings.threads,
             " query threads (jitsymd ", JITSYM_VERSION, ")");
  service::Notify("READY=1\nSTATUS=" + IndexStatus(cell));
  watchdog.Start();

  std::thread ingest_thread([&] { ingest_io.run(); });
  std::vector<std::thread> query_threads;
  for (int i = 1; i < settings.threads; ++i) query_threads.emplace_back([&] { server_io.run(); });
  server_io.run();
  for (auto& t : query_threads) t.join();
  ingest_thread.join();
  signals.reset();  // restores the default action, which kills
  IgnoreStopSignals();
  JITSYM_LOG(kInfo, "stopped");
  return 0;
}
