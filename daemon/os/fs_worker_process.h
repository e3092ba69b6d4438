// The processes that make the calls on guarded filesystems (mounts.h) for the daemon, and the
// messages between them (fs_workers.h is the daemon's side).
//
// Why processes: a thread blocked in a FUSE request that the server has read but never answers
// waits uninterruptibly, even for SIGKILL, and a process keeps every thread's exit waiting for
// it: the daemon could never be reaped, its socket never closed. A worker process that hangs
// hangs alone; the daemon stops waiting for it, exits when told, and the worker dies when its
// request ends (the server answers, exits, or the mount is aborted).
//
// A zygote, forked once while the daemon is small (main, before its threads), forks the
// workers: a worker forked from the grown daemon would hold its memory copy-on-write for as
// long as it hangs. Zygote and workers run only system calls on fixed buffers (no allocation,
// no locks, no logging), so forking them from a process with threads is sound. Each worker
// serves one request at a time on a SOCK_SEQPACKET socket; descriptors travel with
// SCM_RIGHTS. A worker never hands the daemon a descriptor that could ask a guarded
// filesystem anything when closed: only O_PATH descriptors come back (closing a file opened
// for reading on FUSE sends FLUSH and waits for the answer).
#ifndef JITSYM_DAEMON_OS_FS_WORKER_PROCESS_H_
#define JITSYM_DAEMON_OS_FS_WORKER_PROCESS_H_

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>

namespace jitsym::os::fsworker {

enum class Op : uint32_t {
  // openat(fd, path, O_PATH | O_NOFOLLOW), its fstat and, for a symlink, its target; the
  // O_PATH descriptor comes back.
  kLookUp = 1,
  // fstatat(fd, path, AT_SYMLINK_NOFOLLOW), or fstat(fd) for an empty path.
  kStat = 2,
  // Opens fd (reopened through /proc/self/fd) or path under it for reading, checks that it is
  // a regular file (EINVAL if not) and, with kExpect, the expected device and inode (ESTALE if
  // not), then copies [0, head) and [offset, offset + length) of it into the memfd passed
  // second, at the same offsets, and sets the memfd's size to where the copy ends (the file's
  // size when it ends sooner, so a shrunken file shows as such). EFBIG when max_size is set and
  // the file is larger.
  kCopy = 3,
  // Names in the directory fd (or path under it) from the position `offset` (0: the start);
  // the reply's `next` is where to go on from, 0 at the end.
  kList = 4,
  // read(2) of the descriptor passed (a pipe no one writes): a call that never returns, for
  // tests of the daemon's side.
  kWaitForTesting = 5,
};

inline constexpr uint32_t kNoSymlinks = 1;  // resolve `path` without following any symlink
inline constexpr uint32_t kExpect = 2;      // kCopy: expect_dev and expect_ino must match

inline constexpr size_t kMaxPath = 4096;
inline constexpr size_t kMaxData = 60 * 1024;
// One kCopy copies at most this much of the range: a slow but live filesystem answers each
// request within the timeout, however large the file.
inline constexpr uint64_t kMaxCopy = uint64_t{1} << 20;

struct Request {
  Op op = Op::kStat;
  uint32_t flags = 0;
  uint64_t head = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t max_size = 0;
  uint64_t expect_dev = 0;
  uint64_t expect_ino = 0;
  uint32_t path_len = 0;
  char path[kMaxPath] = {};
};

struct Reply {
  int32_t error = 0;  // errno of the call that failed; 0
  uint32_t data_len = 0;
  uint32_t has_stat = 0;
  uint32_t passed_fd = 0;  // a descriptor comes with the reply
  struct stat st {};
  uint64_t copied = 0;  // kCopy: bytes of [offset, offset + length) copied
  uint64_t size = 0;    // kCopy: the memfd's size now
  uint64_t next = 0;    // kList: where to continue, 0 at the end
  char data[kMaxData];  // kLookUp: a symlink's target; kList: names, each ended by '\0'
};

inline constexpr size_t kReplyHeader = offsetof(Reply, data);

// Forks the zygote; returns its pid and sets *sock to the daemon's end of its socket. -1 on
// failure (errno set).
int StartZygote(int* sock);
// Asks the zygote for a worker: its socket and pidfd. False when the zygote is gone.
bool SpawnWorker(int zygote_sock, int* worker_sock, int* pidfd);

}  // namespace jitsym::os::fsworker

#endif  // JITSYM_DAEMON_OS_FS_WORKER_PROCESS_H_
