#include "daemon/config/settings.h"

#include <algorithm>
#include <charconv>
#include <thread>

#include "daemon/security/limits.h"
#include "proto/protocol.h"

namespace jitsym::config {
namespace {

// ===============================================================================================
// THE SETTINGS TABLE. To add a setting:
//   1. add a field with its default to `Settings` in settings.h;
//   2. add one entry below: {"name", "METAVAR", "help text", Apply::kReload or kRestart, binding},
//      the binding being String, StringList, Int, Uint, Bool, Size, DurationMs or Choice
//      (settings.h) of &Settings::field;
//   3. add it to systemd/jitsymd.conf, commented out with its default ("#name = value"; the
//      test integration_service checks that every setting is there);
//   4. read the field where the daemon is wired in daemon/main.cc (for Apply::kReload, also in
//      ApplyReloadable there, which SIGHUP calls).
// The name is the long option without "--" and the key in the config file. --help, the config
// file parser, --print-config and the reload diff all come from this table.
// ===============================================================================================
const std::vector<SettingDef>& Table() {
  static const std::vector<SettingDef> table = {
      {"watch", "DIR", "directory to watch; repeatable (default: /tmp)", Apply::kReload,
       StringList(&Settings::watch)},
      {"r2rmap-dir", "DIR",
       "directory searched for <image>.ni.r2rmap when an image is looked up or\n"
       "a process maps <image>.dll; its maps win over watched ones; repeatable",
       Apply::kRestart, StringList(&Settings::r2rmap_dirs)},
      {"debug-dir", "DIR",
       "root of a .build-id tree of separate debug files (native frames);\n"
       "repeatable (default: /usr/lib/debug)",
       Apply::kRestart, StringList(&Settings::debug_dirs)},
      {"debug-cache-mb", "N",
       "MiB for native modules' ELF/DWARF tables, least recently used\n"
       "dropped first (default: 1024)",
       Apply::kRestart, Int(&Settings::debug_cache_mb, 1, 1 << 20)},
      {"parse-worker-memory", "SIZE",
       "address space of each process that reads native files (ELF, DWARF);\n"
       "a file that needs more answers native_failed (default: 4G)",
       Apply::kRestart, Size(&Settings::parse_worker_memory_bytes)},
      {"parse-worker-timeout", "DURATION",
       "time (and CPU time) a native file's reader has for one lookup before\n"
       "it is killed and the lookup answers native_failed (default: 30s)",
       Apply::kRestart, DurationMs(&Settings::parse_worker_timeout_ms)},
      {"socket", "PATH",
       "listening socket (default: /run/jitsymd/jitsymd.sock for root,\n"
       "$XDG_RUNTIME_DIR/jitsymd.sock otherwise); unused when systemd\n"
       "passes a listening socket",
       Apply::kRestart, String(&Settings::socket)},
      {"threads", "N", "query threads (default: number of CPUs + 1, at least 3)", Apply::kRestart,
       Int(&Settings::threads, 1, 256)},
      {"log-level", "LEVEL", "debug, info, warning or error (default: info)", Apply::kReload,
       Choice(&Settings::log_level, {"debug", "info", "warning", "error"}, {{"warn", "warning"}})},
      {"discovery-interval", "DURATION",
       "how often /proc is scanned for jitdumps processes map outside the\n"
       "watched directories and for containers' /tmp; 0 turns that off\n"
       "(default: 1s)",
       Apply::kRestart, DurationMs(&Settings::discovery_interval_ms)},
      {"retention", "DURATION",
       "how long the symbols of an exited process stay after it exits,\n"
       "e.g. 900, 90s, 15m, 2h; 0 keeps them until the memory budget\n"
       "needs the room (default: 15m)",
       Apply::kReload, DurationMs(&Settings::retention_ms)},
      {"memory-budget", "SIZE",
       "index size above which exited processes are evicted, oldest exit\n"
       "first, e.g. 512M, 2G; 0 means no budget (default: 1G)",
       Apply::kReload, Size(&Settings::memory_budget_bytes)},
      {"trusted-group", "GROUP",
       "members of this group (name or gid) may query every process and\n"
       "image (default: only root and each process's owner)",
       Apply::kRestart, String(&Settings::trusted_group)},
      {"pending-timeout", "DURATION",
       "how long a file naming a pid that does not exist (yet), and not\n"
       "root's, waits for that process before it is ignored (default: 5s)",
       Apply::kRestart, DurationMs(&Settings::pending_timeout_ms)},
      {"limit-file-bytes", "SIZE", "bytes read from one file (default: 8G)", Apply::kRestart,
       Size(&Settings::limit_file_bytes)},
      {"limit-file-ranges", "N", "code ranges indexed from one file (default: 64M)",
       Apply::kRestart, Size(&Settings::limit_file_ranges)},
      {"limit-user-bytes", "SIZE",
       "bytes read (and inflated) from the files one user owns; 0: a quarter\n"
       "of physical memory (default)",
       Apply::kRestart, Size(&Settings::limit_user_bytes)},
      {"limit-user-files", "N", "files one user owns followed at once (default: 1024)",
       Apply::kRestart, Size(&Settings::limit_user_files)},
      {"limit-total-bytes", "SIZE",
       "bytes read (and inflated) from all files; 0: half of physical\n"
       "memory (default)",
       Apply::kRestart, Size(&Settings::limit_total_bytes)},
      {"limit-total-files", "N", "files followed at once (default: 8192)", Apply::kRestart,
       Size(&Settings::limit_total_files)},
      {"max-connections", "N",
       "client connections open at once; lowered to a quarter of the file\n"
       "descriptors left after a reserve (default: 1024)",
       Apply::kRestart, Uint(&Settings::max_connections, 1, 1u << 20)},
      {"max-user-connections", "N",
       "connections one user (not root) may hold; at most half of\n"
       "max-connections (default: 64)",
       Apply::kRestart, Uint(&Settings::max_user_connections, 1, 1u << 20)},
      {"idle-timeout", "DURATION",
       "a connection with no request, or not reading its answer, for this\n"
       "long is closed; 0 never (default: 5m)",
       Apply::kRestart, DurationMs(&Settings::idle_timeout_ms)},
      {"request-timeout", "DURATION",
       "a request line must arrive whole within this long; 0 no limit\n"
       "(default: 30s)",
       Apply::kRestart, DurationMs(&Settings::request_timeout_ms)},
      {"request-memory", "SIZE",
       "memory for long request lines and large lookups in flight, all\n"
       "connections together; beyond it requests are answered busy\n"
       "(default: 320M)",
       Apply::kRestart, Size(&Settings::request_memory_bytes)},
      {"user-request-memory", "SIZE",
       "the share of request-memory one user (not root) may hold\n"
       "(default: 160M)",
       Apply::kRestart, Size(&Settings::user_request_memory_bytes)},
  };
  return table;
}

bool ParseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

void ResolveHostDefaults(Settings& s) {
  if (s.watch.empty()) s.watch.push_back("/tmp");
  if (s.socket.empty()) s.socket = proto::DefaultSocketPath();
  // One more than the CPUs: a person holds at most threads - 1 (ServerOptions::person_threads),
  // so one user's batches still use every core while a thread stays free for the others.
  if (s.threads == 0)
    s.threads = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()) + 1);
  if (s.limit_user_bytes == 0 || s.limit_total_bytes == 0) {
    const uint64_t ram = security::PhysicalMemoryBytes();
    if (s.limit_user_bytes == 0) s.limit_user_bytes = security::DefaultUserBytes(ram);
    if (s.limit_total_bytes == 0) s.limit_total_bytes = security::DefaultTotalBytes(ram);
  }
}

