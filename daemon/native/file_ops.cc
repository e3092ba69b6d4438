// The file operations of native/ (file_ops.h).
#include "daemon/native/file_ops.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/vfs.h>

#include <cerrno>

namespace jitsym::native {
namespace {

FileOps PlainOps() {
  FileOps ops;
  ops.open = [](const std::string& path, int flags) {
    return ::open(path.c_str(), flags | O_CLOEXEC);
  };
  ops.stat = [](const std::string& path, bool follow, struct stat* st, bool* served_by_process) {
    if ((follow ? ::stat(path.c_str(), st) : ::lstat(path.c_str(), st)) != 0) return false;
    struct statfs fs {};
    *served_by_process = ::statfs(path.c_str(), &fs) == 0 && fs.f_type == FUSE_SUPER_MAGIC;
    return true;
  };
  ops.resolve = [](const std::string& path, std::string* resolved) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr) return false;
    resolved->assign(real);
    ::free(real);
    return true;
  };
  return ops;
}

FileOps& Installed() {
  static FileOps ops = PlainOps();
  return ops;
}

}  // namespace

const FileOps& Files() { return Installed(); }

void SetFileOps(FileOps ops) { Installed() = std::move(ops); }

}  // namespace jitsym::native
