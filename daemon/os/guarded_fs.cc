// Path resolution that never blocks on a guarded mount (guarded_fs.h).
#include "daemon/os/guarded_fs.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>

#include "daemon/os/fs_workers.h"

namespace jitsym::os {
namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel (ELOOP)
constexpr size_t kMaxComponents = 4096;

int Openat2(int dirfd, const std::string& path, int flags, uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = resolve;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof(how)));
}

// openat2 is refused with ENOSYS where a seccomp filter cannot look into its flags: systemd's
// RestrictSUIDSGID= does so (jitsymd.service sets it), so that callers fall back to openat.
std::atomic<bool> g_no_openat2{false};

// `name` (one component) of dirfd opened with `flags` without leaving dirfd's mount: EXDEV
// where it would (a mount point, or ".." out of the mount's root), as openat2's
// RESOLVE_NO_XDEV (and, without openat2, for a symlink it would follow: the caller walks). Without
// openat2: the name is looked up with O_PATH, which asks the directory's own filesystem and, for a
// mount point, the mounted one nothing; the mount of what it found is compared with the directory's
// (from the kernel's fdinfo, not statx, which would ask that filesystem); then the object found is
// reopened through /proc/self/fd.
int OpenNoXdev(int dirfd, const std::string& name, int flags) {
  if (!g_no_openat2.load(std::memory_order_relaxed)) {
    const int fd = Openat2(dirfd, name, flags, RESOLVE_NO_XDEV);
    if (fd >= 0 || errno != ENOSYS) return fd;
    g_no_openat2.store(true, std::memory_order_relaxed);
  }
  UniqueFd found(::openat(dirfd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!found.valid()) return -1;
  const std::optional<uint64_t> here = MountIdOf(dirfd);
  const std::optional<uint64_t> there = MountIdOf(found.get());
  if (!here || !there) {
    if (errno == 0) errno = EIO;
    return -1;
  }
  if (*here != *there) {
    errno = EXDEV;
    return -1;
  }
  if ((flags & O_PATH) != 0) return found.release();
  struct stat st {};
  if (::fstat(found.get(), &st) != 0) return -1;
  if (S_ISLNK(st.st_mode)) {
    // O_NOFOLLOW refuses it; else where it leads is for the caller's walk to find out.
    errno = (flags & O_NOFOLLOW) != 0 ? ELOOP : EXDEV;
    return -1;
  }
  const std::string self = "/proc/self/fd/" + std::to_string(found.get());
  return ::open(self.c_str(), (flags & ~O_NOFOLLOW) | O_CLOEXEC);
}

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// The pid after /proc/ in an absolute path, or 0.
uint32_t ProcPidOf(const std::string& path) {
  constexpr std::string_view kProc = "/proc/";
  if (!std::string_view(path).starts_with(kProc)) return 0;
  const size_t end = path.find('/', kProc.size());
  const std::string_view digits = std::string_view(path).substr(
      kProc.size(), end == std::string::npos ? std::string::npos : end - kProc.size());
  uint32_t pid = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  return ec == std::errc() && p == digits.data() + digits.size() ? pid : 0;
}

// Sets *mount to the mount `fd` lies on (null: no table lists it); an errno when the kernel's
// record of the descriptor could not be read (EMFILE: no descriptor to read it with), else 0.
int Classify(int fd, uint32_t ns_pid, std::shared_ptr<const Mount>* mount) {
  errno = 0;
  const std::optional<uint64_t> id = MountIdOf(fd);
  if (!id) return errno != 0 ? errno : EIO;
  *mount = FindMount(*id, ns_pid);
  return 0;
}

Entry Failed(int error) {
  Entry e;
  e.error = error;
  return e;
}

fsworker::Request RequestFor(fsworker::Op op, const std::string& path) {
  fsworker::Request r;
  r.op = op;
  r.path_len = static_cast<uint32_t>(std::min(path.size(), fsworker::kMaxPath - 1));
  std::memcpy(r.path, path.data(), r.path_len);
  return r;
}

std::string Errno(int error) { return std::strerror(error); }

}  // namespace

const Mount& UnlistedMount() {
  static const Mount* m = [] {
    auto* mount = new Mount;
    mount->fstype = "(unlisted)";
    mount->mount_point = "(a mount no mount table lists)";
    mount->guard_reason = "a mount no mount table lists, so nothing is known of its server";
    return mount;
  }();
  return *m;
}

const Mount& MountFor(const PathFd& fd) { return fd.mount() ? *fd.mount() : UnlistedMount(); }

