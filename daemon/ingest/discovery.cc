// Side files found outside the watch directories (see process_scanner.h): a jitdump a process
// maps wherever it lies, and the private /tmp of a container, reached through /proc/PID/root.
// Either becomes a watched directory of its own (the watcher's "found" directories), so that
// its files are followed as they grow exactly like a configured directory's; what makes a
// directory a container's is recorded for the writer rule (writer_rule.h), which reads the
// pids in its file names as pids of that container.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "daemon/ingest/ingester.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {
namespace {

// Bound on the directories watched because processes map jitdumps in them: each costs an
// inotify watch (the user's max_user_watches).
constexpr size_t kMaxMarkerDirs = 4096;

// "/proc/<pid>/root" + the rest, or "" when `path` is not of that form.
std::string_view AfterProcRoot(std::string_view path) {
  constexpr std::string_view kProc = "/proc/";
  if (!path.starts_with(kProc)) return {};
  const size_t slash = path.find('/', kProc.size());
  if (slash == std::string_view::npos) return {};
  std::string_view rest = path.substr(slash);
  constexpr std::string_view kRoot = "/root/";
  if (!rest.starts_with(kRoot)) return {};
  return rest.substr(kRoot.size() - 1);
}

void RecordDirIdentity(const std::string& dir, DirContext& where) {
  auto e = os::StatPath(dir, /*no_follow_last=*/false);
  if (e && e->error == 0 && S_ISDIR(e->st.st_mode)) {
    where.dir_dev = static_cast<uint64_t>(e->st.st_dev);
    where.dir_ino = static_cast<uint64_t>(e->st.st_ino);
  }
}

}  // namespace

Result<os::OpenedFile> Ingester::OpenInDir(const std::string& dir, const std::string& name) {
  constexpr int kFileFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  auto where = dir_context_.find(dir);
  if (where == dir_context_.end() || where->second.dir_ino == 0) {
    if (const os::PathFd* d = DirFd(dir)) return os::OpenForReadingAt(*d, name, kFileFlags);
    return os::OpenForReading(dir + "/" + name, kFileFlags);
  }
  // The last component must not be a symlink, and the directory reached must be the one found.
  os::WalkOptions options;
  options.no_follow_last = true;
  auto d = os::Walk(dir, options);
  if (!d) return std::move(d).error();
  os::OpenedFile out;
  if (d->error != 0) {
    out.error = d->error;
    return out;
  }
  if (!S_ISDIR(d->st.st_mode) || static_cast<uint64_t>(d->st.st_dev) != where->second.dir_dev ||
      static_cast<uint64_t>(d->st.st_ino) != where->second.dir_ino) {
    JITSYM_LOG(kWarning, dir, ": no longer the directory that was found there; ", name,
               " not opened");
    out.error = ENOENT;
    return out;
  }
  return os::OpenForReadingAt(d->fd, name, kFileFlags);
}

const os::PathFd* Ingester::DirFd(const std::string& dir) {
  if (auto it = dir_fds_.find(dir); it != dir_fds_.end()) return &it->second;
  if (dir_fds_.size() >= kMaxMarkerDirs + options_.watch_dirs.size()) return nullptr;
  auto d = os::Walk(dir);
  if (!d || d->error != 0 || !S_ISDIR(d->st.st_mode) || d->fd.guarded()) return nullptr;
  return &dir_fds_.emplace(dir, std::move(d->fd)).first->second;
}

void Ingester::OnMarker(uint32_t host_pid, const std::string& open_path, uint64_t dev,
                        uint64_t ino) {
  const std::string_view inside = AfterProcRoot(open_path);
  if (inside.empty()) {
    // Reached through /proc/PID/map_files only (deleted or replaced since it was mapped): its
    // name is gone, and with it the pid it names.
    JITSYM_LOG(kDebug, open_path, ": a jitdump mapped by pid ", host_pid,
               " that no longer has a name; not followed");
    return;
  }
  // The same file under the path the daemon sees (a process of the daemon's mount namespace,
  // or a directory shared with it) outlives the process; a container's path does not.
  std::string path = open_path;
  bool via_root = true;
  struct stat st {};
  const std::string plain(inside);
  if (LstatPath(plain, &st) && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_ino) == ino) {
    path = plain;
    via_root = false;
  }
  const size_t slash = path.rfind('/');
  std::string dir = path.substr(0, slash), name = path.substr(slash + 1);
  if (!MatchFile(name)) return;
  if (marker_dirs_.size() >= kMaxMarkerDirs && !marker_dirs_.count(dir)) {
    JITSYM_LOG(kWarning, path, ": not followed: ", kMaxMarkerDirs,
               " directories are watched for mapped jitdumps already");
    return;
  }
  JITSYM_LOG(kInfo, "pid ", host_pid, " maps the jitdump ", path, " (", dev, ":", ino, ")");
  const auto watched = watcher_.WatchFound(dir, /*scan=*/false);
  if (!watched && polled_dirs_.size() < kMaxMarkerDirs) polled_dirs_.insert(dir);
  if (watched && *watched != dir) {
    // Watched already under another name (a configured directory, or the same directory of a
    // container reached through another process): the file is known by that name.
    dir = *watched;
  } else if (!watched || watcher_.IsFound(dir)) {
    // A directory of the process's own mount namespace when reached through its root: names
    // there are its processes'. Either way, files are opened in it only while its path still
    // leads to it.
    DirContext& where = dir_context_[dir];
    if (via_root) {
      const os::ProcessCatalog::Entry* e = catalog_.Find(host_pid);
      where.mnt_ns = e != nullptr ? e->mnt_ns : 0;
      where.via_pid = host_pid;
    }
    if (where.dir_ino == 0) RecordDirIdentity(dir, where);
  }
  marker_dirs_[dir].insert(host_pid);
  Discover(dir, name);
  if (!dirty_.empty() || publish_pending_) PostDrain();
}

