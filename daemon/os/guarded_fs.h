// Files looked at without ever blocking the calling thread on a filesystem whose server is a
// process (a guarded mount, mounts.h): every path the daemon opens, stats or lists that a user
// may have placed on such a mount goes through here.
//
// Paths are resolved one component at a time with O_PATH descriptors. A lookup in a
// directory of an ordinary mount is done here with RESOLVE_NO_XDEV, so it never leaves that
// mount; a name that is a mount point is entered with O_PATH (which asks the mounted
// filesystem nothing) and the mount it leads to is classified from the kernel's mount id of
// the descriptor. Only then, and only for a guarded mount, is anything asked of it, by a worker
// process with a timeout (fs_workers.h). The classification comes before the first request on
// the path, and no request is made from the calling thread, so a mount appearing on the path
// meanwhile is classified as it is found.
//
// Files on ordinary mounts cost what open(2) costs plus one lookup per component; their
// descriptors are returned as usual. A file on a guarded mount is never opened by the daemon
// (closing such a descriptor would ask the server too): the daemon holds its O_PATH
// descriptor, and its bytes are copied by a worker into a memfd (Mirror, CopyWhole).
#ifndef JITSYM_DAEMON_OS_GUARDED_FS_H_
#define JITSYM_DAEMON_OS_GUARDED_FS_H_

#include <sys/stat.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/os/mounts.h"
#include "daemon/os/unique_fd.h"
#include "daemon/util/result.h"

namespace jitsym::os {

// An O_PATH descriptor, the mount it lies on and the path it was reached by (for messages).
// `ns_pid`: a process whose mount table lists the mounts below it when they are not the
// daemon's (0: the daemon's only).
class PathFd {
 public:
  PathFd() = default;
  PathFd(UniqueFd fd, std::shared_ptr<const Mount> mount, std::string path, uint32_t ns_pid)
      : fd_(std::move(fd)), mount_(std::move(mount)), path_(std::move(path)), ns_pid_(ns_pid) {}

  int get() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  // Null only for a descriptor whose mount no table lists (then guarded()).
  const std::shared_ptr<const Mount>& mount() const { return mount_; }
  bool guarded() const { return !mount_ || mount_->guarded(); }
  const std::string& path() const { return path_; }
  uint32_t ns_pid() const { return ns_pid_; }
  // Another descriptor of the same object.
  Result<PathFd> Dup() const;

