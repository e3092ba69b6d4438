// Reads small whole files with one set of rules (see small_file.h).
#include "daemon/util/small_file.h"

#include <unistd.h>

#include <cerrno>

namespace jitsym {

std::optional<SmallFile> ReadOpenedSmallFile(int fd, const struct stat& st,
                                             const SmallFileOptions& options,
                                             SmallFileError* error) {
  auto fail = [&](SmallFileError::Kind kind, int errno_value) -> std::optional<SmallFile> {
    ::close(fd);
    if (error) *error = {kind, errno_value, {}};
    return std::nullopt;
  };
  SmallFile file;
  file.st = st;
  const bool regular = S_ISREG(file.st.st_mode);
  if (!regular && !(options.allow_char_device && S_ISCHR(file.st.st_mode))) {
    return fail(SmallFileError::kNotRegular, 0);
  }
  if (options.accept && !options.accept(file.st)) return fail(SmallFileError::kRefused, 0);
  if (regular && static_cast<uint64_t>(file.st.st_size) > options.max_bytes) {
    return fail(SmallFileError::kTooLarge, 0);
  }
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(SmallFileError::kRead, errno);
    if (n == 0) break;
    file.bytes.append(buf, static_cast<size_t>(n));
    // /proc files say st_size 0, and a file may grow while it is read.
    if (file.bytes.size() > options.max_bytes) return fail(SmallFileError::kTooLarge, 0);
  }
  ::close(fd);
  return file;
}

}  // namespace jitsym
