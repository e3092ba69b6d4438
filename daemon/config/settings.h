// Every setting of jitsymd, in one table shared by the command line (--name VALUE) and the
// config file (name = VALUE): the table gives each setting its name, value syntax, help text,
// whether SIGHUP applies it, and the Settings field it fills. See settings.cc for the table and
// how to add a setting, and config.h for the parsers.
#ifndef JITSYM_DAEMON_CONFIG_SETTINGS_H_
#define JITSYM_DAEMON_CONFIG_SETTINGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/util/result.h"

namespace jitsym::config {

// The values of every setting. Defaults here are what applies when neither the config file nor
// the command line names a setting; empty/0 values that depend on the host (socket path, thread
// count) are resolved by ResolveHostDefaults().
struct Settings {
  std::vector<std::string> watch;        // empty: /tmp
  std::vector<std::string> r2rmap_dirs;  // searched for <image>.ni.r2rmap
  std::vector<std::string> debug_dirs;   // roots of .build-id trees; empty: /usr/lib/debug
  int debug_cache_mb = 1024;             // ELF/DWARF tables of native modules
  uint64_t parse_worker_memory_bytes = 4ull << 30;  // RLIMIT_AS of each parse worker
  uint64_t parse_worker_timeout_ms = 30000;         // one parse worker request
  std::string socket;                               // empty: proto::DefaultSocketPath()
  int threads = 0;                                  // 0: number of CPUs + 1, at least 3
  std::string log_level = "info";
  uint64_t discovery_interval_ms = 1000;      // /proc scans for mapped jitdumps, containers; 0: off
  uint64_t retention_ms = 15 * 60 * 1000;     // exited processes kept this long; 0: until evicted
  uint64_t memory_budget_bytes = 1ull << 30;  // 0: no budget
  // Security (daemon/security/, docs/operations.md "Security model"); the limits' defaults are
  // security::Limits'.
  std::string trusted_group;               // empty: none
  uint64_t pending_timeout_ms = 5000;      // a file for a pid not there yet waits this long
  uint64_t limit_file_bytes = 8ull << 30;  // bytes read from one file
  uint64_t limit_file_ranges = 64ull << 20;
  uint64_t limit_user_bytes = 0;  // 0: security::DefaultUserBytes(physical memory)
  uint64_t limit_user_files = 1024;
  uint64_t limit_total_bytes = 0;  // 0: security::DefaultTotalBytes(physical memory)
  uint64_t limit_total_files = 8192;
  // Clients (daemon/server/, docs/operations.md "Connections and requests"). The connection
  // counts and the file limits above are lowered to fit the descriptor limit
  // (descriptor_budget.h).
  uint64_t max_connections = 1024;
  uint64_t max_user_connections = 64;
  uint64_t idle_timeout_ms = 5 * 60 * 1000;  // 0: none
  uint64_t request_timeout_ms = 30 * 1000;   // 0: none
  uint64_t request_memory_bytes = 320ull << 20;
  uint64_t user_request_memory_bytes = 160ull << 20;
};

// Fills in the host-dependent defaults (watch /tmp, the socket path, the thread count, the byte
// limits from physical memory).
void ResolveHostDefaults(Settings& s);

// When a changed value takes effect.
enum class Apply {
  kReload,   // SIGHUP applies it to the running daemon
  kRestart,  // read at start-up only; SIGHUP logs that a restart is needed
};

// How one setting's text becomes a value in Settings, and back.
struct Binding {
  // Parses `value` into the field (a repeatable setting appends it); a failure (kUsage) says
  // what the setting takes, such as "takes a number from 1 to 256".
  std::function<Status(Settings&, std::string_view value)> parse;
  // The field's value(s) as the config file would spell them (one entry per line).
  std::function<std::vector<std::string>(const Settings&)> format;
  // Clears a repeatable setting, so the command line replaces the file's values.
  std::function<void(Settings&)> clear;
  bool repeatable = false;
  bool flag = false;  // boolean: "--name" alone on the command line means true
};

struct SettingDef {
  std::string_view name;     // "watch": --watch on the command line, "watch = " in the file
  std::string_view metavar;  // "DIR", shown in --help
  std::string_view help;     // one or more lines for --help (wrapped by hand, '\n' separated)
  Apply apply;
  Binding binding;
};

// Binding helpers for the table.
Binding String(std::string Settings::*field);
Binding StringList(std::vector<std::string> Settings::*field);
Binding Int(int Settings::*field, int min, int max);
Binding Uint(uint64_t Settings::*field, uint64_t min, uint64_t max);
Binding Bool(bool Settings::*field);
// A byte count: a number with an optional K, M, G or T suffix (powers of 1024).
Binding Size(uint64_t Settings::*field);
// A duration stored in milliseconds: a number with a unit, ms, s, m, h or d (plain: seconds).
Binding DurationMs(uint64_t Settings::*field);
// One of a fixed set of words; an alias (not shown in errors) stands for one of them.
Binding Choice(std::string Settings::*field, std::vector<std::string> choices,
               std::vector<std::pair<std::string, std::string>> aliases = {});

// The table, in --help order.
std::span<const SettingDef> AllSettings();
const SettingDef* FindSetting(std::string_view name);

// Value parsers, exposed for tests.
std::optional<uint64_t> ParseSize(std::string_view text);
std::optional<uint64_t> ParseDurationMs(std::string_view text);
std::string FormatSize(uint64_t bytes);
std::string FormatDurationMs(uint64_t ms);

}  // namespace jitsym::config

#endif  // JITSYM_DAEMON_CONFIG_SETTINGS_H_
