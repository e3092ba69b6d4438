// The watcher of watcher.h: inotify events and directory scans.
#include "daemon/ingest/watcher.h"

#include <dirent.h>
#include <sys/inotify.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "daemon/ingest/source.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {
namespace {

constexpr uint32_t kDirMask = IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                              IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

}  // namespace

Watcher::Watcher(boost::asio::io_context& io, Handlers handlers)
    : io_(io), handlers_(std::move(handlers)) {
  event_buf_.resize(64 * 1024);
}

Watcher::~Watcher() = default;

void Watcher::Open(const std::vector<std::string>& dirs) {
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) throw std::system_error(errno, std::generic_category(), "inotify_init1");
  inotify_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, inotify_fd_);
  for (const std::string& dir : dirs) AddWatch(dir);
}

void Watcher::Close() {
  closed_ = true;
  if (inotify_) inotify_->close();
}

bool Watcher::AddWatch(const std::string& dir) {
  int wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), kDirMask);
  if (wd < 0) {
    JITSYM_LOG(kError, "cannot watch ", dir, ": ", std::strerror(errno));
    return false;
  }
  const size_t before = dirs_.size();
  dirs_[wd] = dir;
  JITSYM_LOG(kInfo, "watching ", dir);
  return dirs_.size() != before;  // false: a directory already watched under another name
}

std::optional<std::string> Watcher::WatchFound(const std::string& dir, bool scan) {
  if (closed_ || inotify_fd_ < 0) return std::nullopt;
  const int wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), kDirMask | IN_DONT_FOLLOW);
  if (wd < 0) {
    JITSYM_LOG(kWarning, "cannot watch ", dir, ": ", std::strerror(errno));
    return std::nullopt;
  }
  if (auto it = dirs_.find(wd); it != dirs_.end()) return it->second;
  dirs_[wd] = dir;
  found_.insert(wd);
  JITSYM_LOG(kInfo, "watching ", dir, " (found, not configured)");
  if (scan) Scan(dir);
  return dir;
}

void Watcher::RenameFound(const std::string& from, const std::string& to) {
  for (auto& [wd, d] : dirs_) {
    if (d == from && found_.count(wd)) d = to;
  }
}

void Watcher::UnwatchFound(const std::string& dir) {
  for (auto it = dirs_.begin(); it != dirs_.end(); ++it) {
    if (it->second == dir && found_.count(it->first)) {
      ::inotify_rm_watch(inotify_fd_, it->first);
      found_.erase(it->first);
      dirs_.erase(it);
      JITSYM_LOG(kInfo, "not watching ", dir, " any more (files already followed stay)");
      return;
    }
  }
}

bool Watcher::IsFound(const std::string& dir) const {
  for (const auto& [wd, d] : dirs_) {
    if (d == dir) return found_.count(wd) > 0;
  }
  return false;
}

void Watcher::ScanAll() {
  for (const auto& [wd, dir] : dirs_) Scan(dir);
}

void Watcher::Scan(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    JITSYM_LOG(kError, "cannot scan ", dir, ": ", std::strerror(errno));
    return;
  }
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (MatchFile(name)) handlers_.found(dir, name);
  }
  ::closedir(d);
}

void Watcher::SetDirs(const std::vector<std::string>& dirs) {
  if (closed_ || inotify_fd_ < 0) return;
  std::vector<std::string> added;
  for (const std::string& dir : dirs) {
    bool known = false;
    for (const auto& [wd, d] : dirs_) known = known || d == dir;
    if (!known) added.push_back(dir);
  }
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (!found_.count(it->first) && std::find(dirs.begin(), dirs.end(), it->second) == dirs.end()) {
      JITSYM_LOG(kInfo, "not watching ", it->second, " any more (files already followed stay)");
      ::inotify_rm_watch(inotify_fd_, it->first);
      it = dirs_.erase(it);
    } else {
      ++it;
    }
  }
  for (const std::string& dir : added) {
    if (AddWatch(dir)) Scan(dir);
  }
}

void Watcher::Listen() { ReadEvents(); }

void Watcher::ReadEvents() {
  inotify_->async_read_some(
      boost::asio::buffer(event_buf_), [this](const boost::system::error_code& ec, size_t n) {
        if (ec || closed_) {
          if (ec != boost::asio::error::operation_aborted && !closed_) {
            JITSYM_LOG(kError, "inotify read failed: ", ec.message());
          }
          return;
        }
        size_t off = 0;
        while (off + sizeof(inotify_event) <= n) {
          inotify_event ev;
          std::memcpy(&ev, event_buf_.data() + off, sizeof(ev));
          const char* name_ptr = event_buf_.data() + off + sizeof(inotify_event);
          const std::string name = ev.len ? std::string(name_ptr, ::strnlen(name_ptr, ev.len)) : "";
          off += sizeof(inotify_event) + ev.len;
          if (ev.mask & IN_Q_OVERFLOW) {
            JITSYM_LOG(kWarning, "inotify queue overflowed; rescanning watch directories");
            ScanAll();
            continue;
          }
          auto dir_it = dirs_.find(ev.wd);
          if (dir_it == dirs_.end()) continue;
          if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
            JITSYM_LOG(kWarning, "watch directory ", dir_it->second,
                       " was removed or moved; not watched any more");
            found_.erase(dir_it->first);
            dirs_.erase(dir_it);
            continue;
          }
          if (name.empty()) continue;
          handlers_.event(dir_it->second, name, ev.mask);
        }
        handlers_.batch_done();
        ReadEvents();
      });
}

}  // namespace jitsym::ingest
