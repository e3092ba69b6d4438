// Which filesystem a path or a descriptor lies on, decided from facts that never ask that
// filesystem: the mount tables (/proc/self/mountinfo, /proc/PID/mountinfo) and the mount id the
// kernel shows for a descriptor (/proc/self/fdinfo). A stat, an open or a statfs of a path on a
// FUSE mount is a request to the process serving it, which may never answer: a mount is
// "guarded" when its server is such a process, and then nothing on it is asked from a shared
// thread (guarded_fs.h asks a worker process, fs_workers.h).
//
// The rule (GuardReason, one place): FUSE in all its forms (fuse, fuseblk, fuse.<subtype>),
// which any user may mount (fusermount3; or in a user namespace of his own, where allow_other
// needs no /etc/fuse.conf), and an overlay whose layers lie on a guarded mount (an overlay
// looks its files up in its layers). Network filesystems (nfs, cifs, 9p, ceph) can stall too,
// but only root mounts them and their servers are not local users' processes: they stay
// ordinary.
#ifndef JITSYM_DAEMON_OS_MOUNTS_H_
#define JITSYM_DAEMON_OS_MOUNTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::os {

// One line of a mountinfo file.
struct Mount {
  uint64_t id = 0;
  uint64_t parent = 0;
  uint64_t dev = 0;  // makedev(major, minor), as st_dev and /proc/PID/maps show it
  std::string root;  // the directory of the filesystem mounted there
  std::string mount_point;
  std::string fstype;  // "ext4", "fuse.sshfs"
  std::string source;
  std::string super_options;
  // The uid a FUSE mount names as its owner (user_id=), as the mount's user namespace sees it.
  std::optional<uint32_t> owner;
  // Why a call on this mount may never return ("a FUSE filesystem: its server is a process"),
  // or empty for an ordinary mount.
  std::string guard_reason;

  bool guarded() const { return !guard_reason.empty(); }
  // "fuse.sshfs at /home/bob/mnt (user_id 1002)": for log lines and answers.
  std::string Describe() const;
};

// The rule of this file's header for one filesystem type ("" for an ordinary one). Overlays are
// decided by the table, which knows where their layers lie.
std::string GuardReason(std::string_view fstype);

class MountTable {
 public:
  // Parses mountinfo text; malformed lines are skipped. Decides which mounts are guarded.
  static MountTable Parse(std::string_view mountinfo);

  // Null when the table has no such mount.
  std::shared_ptr<const Mount> ById(uint64_t id) const;
  // A mount of the device (the first listed; bind mounts of one device share its type).
  std::shared_ptr<const Mount> ByDev(uint64_t dev) const;
  // The mount whose mount point is the longest prefix of `path` (an absolute path as the
  // table's process sees it; the last of stacked mounts wins).
  std::shared_ptr<const Mount> Containing(std::string_view path) const;
  bool any_guarded() const { return any_guarded_; }
  size_t size() const { return mounts_.size(); }

 private:
  std::vector<std::shared_ptr<const Mount>> mounts_;
  bool any_guarded_ = false;
};

// The daemon's own mount table: read again only when the kernel says it changed (poll on
// /proc/self/mountinfo), so asking costs one poll(2). Thread-safe. Null if unreadable.
std::shared_ptr<const MountTable> OwnMounts();
// The mount table of process `pid` (its mount namespace, paths from its root), read now. Null
// if it cannot be read.
std::shared_ptr<const MountTable> MountsOf(uint32_t pid);

// The mount id of descriptor `fd` (/proc/self/fdinfo: the kernel's own record, no filesystem
// is asked), or nullopt with errno set (EMFILE: no descriptor to read it with).
std::optional<uint64_t> MountIdOf(int fd);

// What an fdinfo file (/proc/PID/fdinfo/FD) says of a descriptor: its mount id, the inode
// number the kernel shows there (0 when it shows none) and its open flags (O_ACCMODE, O_PATH:
// nullopt when not shown); nullopt with errno set.
struct FdMount {
  uint64_t mount_id = 0;
  uint64_t ino = 0;
  std::optional<uint64_t> flags;
};
std::optional<FdMount> ParseFdinfoOf(const std::string& fdinfo_path);

// The mount with id `id`: the daemon's table first, then `pid`'s (0: none) for a mount of
// another mount namespace. Null when neither lists it.
std::shared_ptr<const Mount> FindMount(uint64_t id, uint32_t pid = 0);

// Tests: mounts at `mount_point` are guarded as well (a tmpfs standing in for a FUSE mount:
// what is guarded is then asked of workers, which answer).
void GuardMountPointForTesting(const std::string& mount_point);

// The mount a device from /proc/PID/maps or a stat lies on, looked up in the daemon's table and
// `pid`'s (0: none). Null when neither lists it.
std::shared_ptr<const Mount> MountOfDevice(uint64_t dev, uint32_t pid = 0);

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_MOUNTS_H_
