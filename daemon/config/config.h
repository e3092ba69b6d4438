// jitsymd's configuration: the config file and the command line, both driven by the settings
// table (settings.h). Precedence: built-in defaults, then the file, then the command line; a
// repeatable setting given on the command line replaces the file's values instead of adding
// to them.
//
// Config file grammar (one setting per line; the key is the long option without "--"):
//   line    := blank | comment | setting
//   comment := ws* "#" any*
//   setting := ws* name ws* "=" ws* value ws* ( ws "#" any* )?
// A repeatable setting (watch, r2rmap-dir) may appear on several lines; any other setting at
// most once. Values are taken literally (no quotes, no escapes); a "#" starts a comment only at
// the start of a line or after a blank.
#ifndef JITSYM_DAEMON_CONFIG_CONFIG_H_
#define JITSYM_DAEMON_CONFIG_CONFIG_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/config/settings.h"
#include "daemon/util/result.h"

namespace jitsym::config {

// Where the daemon looks for its config file when --config is not given. A missing file at this
// path is not an error (the defaults apply); a missing file named by --config is.
inline constexpr const char* kDefaultConfigPath = "/etc/jitsymd/jitsymd.conf";
// Config files larger than this are refused (it is a few dozen lines).
inline constexpr size_t kMaxConfigBytes = 1 << 20;

struct CommandLine {
  std::string config_path = kDefaultConfigPath;
  bool config_given = false;  // --config was on the command line
  bool help = false;
  bool version = false;
  bool print_config = false;  // print the effective configuration (file syntax) and exit
  // The table settings given, in order, with their values.
  std::vector<std::pair<const SettingDef*, std::string>> values;
};

// Parses argv (argv[0] is skipped). A failure (kUsage) has a message for the user.
Status ParseCommandLine(int argc, const char* const* argv, CommandLine* out);

// Applies config file text to *settings. `origin` names the file in error messages, which read
// "ORIGIN:LINE: ...".
Status ParseConfigText(std::string_view text, std::string_view origin, Settings* settings);

// Reads the file and applies it to *settings. A missing file is an error only if `must_exist`.
// Sets *found to whether the file existed.
Status LoadConfigFile(const std::string& path, bool must_exist, Settings* settings,
                      bool* found = nullptr);

// The effective settings: defaults, the config file, then the command line (host defaults such
// as the socket path are not resolved here). Used at start-up and again on SIGHUP, when the
// command line still overrides the file.
Status BuildSettings(const CommandLine& command_line, Settings* out, bool* file_found = nullptr);

// The options part of --help, generated from the table.
std::string OptionsHelp();
// The settings in config file syntax, one "name = value" line each (unset values omitted).
std::string FormatConfig(const Settings& settings);
// The settings whose values differ between a and b, in table order.
std::vector<const SettingDef*> ChangedSettings(const Settings& a, const Settings& b);

}  // namespace jitsym::config

#endif  // JITSYM_DAEMON_CONFIG_CONFIG_H_
