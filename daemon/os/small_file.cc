// Opens small whole files by path (see small_file.h); util/small_file.h reads them.
#include "daemon/os/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "daemon/os/guarded_fs.h"

namespace jitsym::os {
namespace {

std::optional<SmallFile> Fail(SmallFileError* error, SmallFileError::Kind kind, int errno_value,
                              int fd, std::string why = {}) {
  if (fd >= 0) ::close(fd);
  if (error) *error = {kind, errno_value, std::move(why)};
  return std::nullopt;
}

// A file of /proc itself (a process's stat, maps, fdinfo; the mount tables): nothing a user's
// process serves. Its links to other filesystems (a process's root, cwd, exe, descriptors and
// mapped files) are not.
bool PlainProcFile(std::string_view path) {
  constexpr std::string_view kProc = "/proc/";
  if (!path.starts_with(kProc)) return false;
  std::string_view rest = path.substr(kProc.size());
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part == "root" || part == "cwd" || part == "exe" || part == "fd" || part == "map_files" ||
        part == "..") {
      return false;
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return true;
}

}  // namespace

std::optional<SmallFile> ReadSmallFile(const std::string& path, const SmallFileOptions& options,
                                       SmallFileError* error) {
  const int flags =
      O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (options.no_follow ? O_NOFOLLOW : 0);
  if (PlainProcFile(path)) {
    const int fd = ::open(path.c_str(), flags);
    if (fd < 0) return Fail(error, SmallFileError::kOpen, errno, -1);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return Fail(error, SmallFileError::kOpen, errno, fd);
    return ReadOpenedSmallFile(fd, st, options, error);
  }
  auto opened = OpenForReading(path, flags);
  if (!opened) return Fail(error, SmallFileError::kUnanswered, 0, -1, opened.error().message);
  if (opened->error != 0) return Fail(error, SmallFileError::kOpen, opened->error, -1);
  if (!opened->mirror) return ReadOpenedSmallFile(opened->fd.release(), opened->st, options, error);
  // On a guarded filesystem: judged on the stat a worker took, then copied by one.
  const struct stat& st = opened->st;
  if (!S_ISREG(st.st_mode)) return Fail(error, SmallFileError::kNotRegular, 0, -1);
  if (options.accept && !options.accept(st)) return Fail(error, SmallFileError::kRefused, 0, -1);
  if (static_cast<uint64_t>(st.st_size) > options.max_bytes) {
    return Fail(error, SmallFileError::kTooLarge, 0, -1);
  }
  auto copy = CopyWhole(opened->mirror->file(), options.max_bytes);
  if (!copy) {
    if (copy.error().kind == ErrorKind::kLimit) {
      return Fail(error, SmallFileError::kTooLarge, 0, -1);
    }
    return Fail(error, SmallFileError::kUnanswered, 0, -1, copy.error().message);
  }
  if (copy->st.st_dev != st.st_dev || copy->st.st_ino != st.st_ino ||
      (options.accept && !options.accept(copy->st))) {
    return Fail(error, SmallFileError::kRefused, 0, -1);
  }
  ::lseek(copy->memfd.get(), 0, SEEK_SET);
  return ReadOpenedSmallFile(copy->memfd.release(), copy->st, options, error);
}

}  // namespace jitsym::os