void Ingester::OnForeignDir(uint32_t host_pid, uint64_t mnt_ns, const std::string& dir) {
  // Set first: watching scans the directory, and its files' pids are this namespace's.
  DirContext& where = dir_context_[dir];
  where.mnt_ns = mnt_ns;
  where.via_pid = host_pid;
  RecordDirIdentity(dir, where);
  foreign_dirs_.insert(dir);
  JITSYM_LOG(kInfo, "pid ", host_pid, " runs in another mount namespace; watching its /tmp as ",
             dir);
  const auto watched = watcher_.WatchFound(dir, /*scan=*/true);
  if (!watched) {
    // Read again every maintenance tick instead (PollUnwatched).
    if (polled_dirs_.size() < kMaxMarkerDirs) {
      polled_dirs_.insert(dir);
      watcher_.ScanDir(dir);
    } else {
      dir_context_.erase(dir);
      foreign_dirs_.erase(dir);
    }
  } else if (*watched != dir) {
    // The same directory, reported again through another process of the container because
    // the one it was reached through exited: follow it under the living path.
    RepointDir(*watched, dir);
  }
  if (!dirty_.empty() || publish_pending_) PostDrain();
}

void Ingester::OnForeignDirGone(const std::string& dir) {
  watcher_.UnwatchFound(dir);
  dir_fds_.erase(dir);
  polled_dirs_.erase(dir);
  foreign_dirs_.erase(dir);
  if (!marker_dirs_.count(dir)) dir_context_.erase(dir);
}

void Ingester::OnProcessGone(uint32_t host_pid) {
  for (auto it = marker_dirs_.begin(); it != marker_dirs_.end();) {
    it->second.erase(host_pid);
    if (!it->second.empty()) {
      ++it;
      continue;
    }
    // Nobody maps a jitdump there any more: its files were read to their end at the exit.
    if (!foreign_dirs_.count(it->first)) {
      watcher_.UnwatchFound(it->first);
      dir_fds_.erase(it->first);
      polled_dirs_.erase(it->first);
      dir_context_.erase(it->first);
    }
    it = marker_dirs_.erase(it);
  }
}

void Ingester::RepointDir(const std::string& from, const std::string& to) {
  watcher_.RenameFound(from, to);
  for (auto& f : files_) {
    if (f->dir != from) continue;
    auto known = by_path_.find(f->path);
    const bool indexed = known != by_path_.end() && known->second == f.get();
    if (indexed) by_path_.erase(known);
    f->dir = to;
    f->path = to + "/" + f->name;
    if (indexed) by_path_[f->path] = f.get();
  }
  if (auto it = dir_context_.find(from); it != dir_context_.end() && from != to) {
    dir_context_.emplace(to, it->second);  // a context set for `to` (the living path) wins
    dir_context_.erase(from);
  }
  if (foreign_dirs_.erase(from)) foreign_dirs_.insert(to);
  if (auto it = marker_dirs_.find(from); it != marker_dirs_.end() && from != to) {
    marker_dirs_[to] = std::move(it->second);
    marker_dirs_.erase(from);
  }
}

void Ingester::PollUnwatched() {
  std::vector<std::pair<std::string, std::string>> parked;
  for (auto& f : files_) {
    // Files of FUSE filesystems are read through workers, with no inotify event to say they
    // grew: polled wherever they are.
    if (f->mirror && f->fd >= 0) MarkDirty(*f);
    if (!polled_dirs_.count(f->dir)) continue;
    if (f->fd >= 0) MarkDirty(*f);
    // An idle file gave its descriptor back; no event will reopen it, this does (the same
    // inode only).
    if (f->parked) parked.emplace_back(f->dir, f->name);
  }
  for (const auto& [dir, name] : parked) Discover(dir, name);
  // New files of containers' /tmp (marker directories get theirs from the scanner).
  for (const std::string& dir : polled_dirs_) {
    if (foreign_dirs_.count(dir)) watcher_.ScanDir(dir);
  }
  if (!dirty_.empty() || publish_pending_) PostDrain();
}

}  // namespace jitsym::ingest