std::span<const SettingDef> AllSettings() { return Table(); }

namespace {
// A value a setting does not take: the message says what it takes ("takes true or false").
Error BadValue(std::string message) { return MakeError(ErrorKind::kUsage, std::move(message)); }
}  // namespace

const SettingDef* FindSetting(std::string_view name) {
  for (const SettingDef& def : Table()) {
    if (def.name == name) return &def;
  }
  return nullptr;
}

Binding String(std::string Settings::*field) {
  Binding b;
  b.parse = [field](Settings& s, std::string_view v) -> Status {
    if (v.empty()) return BadValue("needs a value");
    s.*field = std::string(v);
    return OkStatus();
  };
  b.format = [field](const Settings& s) {
    return s.*field == "" ? std::vector<std::string>{} : std::vector<std::string>{s.*field};
  };
  return b;
}

Binding StringList(std::vector<std::string> Settings::*field) {
  Binding b;
  b.repeatable = true;
  b.parse = [field](Settings& s, std::string_view v) -> Status {
    if (v.empty()) return BadValue("needs a value");
    (s.*field).emplace_back(v);
    return OkStatus();
  };
  b.format = [field](const Settings& s) { return s.*field; };
  b.clear = [field](Settings& s) { (s.*field).clear(); };
  return b;
}

Binding Int(int Settings::*field, int min, int max) {
  Binding b;
  b.parse = [field, min, max](Settings& s, std::string_view v) -> Status {
    int n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < min || n > max) {
      return BadValue("takes a number from " + std::to_string(min) + " to " + std::to_string(max));
    }
    s.*field = n;
    return OkStatus();
  };
  b.format = [field](const Settings& s) {
    return std::vector<std::string>{std::to_string(s.*field)};
  };
  return b;
}

