// Logging: one line per event on stderr, with a level. Under systemd (JOURNAL_STREAM names the
// stderr stream) each line carries a "<N>" syslog priority prefix so the journal records the
// level.
#ifndef JITSYM_DAEMON_UTIL_LOG_H_
#define JITSYM_DAEMON_UTIL_LOG_H_

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace jitsym::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLevel(Level level);
Level GetLevel();
std::optional<Level> ParseLevel(std::string_view name);
bool Enabled(Level level);
void Write(Level level, std::string_view message);
// The line Write writes, without its final newline: "jitsymd: warning: MESSAGE" ("<4>" first
// under the journal), newlines in the message made spaces. For a writer that cannot call Write:
// a signal handler formats its line ahead of time.
std::string Format(Level level, std::string_view message);

// Concatenates its arguments as an ostream would print them.
template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace jitsym::log

// JITSYM_LOG(kWarning, "file ", path, ": offset ", off, ": ", why);
#define JITSYM_LOG(level, ...)                                                            \
  do {                                                                                    \
    if (::jitsym::log::Enabled(::jitsym::log::Level::level))                              \
      ::jitsym::log::Write(::jitsym::log::Level::level, ::jitsym::log::Cat(__VA_ARGS__)); \
  } while (0)

#endif  // JITSYM_DAEMON_UTIL_LOG_H_
