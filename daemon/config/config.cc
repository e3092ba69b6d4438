#include "daemon/config/config.h"

#include <errno.h>

#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "daemon/os/small_file.h"

namespace jitsym::config {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// Strips a comment: "#" at the start or after a blank.
std::string_view StripComment(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || IsBlank(line[i - 1]))) return line.substr(0, i);
  }
  return line;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  return out;
}

Error Usage(std::string message) { return MakeError(ErrorKind::kUsage, std::move(message)); }
Error Malformed(std::string message) {
  return MakeError(ErrorKind::kMalformed, std::move(message));
}
// A setting's error ("takes a number ...") named after where the value came from.
Error Prefixed(std::string prefix, Error e) {
  e.message.insert(0, prefix);
  return e;
}

}  // namespace

Status ParseCommandLine(int argc, const char* const* argv, CommandLine* out) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out->help = true;
      continue;
    }
    if (arg == "--version") {
      out->version = true;
      continue;
    }
    if (arg == "--print-config") {
      out->print_config = true;
      continue;
    }
    if (!arg.starts_with("--") || arg.size() == 2) {
      return Usage("unknown option '" + Printable(arg) + "'");
    }
    std::string_view name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string_view::npos) {
      value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    const SettingDef* def = FindSetting(name);
    if (name != "config" && def == nullptr) return Usage("unknown option '" + Printable(arg) + "'");
    if (!value) {
      if (def != nullptr && def->binding.flag) {
        value = "true";
      } else if (i + 1 >= argc) {
        return Usage("--" + std::string(name) + " needs a value");
      } else {
        value = argv[++i];
      }
    }
    if (def == nullptr) {  // --config
      if (value->empty()) return Usage("--config needs a file name");
      out->config_path = *value;
      out->config_given = true;
      continue;
    }
    // Check the value now, so that a typo is reported as an option error.
    Settings scratch;
    if (Status st = def->binding.parse(scratch, *value); !st.ok()) {
      return Prefixed("--" + std::string(def->name) + " ", std::move(st).error());
    }
    out->values.emplace_back(def, std::move(*value));
  }
  return OkStatus();
}

Status ParseConfigText(std::string_view text, std::string_view origin, Settings* settings) {
  std::map<std::string_view, int> seen;  // single-valued settings -> line
  std::set<std::string_view> cleared;    // repeatable settings: the file replaces the defaults
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::string where = std::string(origin) + ":" + std::to_string(line_no) + ": ";
    if (line.find('\0') != std::string_view::npos) return Malformed(where + "contains a NUL byte");
    line = Trim(StripComment(line));
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Malformed(where + "expected 'name = value', got '" + Printable(line) + "'");
    }
    const std::string_view name = Trim(line.substr(0, eq));
    const std::string_view value = Trim(line.substr(eq + 1));
    const SettingDef* def = FindSetting(name);
    if (def == nullptr) return Malformed(where + "unknown setting '" + Printable(name) + "'");
    if (!def->binding.repeatable) {
      auto [it, fresh] = seen.emplace(def->name, line_no);
      if (!fresh) {
        return Malformed(where + "'" + std::string(def->name) + "' is already set on line " +
                         std::to_string(it->second));
      }
    } else if (cleared.insert(def->name).second) {
      def->binding.clear(*settings);
    }
    if (Status st = def->binding.parse(*settings, value); !st.ok()) {
      return Prefixed(where + std::string(def->name) + " ", std::move(st).error());
    }
  }
  return OkStatus();
}

Status LoadConfigFile(const std::string& path, bool must_exist, Settings* settings, bool* found) {
  if (found) *found = false;
  // A character device is allowed for --config /dev/null (no settings).
  SmallFileOptions options;
  options.max_bytes = kMaxConfigBytes;
  options.allow_char_device = true;
  SmallFileError error;
  auto file = os::ReadSmallFile(path, options, &error);
  if (!file) {
    switch (error.kind) {
      case SmallFileError::kOpen:
        if (error.errno_value == ENOENT && !must_exist) return OkStatus();
        return MakeError(ErrorKind::kIo, "cannot open config file " + path + ": " +
                                             std::strerror(error.errno_value));
      case SmallFileError::kNotRegular:
      case SmallFileError::kRefused:
        return MakeError(ErrorKind::kUsage, "config file " + path + " is not a regular file");
      case SmallFileError::kRead:
        return MakeError(ErrorKind::kIo, "cannot read config file " + path + ": " +
                                             std::strerror(error.errno_value));
      case SmallFileError::kTooLarge:
        return MakeError(ErrorKind::kLimit, "config file " + path + " is larger than " +
                                                std::to_string(kMaxConfigBytes) + " bytes");
      case os::SmallFileError::kUnanswered:
        return MakeError(ErrorKind::kIo, "cannot read config file " + path + ": " + error.why);
    }
  }
  const std::string& text = file->bytes;
  if (found) *found = true;
  return ParseConfigText(text, path, settings);
}

Status BuildSettings(const CommandLine& command_line, Settings* out, bool* file_found) {
  Settings s;
  if (Status st =
          LoadConfigFile(command_line.config_path, command_line.config_given, &s, file_found);
      !st.ok()) {
    return st;
  }
  std::set<const SettingDef*> cleared;
  for (const auto& [def, value] : command_line.values) {
    if (def->binding.repeatable && cleared.insert(def).second) def->binding.clear(s);
    if (Status st = def->binding.parse(s, value); !st.ok()) {
      return Prefixed("--" + std::string(def->name) + " ", std::move(st).error());
    }
  }
  *out = std::move(s);
  return OkStatus();
}

std::string OptionsHelp() {
  std::string out;
  auto add = [&out](std::string left, std::string_view help) {
    constexpr size_t kColumn = 24;
    out += "  " + left;
    bool first = true;
    while (!help.empty()) {
      const size_t nl = help.find('\n');
      std::string_view piece = help.substr(0, nl);
      help = nl == std::string_view::npos ? std::string_view() : help.substr(nl + 1);
      const size_t used = first ? 2 + left.size() : 0;
      if (!first || used >= kColumn) {
        if (first) out += '\n';
        out += std::string(kColumn, ' ');
      } else {
        out += std::string(kColumn - used, ' ');
      }
      out += piece;
      out += '\n';
      first = false;
    }
  };
  add("--config FILE", "config file (default: " + std::string(kDefaultConfigPath) +
                           "; settings\n"
                           "on the command line override it)");
  for (const SettingDef& def : AllSettings()) {
    std::string left = "--" + std::string(def.name);
    if (!def.binding.flag) left += " " + std::string(def.metavar);
    add(left, def.help);
  }
  add("--print-config", "print the effective settings in config file syntax and exit");
  add("--version", "print the version and exit");
  add("-h, --help", "print this help and exit");
  return out;
}

std::string FormatConfig(const Settings& settings) {
  std::string out;
  for (const SettingDef& def : AllSettings()) {
    for (const std::string& v : def.binding.format(settings)) {
      out += std::string(def.name) + " = " + v + "\n";
    }
  }
  return out;
}

std::vector<const SettingDef*> ChangedSettings(const Settings& a, const Settings& b) {
  std::vector<const SettingDef*> changed;
  for (const SettingDef& def : AllSettings()) {
    if (def.binding.format(a) != def.binding.format(b)) changed.push_back(&def);
  }
  return changed;
}

}  // namespace jitsym::config
