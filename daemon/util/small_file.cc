// Reads small whole files with one set of rules (see small_file.h).
#include "daemon/util/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace jitsym {
namespace {

std::optional<SmallFile> Fail(SmallFileError* error, SmallFileError::Kind kind, int errno_value,
                              int fd) {
  if (fd >= 0) ::close(fd);
  if (error) *error = {kind, errno_value};
  return std::nullopt;
}

}  // namespace

std::optional<SmallFile> ReadSmallFile(const std::string& path, const SmallFileOptions& options,
                                       SmallFileError* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
                                          (options.no_follow ? O_NOFOLLOW : 0));
  if (fd < 0) return Fail(error, SmallFileError::kOpen, errno, -1);
  SmallFile file;
  if (::fstat(fd, &file.st) != 0) return Fail(error, SmallFileError::kOpen, errno, fd);
  const bool regular = S_ISREG(file.st.st_mode);
  if (!regular && !(options.allow_char_device && S_ISCHR(file.st.st_mode))) {
    return Fail(error, SmallFileError::kNotRegular, 0, fd);
  }
  if (options.accept && !options.accept(file.st))
    return Fail(error, SmallFileError::kRefused, 0, fd);
  if (regular && static_cast<uint64_t>(file.st.st_size) > options.max_bytes) {
    return Fail(error, SmallFileError::kTooLarge, 0, fd);
  }
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail(error, SmallFileError::kRead, errno, fd);
    if (n == 0) break;
    file.bytes.append(buf, static_cast<size_t>(n));
    // /proc files say st_size 0, and a file may grow while it is read.
    if (file.bytes.size() > options.max_bytes) return Fail(error, SmallFileError::kTooLarge, 0, fd);
  }
  ::close(fd);
  return file;
}

}  // namespace jitsym