Binding Uint(uint64_t Settings::*field, uint64_t min, uint64_t max) {
  Binding b;
  b.parse = [field, min, max](Settings& s, std::string_view v) -> Status {
    uint64_t n = 0;
    if (!ParseUnsigned(v, &n) || n < min || n > max) {
      return BadValue("takes a number from " + std::to_string(min) + " to " + std::to_string(max));
    }
    s.*field = n;
    return OkStatus();
  };
  b.format = [field](const Settings& s) {
    return std::vector<std::string>{std::to_string(s.*field)};
  };
  return b;
}

Binding Bool(bool Settings::*field) {
  Binding b;
  b.flag = true;
  b.parse = [field](Settings& s, std::string_view v) -> Status {
    if (v == "true" || v == "yes" || v == "on" || v == "1") {
      s.*field = true;
    } else if (v == "false" || v == "no" || v == "off" || v == "0") {
      s.*field = false;
    } else {
      return BadValue("takes true or false");
    }
    return OkStatus();
  };
  b.format = [field](const Settings& s) {
    return std::vector<std::string>{s.*field ? "true" : "false"};
  };
  return b;
}

Binding Size(uint64_t Settings::*field) {
  Binding b;
  b.parse = [field](Settings& s, std::string_view v) -> Status {
    auto n = ParseSize(v);
    if (!n) return BadValue("takes a size such as 4096, 512K, 256M or 2G");
    s.*field = *n;
    return OkStatus();
  };
  b.format = [field](const Settings& s) { return std::vector<std::string>{FormatSize(s.*field)}; };
  return b;
}

Binding DurationMs(uint64_t Settings::*field) {
  Binding b;
  b.parse = [field](Settings& s, std::string_view v) -> Status {
    auto n = ParseDurationMs(v);
    if (!n) return BadValue("takes a duration such as 900 (seconds), 500ms, 90s, 15m, 2h or 1d");
    s.*field = *n;
    return OkStatus();
  };
  b.format = [field](const Settings& s) {
    return std::vector<std::string>{FormatDurationMs(s.*field)};
  };
  return b;
}

Binding Choice(std::string Settings::*field, std::vector<std::string> choices,
               std::vector<std::pair<std::string, std::string>> aliases) {
  Binding b;
  b.parse = [field, choices, aliases](Settings& s, std::string_view v) -> Status {
    for (const auto& [alias, word] : aliases) {
      if (v == alias) v = word;
    }
    if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
      return BadValue("takes one of " + list);
    }
    s.*field = std::string(v);
    return OkStatus();
  };
  b.format = [field](const Settings& s) { return std::vector<std::string>{s.*field}; };
  return b;
}

std::optional<uint64_t> ParseSize(std::string_view text) {
  uint64_t shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        shift = 10;
        break;
      case 'M':
      case 'm':
        shift = 20;
        break;
      case 'G':
      case 'g':
        shift = 30;
        break;
      case 'T':
      case 't':
        shift = 40;
        break;
    }
    if (shift) text.remove_suffix(1);
  }
  uint64_t n = 0;
  if (!ParseUnsigned(text, &n)) return std::nullopt;
  if (shift && n > (UINT64_MAX >> shift)) return std::nullopt;
  return n << shift;
}

std::optional<uint64_t> ParseDurationMs(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    uint64_t ms;
  };
  // "ms" before "m" and "s".
  static constexpr Unit kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000}, {"d", 86400 * 1000}};
  uint64_t scale = 1000;  // plain numbers are seconds
  for (const Unit& u : kUnits) {
    if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
      scale = u.ms;
      text.remove_suffix(u.suffix.size());
      break;
    }
  }
  uint64_t n = 0;
  if (!ParseUnsigned(text, &n) || n > UINT64_MAX / scale) return std::nullopt;
  return n * scale;
}

std::string FormatSize(uint64_t bytes) {
  static constexpr char kSuffix[] = {'T', 'G', 'M', 'K'};
  for (int i = 0; i < 4; ++i) {
    const int shift = 40 - 10 * i;
    if (bytes != 0 && bytes % (1ull << shift) == 0) {
      return std::to_string(bytes >> shift) + kSuffix[i];
    }
  }
  return std::to_string(bytes);
}

std::string FormatDurationMs(uint64_t ms) {
  if (ms == 0) return "0";
  if (ms % (86400 * 1000) == 0) return std::to_string(ms / (86400 * 1000)) + "d";
  if (ms % (3600 * 1000) == 0) return std::to_string(ms / (3600 * 1000)) + "h";
  if (ms % (60 * 1000) == 0) return std::to_string(ms / (60 * 1000)) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace jitsym::config
