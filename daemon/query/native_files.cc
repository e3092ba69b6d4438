// native/'s file operations on top of os/guarded_fs.h (native_files.h).
#include "daemon/query/native_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <utility>

#include "daemon/native/file_ops.h"
#include "daemon/os/guarded_fs.h"
#include "daemon/util/log.h"

namespace jitsym::query {
namespace {

// errno for a call the filesystem did not answer, or that was not asked of it now.
constexpr int kUnanswered = ETIMEDOUT;

thread_local std::string t_unanswered;

// Remembers why (for TakeUnanswered) and fails with kUnanswered.
int Unanswered(std::string why) {
  t_unanswered = std::move(why);
  errno = kUnanswered;
  return -1;
}

int Open(const std::string& path, int flags) {
  if (path.empty() || path.front() != '/') {
    // Relative names resolve as the system does.
    return ::open(path.c_str(), flags | O_CLOEXEC);
  }
  auto opened = os::OpenForReading(path, flags);
  if (!opened) return Unanswered(std::move(opened).error().message);
  if (opened->error != 0) {
    errno = opened->error;
    return -1;
  }
  if (!opened->mirror) return opened->fd.release();
  if (!S_ISREG(opened->st.st_mode)) {
    errno = EINVAL;
    return -1;
  }
  auto copy = os::CopyWhole(opened->mirror->file(), kMaxCopiedFileBytes);
  if (!copy) {
    JITSYM_LOG(kInfo, "native: ", copy.error().message);
    if (copy.error().kind != ErrorKind::kLimit) return Unanswered(copy.error().message);
    errno = EFBIG;
    return -1;
  }
  JITSYM_LOG(kInfo, "native: ", path, " is on ", os::MountFor(opened->mirror->file()).Describe(),
             ": read from a copy a worker process made (", copy->st.st_size, " bytes)");
  ::lseek(copy->memfd.get(), 0, SEEK_SET);
  return copy->memfd.release();
}

bool Stat(const std::string& path, bool follow, struct stat* st, bool* served_by_process) {
  if (path.empty() || path.front() != '/') {
    *served_by_process = false;
    return (follow ? ::stat(path.c_str(), st) : ::lstat(path.c_str(), st)) == 0;
  }
  auto e = os::StatPath(path, !follow);
  if (!e) {
    Unanswered(std::move(e).error().message);
    return false;
  }
  if (e->error != 0) {
    errno = e->error;
    return false;
  }
  *st = e->st;
  *served_by_process = e->fd.guarded();
  return true;
}

bool Resolve(const std::string& path, std::string* resolved) {
  if (path.empty() || path.front() != '/') {
    errno = EINVAL;
    return false;
  }
  auto e = os::Walk(path);
  if (!e) {
    Unanswered(std::move(e).error().message);
    return false;
  }
  if (e->error != 0) {
    errno = e->error;
    return false;
  }
  // The kernel's name of what the walk reached: absolute, every link resolved.
  const std::string self = "/proc/self/fd/" + std::to_string(e->fd.get());
  char target[4097];
  const ssize_t n = ::readlink(self.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return false;
  resolved->assign(target, static_cast<size_t>(n));
  return true;
}

}  // namespace

std::string TakeUnanswered() { return std::exchange(t_unanswered, {}); }

void InstallGuardedNativeFiles() {
  static std::once_flag once;
  std::call_once(once, [] {
    native::FileOps ops;
    ops.open = &Open;
    ops.stat = &Stat;
    ops.resolve = &Resolve;
    native::SetFileOps(std::move(ops));
  });
}

}  // namespace jitsym::query
