#include "daemon/util/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace jitsym::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};

// systemd sets JOURNAL_STREAM=DEV:INODE when stderr is connected to the journal; a process whose
// stderr was redirected since (e.g. started by hand from a service's shell) inherits the
// variable but not the stream, so the prefix is used only if stderr is still that stream.
bool UnderJournal() {
  static const bool journal = [] {
    const char* value = std::getenv("JOURNAL_STREAM");
    if (value == nullptr) return false;
    unsigned long long dev = 0, ino = 0;
    if (std::sscanf(value, "%llu:%llu", &dev, &ino) != 2) return false;
    struct stat st {};
    return ::fstat(STDERR_FILENO, &st) == 0 && static_cast<unsigned long long>(st.st_dev) == dev &&
           static_cast<unsigned long long>(st.st_ino) == ino;
  }();
  return journal;
}

const char* Name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarning:
      return "warning";
    case Level::kError:
      return "error";
  }
  return "?";
}

int SyslogPriority(Level level) {
  switch (level) {
    case Level::kDebug:
      return 7;
    case Level::kInfo:
      return 6;
    case Level::kWarning:
      return 4;
    case Level::kError:
      return 3;
  }
  return 6;
}

}  // namespace

void SetLevel(Level level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
Level GetLevel() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }
bool Enabled(Level level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

std::optional<Level> ParseLevel(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warning" || name == "warn") return Level::kWarning;
  if (name == "error") return Level::kError;
  return std::nullopt;
}

std::string Format(Level level, std::string_view message) {
  std::string line;
  line.reserve(message.size() + 32);
  if (UnderJournal()) {
    line += '<';
    line += static_cast<char>('0' + SyslogPriority(level));
    line += '>';
  }
  line += "jitsymd: ";
  line += Name(level);
  line += ": ";
  // One event, one line: a name read from a hostile file must not forge extra log lines.
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  return line;
}

void Write(Level level, std::string_view message) {
  std::string line = Format(level, message);
  line += '\n';
  // A single write(2) keeps lines from concurrent threads whole.
  static std::mutex mu;
  std::lock_guard lock(mu);
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

}  // namespace jitsym::log
