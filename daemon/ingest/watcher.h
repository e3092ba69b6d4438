// The watcher: tells the ingester which files in the watch directories appeared, changed or went
// away. inotify through Asio (no polling); a scan of a directory when it starts being watched,
// and of every watch directory again when the kernel's event queue overflowed (events were
// lost); watch directories changed at run time (SIGHUP). It knows file names only: which names
// matter (MatchFile) and what an event means for a followed file are the ingester's.
#ifndef JITSYM_DAEMON_INGEST_WATCHER_H_
#define JITSYM_DAEMON_INGEST_WATCHER_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace jitsym::ingest {

class Watcher {
 public:
  struct Handlers {
    // An inotify event (IN_* `mask`) for `name` in the watch directory `dir`.
    std::function<void(const std::string& dir, const std::string& name, uint32_t mask)> event;
    // A scan found `name` in `dir`, a name MatchFile recognises.
    std::function<void(const std::string& dir, const std::string& name)> found;
    // The events of one read were handled.
    std::function<void()> batch_done;
  };

  Watcher(boost::asio::io_context& io, Handlers handlers);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Creates the inotify instance and watches `dirs` (a missing one is logged and skipped);
  // throws std::system_error if inotify is unavailable. Scans nothing: ScanAll.
  void Open(const std::vector<std::string>& dirs);
  // Reports every recognised file of every watch directory through `found`.
  void ScanAll();
  // Starts reading events.
  void Listen();
  void Close();
  // Watches the directories of `dirs` that are new (and scans them), stops watching those that
  // are not in it any more.
  void SetDirs(const std::vector<std::string>& dirs);
  bool open() const { return inotify_fd_ >= 0; }

  // Directories found rather than configured (a JIT process's working directory, a
  // container's /tmp through /proc/PID/root): SetDirs leaves them alone. Watches `dir`
  // (without following a symlink in its last component) and scans it if `scan`; returns the
  // name the directory is watched under: `dir`, or the earlier name of the same directory
  // (a configured one, say) when it was already watched. nullopt if it cannot be watched.
  std::optional<std::string> WatchFound(const std::string& dir, bool scan);
  // The found directory watched as `from` is now reached as `to` (the process it was reached
  // through exited): later events name `to`.
  void RenameFound(const std::string& from, const std::string& to);
  void UnwatchFound(const std::string& dir);
  // Reports the recognised files of `dir` through `found`, watched or not.
  void ScanDir(const std::string& dir) { Scan(dir); }
  // Whether `dir` is watched as a found directory (not a configured one).
  bool IsFound(const std::string& dir) const;

 private:
  // True if the directory is newly watched (false: cannot be, logged; or already was).
  bool AddWatch(const std::string& dir);
  void Scan(const std::string& dir);
  void ReadEvents();

  boost::asio::io_context& io_;
  Handlers handlers_;
  int inotify_fd_ = -1;
  std::unique_ptr<boost::asio::posix::stream_descriptor> inotify_;
  std::vector<char> event_buf_;
  std::unordered_map<int, std::string> dirs_;  // wd -> dir
  std::unordered_set<int> found_;              // wds of found directories
  bool closed_ = false;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_WATCHER_H_