 private:
  UniqueFd fd_;
  std::shared_ptr<const Mount> mount_;
  std::string path_;
  uint32_t ns_pid_ = 0;
};

// The mount that stands for one no table lists: guarded, as nothing can be known about it.
const Mount& UnlistedMount();
// The mount of `fd` for calls: its own, or UnlistedMount.
const Mount& MountFor(const PathFd& fd);

// What a lookup found. `error` is the filesystem's answer (ENOENT, ENOTDIR, ELOOP...), 0 when
// `fd` and `st` are set; `link` is a symlink's target.
struct Entry {
  PathFd fd;
  struct stat st {};
  std::string link;
  int error = 0;
};

// Puts the components of `path` ("a/b//c", leading and repeated slashes dropped) in front of
// those already in *front, in order: what a walk resolves next.
void PushFrontComponents(const std::string& path, std::deque<std::string>* front);

// Whether lookups use openat2 (they stop once it answers ENOSYS, as under systemd's
// RestrictSUIDSGID=); tests check both ways.
void UseOpenat2ForTesting(bool use);

// "/" as the daemon sees it.
Result<PathFd> OpenRoot();
// The root of process `pid` (/proc/PID/root), its mounts looked up in its mount table.
Result<PathFd> OpenProcessRoot(uint32_t pid);
// One name in `dir` ("..", a mount point, a symlink itself: nothing is followed). An error
// means the filesystem was not asked or did not answer (the message says which and why).
Result<Entry> LookUp(const PathFd& dir, const std::string& name);
// fstat of the object itself (through a worker when it is on a guarded mount).
Result<struct stat> StatOf(const PathFd& fd);

struct WalkOptions {
  // The last component is not followed when it is a symlink (open's O_NOFOLLOW).
  bool no_follow_last = false;
  // No symlink is followed anywhere (ELOOP); /proc's links included.
  bool no_symlinks = false;
  // A process whose mount table lists mounts the walk may meet beyond the daemon's own (0:
  // the pid after /proc/ in the path, if any).
  uint32_t ns_pid = 0;
};

// `path` (absolute; or relative to `dir`) resolved as open(2) would, to an O_PATH descriptor:
// /proc's links (/proc/PID/root, /proc/self) are followed by the kernel, which asks no
// filesystem; other symlinks are read and followed component by component.
Result<Entry> Walk(const std::string& path, const WalkOptions& options = {});
Result<Entry> WalkAt(const PathFd& dir, const std::string& path, const WalkOptions& options = {});

// The stat of `path` (lstat with no_follow_last, else stat); error: not asked or unanswered;
// entry.error: the filesystem's errno. Without a descriptor to walk with (EMFILE, ENFILE), a
// path outside /proc is stat'ed directly when no mount of the daemon's is guarded; entry.fd is
// then not set.
Result<Entry> StatPath(const std::string& path, bool no_follow_last);

// Whether the /proc link `link` (/proc/PID/fd/N) leads to the file (dev, ino). Nothing is asked
// of the file's filesystem: for one of a guarded mount, the inode number the kernel shows
// for the descriptor (fdinfo) and the mount's device are compared.
bool LinkLeadsTo(const std::string& link, uint64_t dev, uint64_t ino);

// What a worker copied of a file of a guarded mount: a memfd read in its place, at the file's
// offsets. Its size is where the last copy ended.
class Mirror {
 public:
  static Result<std::unique_ptr<Mirror>> Create(PathFd file, const struct stat& st);

  int fd() const { return memfd_.get(); }
  const PathFd& file() const { return file_; }
  // The file's stat when it was last copied from.
  const struct stat& st() const { return st_; }
  // Copies [0, head) and [from, from + length) of the file (of the range at most
  // fsworker::kMaxCopy a call), if it is still the inode it was (ESTALE otherwise). An error:
  // not asked, unanswered, or the filesystem's errno (in the message).
  Status Copy(uint64_t head, uint64_t from, uint64_t length);
  // The file is larger than what the memfd shows.
  bool more() const;
  // Frees the copied bytes in [keep_head, below): they were read.
  void Drop(uint64_t keep_head, uint64_t below);

 private:
  Mirror(PathFd file, UniqueFd memfd, const struct stat& st)
      : file_(std::move(file)), memfd_(std::move(memfd)), st_(st) {}
  PathFd file_;
  UniqueFd memfd_;
  struct stat st_ {};
  uint64_t shown_ = 0;
};

// The whole of a file on a guarded mount (at most max_bytes: EFBIG beyond) in a sealed
// memfd, and its stat. Copied 1 MiB per call to a worker.
struct WholeCopy {
  UniqueFd memfd;
  struct stat st {};
};
Result<WholeCopy> CopyWhole(const PathFd& file, uint64_t max_bytes);

// The names in a directory of a guarded mount (at most max_names).
Result<std::vector<std::string>> ListGuardedDir(const PathFd& dir, size_t max_names);

// A file to read: opened here when it lies on an ordinary mount (`fd`), else mirrored (`mirror`
// set, its memfd empty until copied into). `error`: why it could not be opened (errno), 0 when
// it was.
struct OpenedFile {
  UniqueFd fd;
  struct stat st {};  // of the file itself
  std::unique_ptr<Mirror> mirror;
  int error = 0;
};
// Opens `path` (or `name` in `dir`) with open(2)'s `flags` (O_RDONLY and O_NOFOLLOW, O_NONBLOCK,
// O_NOCTTY...): see OpenedFile. An error: the filesystem was not asked or did not answer.
Result<OpenedFile> OpenForReading(const std::string& path, int flags,
                                  const WalkOptions& options = {});
Result<OpenedFile> OpenForReadingAt(const PathFd& dir, const std::string& name, int flags);

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_GUARDED_FS_H_