Result<PathFd> PathFd::Dup() const {
  const int fd = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return MakeError(ErrorKind::kIo, path_ + ": " + Errno(errno));
  return PathFd(UniqueFd(fd), mount_, path_, ns_pid_);
}

namespace {

// Sets *out to "/", below which the mounts of `ns_pid`'s table may be met (through
// /proc/PID/root); an errno, or 0.
int RootFor(uint32_t ns_pid, PathFd* out) {
  UniqueFd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  std::shared_ptr<const Mount> mount;
  if (const int error = Classify(fd.get(), 0, &mount); error != 0) return error;
  *out = PathFd(std::move(fd), std::move(mount), "/", ns_pid);
  return 0;
}

}  // namespace

void UseOpenat2ForTesting(bool use) { g_no_openat2.store(!use, std::memory_order_relaxed); }

void PushFrontComponents(const std::string& path, std::deque<std::string>* front) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    const size_t slash = path.find('/', i);
    const size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > i) parts.push_back(path.substr(i, end - i));
    if (slash == std::string::npos) break;
    i = slash + 1;
  }
  front->insert(front->begin(), parts.begin(), parts.end());
}

Result<PathFd> OpenRoot() {
  PathFd root;
  if (const int error = RootFor(0, &root); error != 0) {
    return MakeError(ErrorKind::kIo, "/: " + Errno(error));
  }
  return root;
}

Result<PathFd> OpenProcessRoot(uint32_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/root";
  // The kernel's link to the process's root: following it asks no filesystem.
  UniqueFd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return MakeError(ErrorKind::kIo, path + ": " + Errno(errno));
  std::shared_ptr<const Mount> mount;
  if (const int error = Classify(fd.get(), pid, &mount); error != 0) {
    return MakeError(ErrorKind::kIo, path + ": " + Errno(error));
  }
  return PathFd(std::move(fd), std::move(mount), path, pid);
}

Result<struct stat> StatOf(const PathFd& fd) {
  struct stat st {};
  if (!fd.guarded()) {
    if (::fstat(fd.get(), &st) != 0)
      return MakeError(ErrorKind::kIo, fd.path() + ": " + Errno(errno));
    return st;
  }
  const int fds[] = {fd.get()};
  auto answer = FsWorkers::Shared().Call(MountFor(fd), "stat " + fd.path(),
                                         RequestFor(fsworker::Op::kStat, ""), fds);
  if (!answer) return std::move(answer).error();
  if (answer->reply->error != 0) {
    return MakeError(ErrorKind::kIo, fd.path() + ": " + Errno(answer->reply->error));
  }
  return answer->reply->st;
}

