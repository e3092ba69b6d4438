// The watcher of watcher.h: inotify events and directory scans.
#include "daemon/ingest/watcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "daemon/ingest/source.h"
#include "daemon/os/guarded_fs.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {
namespace {

constexpr uint32_t kDirMask = IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                              IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// inotify_add_watch looks its path up, which on a FUSE filesystem asks the server (and may
// wait forever): the directory is reached by a walk that never does (os/guarded_fs.h), and
// watched through its descriptor. A directory on a FUSE filesystem gets no watch (nullopt,
// *why says so, *guarded is set): its files are read through workers, polled.
std::optional<int> AddWatchAt(int inotify_fd, const std::string& dir, bool no_follow,
                              std::string* why, bool* guarded) {
  os::WalkOptions options;
  options.no_follow_last = no_follow;
  auto e = os::Walk(dir, options);
  if (!e) {
    *why = e.error().message;
    return std::nullopt;
  }
  if (e->error != 0) {
    *why = std::strerror(e->error);
    return std::nullopt;
  }
  if (!S_ISDIR(e->st.st_mode)) {
    *why = std::strerror(S_ISLNK(e->st.st_mode) ? ELOOP : ENOTDIR);
    return std::nullopt;
  }
  if (e->fd.guarded()) {
    const os::Mount& m = os::MountFor(e->fd);
    *why = "it is on " + m.Describe() + " (" + m.guard_reason + ")";
    *guarded = true;
    return std::nullopt;
  }
  const std::string self = "/proc/self/fd/" + std::to_string(e->fd.get());
  const int wd = ::inotify_add_watch(inotify_fd, self.c_str(), kDirMask);
  if (wd < 0) {
    *why = std::strerror(errno);
    return std::nullopt;
  }
  return wd;
}

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
  std::string why;
  bool guarded = false;
  const std::optional<int> added =
      AddWatchAt(inotify_fd_, dir, /*no_follow=*/false, &why, &guarded);
  if (!added) {
    JITSYM_LOG(kError, "cannot watch ", dir, ": ", why);
    return false;
  }
  const int wd = *added;
  const size_t before = dirs_.size();
  dirs_[wd] = dir;
  JITSYM_LOG(kInfo, "watching ", dir);
  return dirs_.size() != before;  // false: a directory already watched under another name
}

std::optional<std::string> Watcher::WatchFound(const std::string& dir, bool scan) {
  if (closed_ || inotify_fd_ < 0) return std::nullopt;
  std::string why;
  bool guarded = false;
  const std::optional<int> added = AddWatchAt(inotify_fd_, dir, /*no_follow=*/true, &why, &guarded);
  if (!added) {
    if (guarded) {
      JITSYM_LOG(kInfo, "not watching ", dir, " with inotify: ", why,
                 "; its files are read through workers, polled");
    } else {
      JITSYM_LOG(kWarning, "cannot watch ", dir, ": ", why);
    }
    return std::nullopt;
  }
  const int wd = *added;
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
  auto e = os::Walk(dir);
  if (!e || e->error != 0) {
    JITSYM_LOG(kError, "cannot scan ", dir, ": ",
               !e ? e.error().message : std::string(std::strerror(e->error)));
    return;
  }
  if (e->fd.guarded()) {
    // Listed by a worker (a directory of a FUSE filesystem), a bounded number of names.
    constexpr size_t kMaxNames = 65536;
    auto names = os::ListGuardedDir(e->fd, kMaxNames);
    if (!names) {
      JITSYM_LOG(kInfo, "cannot scan ", dir, ": ", names.error().message);
      return;
    }
    for (const std::string& name : *names) {
      if (MatchFile(name)) handlers_.found(dir, name);
    }
    return;
  }
  const std::string self = "/proc/self/fd/" + std::to_string(e->fd.get());
  const int fd = ::open(self.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (d == nullptr) {
    JITSYM_LOG(kError, "cannot scan ", dir, ": ", std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return;
  }
  while (dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
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