Result<Entry> LookUp(const PathFd& dir, const std::string& name) {
  Entry e;
  const std::string path = Join(dir.path(), name);
  if (!dir.guarded()) {
    // Stays on the directory's mount, or fails with EXDEV where it would leave it.
    UniqueFd fd(OpenNoXdev(dir.get(), name, O_PATH | O_NOFOLLOW));
    std::shared_ptr<const Mount> mount = dir.mount();
    if (!fd.valid() && errno == EXDEV) {
      // A mount point (or ".." out of this mount): entered with O_PATH, which asks the
      // filesystem there nothing; what it is decides the rest.
      fd.reset(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (fd.valid()) {
        if (const int error = Classify(fd.get(), dir.ns_pid(), &mount); error != 0) {
          return Failed(error);
        }
      }
    }
    if (!fd.valid()) {
      e.error = errno;
      return e;
    }
    e.fd = PathFd(std::move(fd), std::move(mount), path, dir.ns_pid());
    if (e.fd.guarded()) {
      auto st = StatOf(e.fd);
      if (!st) return std::move(st).error();
      e.st = *st;
      return e;
    }
    if (::fstat(e.fd.get(), &e.st) != 0) {
      e.error = errno;
      return e;
    }
    if (S_ISLNK(e.st.st_mode)) {
      char target[PATH_MAX + 1];
      const ssize_t n = ::readlinkat(e.fd.get(), "", target, PATH_MAX);
      if (n < 0) {
        e.error = errno;
        return e;
      }
      e.link.assign(target, static_cast<size_t>(n));
    }
    return e;
  }
  const int fds[] = {dir.get()};
  auto answer = FsWorkers::Shared().Call(MountFor(dir), "look up " + path,
                                         RequestFor(fsworker::Op::kLookUp, name), fds);
  if (!answer) return std::move(answer).error();
  const fsworker::Reply& reply = *answer->reply;
  if (reply.error != 0 || !answer->fd.valid()) {
    e.error = reply.error != 0 ? reply.error : EIO;
    return e;
  }
  // Usually the same guarded mount; another one mounted below it, or ".." out of it.
  std::shared_ptr<const Mount> mount;
  if (const int error = Classify(answer->fd.get(), dir.ns_pid(), &mount); error != 0) {
    return Failed(error);
  }
  e.fd = PathFd(std::move(answer->fd), std::move(mount), path, dir.ns_pid());
  e.st = reply.st;
  if (S_ISLNK(e.st.st_mode)) e.link.assign(reply.data, reply.data_len);
  return e;
}

Result<Entry> WalkAt(const PathFd& dir, const std::string& path, const WalkOptions& options) {
  PathFd cur;
  if (path.starts_with('/')) {
    if (const int error = RootFor(dir.ns_pid(), &cur); error != 0) return Failed(error);
  } else {
    const int fd = ::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return Failed(errno);
    cur = PathFd(UniqueFd(fd), dir.mount(), dir.path(), dir.ns_pid());
  }
  std::deque<std::string> todo;
  PushFrontComponents(path, &todo);
  if (todo.empty()) {
    Entry e;
    auto st = StatOf(cur);
    if (!st) return std::move(st).error();
    e.st = *st;
    e.fd = std::move(cur);
    return e;
  }
  int symlinks = 0;
  size_t steps = 0;
  while (!todo.empty()) {
    Entry e;
    if (++steps > kMaxComponents) {
      e.error = ENAMETOOLONG;
      return e;
    }
    const std::string name = std::move(todo.front());
    todo.pop_front();
    const bool last = todo.empty();
    auto found = LookUp(cur, name);
    if (!found) return std::move(found).error();
    e = std::move(*found);
    if (e.error != 0) return e;
    if (S_ISLNK(e.st.st_mode)) {
      if (last && options.no_follow_last) return e;
      if (options.no_symlinks || ++symlinks > kMaxSymlinks) {
        Entry loop;
        loop.error = ELOOP;
        return loop;
      }
      if (cur.mount() && cur.mount()->fstype == "proc") {
        // /proc's links (a process's root, cwd, files): the kernel follows them to the object
        // itself without asking its filesystem anything; what that is is then classified.
        UniqueFd fd(::openat(cur.get(), name.c_str(), O_PATH | O_CLOEXEC));
        if (!fd.valid()) return Failed(errno);
        const uint32_t ns = ProcPidOf(e.fd.path()) ? ProcPidOf(e.fd.path()) : cur.ns_pid();
        std::shared_ptr<const Mount> mount;
        if (const int error = Classify(fd.get(), ns, &mount); error != 0) return Failed(error);
        PathFd target(std::move(fd), std::move(mount), e.fd.path(), ns);
        auto st = StatOf(target);
        if (!st) return std::move(st).error();
        e.st = *st;
        e.link.clear();
        e.fd = std::move(target);
      } else {
        PushFrontComponents(e.link, &todo);
        if (e.link.starts_with('/')) {
          if (const int error = RootFor(cur.ns_pid(), &cur); error != 0) return Failed(error);
        }
        continue;
      }
    }
    if (!todo.empty()) {
      if (!S_ISDIR(e.st.st_mode)) {
        Entry notdir;
        notdir.error = ENOTDIR;
        return notdir;
      }
      cur = std::move(e.fd);
      continue;
    }
    return e;
  }
  Entry e;
  e.error = ENOENT;
  return e;
}

Result<Entry> Walk(const std::string& path, const WalkOptions& options) {
  if (!path.starts_with('/')) return MakeError(ErrorKind::kUsage, path + ": not an absolute path");
  WalkOptions o = options;
  if (o.ns_pid == 0) o.ns_pid = ProcPidOf(path);
  PathFd root;
  if (const int error = RootFor(o.ns_pid, &root); error != 0) return Failed(error);
  return WalkAt(root, path.substr(1), o);
}

Result<Entry> StatPath(const std::string& path, bool no_follow_last) {
  WalkOptions o;
  o.no_follow_last = no_follow_last;
  auto e = Walk(path, o);
  if (e && (e->error == EMFILE || e->error == ENFILE) && !path.starts_with("/proc/")) {
    // No descriptor to walk with: stat(2) itself, where no mount of the daemon's is guarded
    // (a path outside /proc stays in the daemon's mount namespace).
    auto own = OwnMounts();
    if (own && !own->any_guarded()) {
      Entry plain;
      const int r =
          no_follow_last ? ::lstat(path.c_str(), &plain.st) : ::stat(path.c_str(), &plain.st);
      if (r != 0) plain.error = errno;
      return plain;
    }
  }
  return e;
}

bool LinkLeadsTo(const std::string& link, uint64_t dev, uint64_t ino) {
  // The kernel follows the link to the object itself, asking its filesystem nothing.
  UniqueFd fd(::open(link.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid()) return false;
  const std::optional<FdMount> where =
      ParseFdinfoOf("/proc/self/fdinfo/" + std::to_string(fd.get()));
  if (!where) return false;
  std::shared_ptr<const Mount> mount = FindMount(where->mount_id, ProcPidOf(link));
  if (mount && !mount->guarded()) {
    struct stat st {};
    return ::fstat(fd.get(), &st) == 0 && static_cast<uint64_t>(st.st_dev) == dev &&
           static_cast<uint64_t>(st.st_ino) == ino;
  }
  return mount && where->ino != 0 && where->ino == ino && mount->dev == dev;
}

Result<std::unique_ptr<Mirror>> Mirror::Create(PathFd file, const struct stat& st) {
  UniqueFd memfd(::memfd_create("jitsym-mirror", MFD_CLOEXEC));
  if (!memfd.valid()) {
    const int error = errno;
    Error e = MakeError(ErrorKind::kIo, "memfd_create: " + Errno(error));
    errno = error;
    return e;
  }
  return std::unique_ptr<Mirror>(new Mirror(std::move(file), std::move(memfd), st));
}

Status Mirror::Copy(uint64_t head, uint64_t from, uint64_t length) {
  fsworker::Request r = RequestFor(fsworker::Op::kCopy, "");
  r.flags = fsworker::kExpect;
  r.expect_dev = static_cast<uint64_t>(st_.st_dev);
  r.expect_ino = static_cast<uint64_t>(st_.st_ino);
  r.head = head;
  r.offset = from;
  r.length = length;
  const int fds[] = {file_.get(), memfd_.get()};
  auto answer = FsWorkers::Shared().Call(MountFor(file_), "read " + file_.path(), r, fds);
  if (!answer) return std::move(answer).error();
  const fsworker::Reply& reply = *answer->reply;
  if (reply.error != 0) {
    return MakeError(
        ErrorKind::kIo,
        file_.path() + ": " +
            (reply.error == ESTALE ? std::string("replaced by another file") : Errno(reply.error)));
  }
  st_ = reply.st;
  shown_ = reply.size;
  return {};
}

bool Mirror::more() const { return static_cast<uint64_t>(st_.st_size) > shown_; }

void Mirror::Drop(uint64_t keep_head, uint64_t below) {
  constexpr uint64_t kPage = 4096;
  const uint64_t begin = (keep_head + kPage - 1) / kPage * kPage;
  const uint64_t end = below / kPage * kPage;
  if (end > begin) {
    ::fallocate(memfd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(begin),
                static_cast<off_t>(end - begin));
  }
}

Result<WholeCopy> CopyWhole(const PathFd& file, uint64_t max_bytes) {
  WholeCopy out;
  out.memfd.reset(::memfd_create("jitsym-copy", MFD_CLOEXEC));
  if (!out.memfd.valid()) return MakeError(ErrorKind::kIo, "memfd_create: " + Errno(errno));
  uint64_t offset = 0;
  bool first = true;
  for (;;) {
    fsworker::Request r = RequestFor(fsworker::Op::kCopy, "");
    if (!first) {
      r.flags = fsworker::kExpect;
      r.expect_dev = static_cast<uint64_t>(out.st.st_dev);
      r.expect_ino = static_cast<uint64_t>(out.st.st_ino);
    }
    r.offset = offset;
    r.length = fsworker::kMaxCopy;
    r.max_size = max_bytes;
    const int fds[] = {file.get(), out.memfd.get()};
    auto answer = FsWorkers::Shared().Call(MountFor(file), "read " + file.path(), r, fds);
    if (!answer) return std::move(answer).error();
    const fsworker::Reply& reply = *answer->reply;
    if (reply.error != 0) {
      std::string why = reply.error == EINVAL   ? std::string("not a regular file")
                        : reply.error == ESTALE ? std::string("replaced while it was read")
                        : reply.error == EFBIG
                            ? "larger than " + std::to_string(max_bytes) + " bytes"
                            : Errno(reply.error);
      return MakeError(reply.error == EFBIG ? ErrorKind::kLimit : ErrorKind::kIo,
                       file.path() + ": " + why);
    }
    out.st = reply.st;
    first = false;
    const uint64_t size = static_cast<uint64_t>(reply.st.st_size);
    if (reply.size <= offset || reply.size >= size) break;  // the end, or it shrank
    offset = reply.size;
  }
  return out;
}

Result<std::vector<std::string>> ListGuardedDir(const PathFd& dir, size_t max_names) {
  std::vector<std::string> names;
  uint64_t next = 0;
  do {
    fsworker::Request r = RequestFor(fsworker::Op::kList, "");
    r.offset = next;
    const int fds[] = {dir.get()};
    auto answer = FsWorkers::Shared().Call(MountFor(dir), "list " + dir.path(), r, fds);
    if (!answer) return std::move(answer).error();
    const fsworker::Reply& reply = *answer->reply;
    if (reply.error != 0) return MakeError(ErrorKind::kIo, dir.path() + ": " + Errno(reply.error));
    size_t i = 0;
    while (i < reply.data_len && names.size() < max_names) {
      const size_t len = ::strnlen(reply.data + i, reply.data_len - i);
      std::string name(reply.data + i, len);
      if (name != "." && name != "..") names.push_back(std::move(name));
      i += len + 1;
    }
    next = reply.next;
  } while (next != 0 && names.size() < max_names);
  return names;
}

namespace {

// The object of an entry, opened for reading: reopened through /proc/self/fd when it lies on
// an ordinary mount, mirrored when not.
Result<OpenedFile> OpenEntry(Entry e, int flags) {
  OpenedFile out;
  if (e.error != 0) {
    out.error = e.error;
    return out;
  }
  out.st = e.st;
  if (e.fd.guarded()) {
    if (S_ISLNK(e.st.st_mode)) {
      out.error = ELOOP;
      return out;
    }
    auto mirror = Mirror::Create(std::move(e.fd), e.st);
    if (!mirror) {
      out.error = errno != 0 ? errno : EIO;  // no descriptor for the memfd (EMFILE)
      return out;
    }
    out.mirror = std::move(*mirror);
    return out;
  }
  const std::string self = "/proc/self/fd/" + std::to_string(e.fd.get());
  out.fd.reset(::open(self.c_str(), (flags & ~O_NOFOLLOW) | O_CLOEXEC));
  if (!out.fd.valid()) out.error = errno;
  return out;
}

}  // namespace

Result<OpenedFile> OpenForReadingAt(const PathFd& dir, const std::string& name, int flags) {
  if (!dir.guarded() && name.find('/') == std::string::npos && name != "..") {
    // The common case: a file of an ordinary directory, opened in one call that fails rather
    // than leave the directory's mount.
    OpenedFile out;
    out.fd.reset(OpenNoXdev(dir.get(), name, flags));
    if (out.fd.valid()) {
      if (::fstat(out.fd.get(), &out.st) != 0) out.error = errno;
      return out;
    }
    if (errno != EXDEV) {
      out.error = errno;
      return out;
    }
  }
  WalkOptions o;
  o.no_follow_last = (flags & O_NOFOLLOW) != 0;
  auto e = WalkAt(dir, name, o);
  if (!e) return std::move(e).error();
  if (e->error == 0 && o.no_follow_last && S_ISLNK(e->st.st_mode)) {
    OpenedFile out;
    out.error = ELOOP;
    return out;
  }
  return OpenEntry(std::move(*e), flags);
}

Result<OpenedFile> OpenForReading(const std::string& path, int flags, const WalkOptions& options) {
  if (!path.starts_with('/')) return MakeError(ErrorKind::kUsage, path + ": not an absolute path");
  const size_t slash = path.rfind('/');
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = path.substr(slash + 1);
  WalkOptions o = options;
  o.no_follow_last = false;  // the directory: followed
  auto d = Walk(dir, o);
  if (!d) return std::move(d).error();
  if (d->error != 0 || name.empty()) {
    OpenedFile out;
    out.error = d->error != 0 ? d->error : EISDIR;
    return out;
  }
  if (!S_ISDIR(d->st.st_mode)) {
    OpenedFile out;
    out.error = ENOTDIR;
    return out;
  }
  if (options.no_symlinks) {
    WalkOptions last;
    last.no_symlinks = true;
    auto e = WalkAt(d->fd, name, last);
    if (!e) return std::move(e).error();
    return OpenEntry(std::move(*e), flags);
  }
  return OpenForReadingAt(d->fd, name, flags);
}

}  // namespace jitsym::os
