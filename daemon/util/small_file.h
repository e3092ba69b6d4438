// The one rule for reading small whole files: /proc/<pid>/{stat,maps}, the config file,
// /etc/subuid, perfinfo and ReadyToRun maps. Every caller gets the same hygiene (a size bound
// checked before and while reading, EINTR retried, the opened file's owner and type judged
// before a byte is read). How a path is opened (no controlling tty, no blocking on a FIFO,
// close-on-exec, never waiting on a FUSE server) is os/small_file.h's: os::ReadSmallFile.
#ifndef JITSYM_DAEMON_UTIL_SMALL_FILE_H_
#define JITSYM_DAEMON_UTIL_SMALL_FILE_H_

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace jitsym {

struct SmallFileOptions {
  // A file that says it is larger (st_size), or that yields more, is refused (kTooLarge).
  size_t max_bytes = size_t{1} << 30;
  // O_NOFOLLOW: a file in a directory anyone may write (/tmp) is never read through a symlink.
  bool no_follow = false;
  // Character devices are read too (--config /dev/null); otherwise only regular files.
  bool allow_char_device = false;
  // Called with the opened file's fstat before reading; false refuses the file (kRefused).
  std::function<bool(const struct stat&)> accept;
};

struct SmallFileError {
  // kUnanswered: on a guarded filesystem (os/mounts.h) that did not answer, or is not asked now.
  enum Kind { kOpen, kNotRegular, kRefused, kRead, kTooLarge, kUnanswered };
  Kind kind = kOpen;
  int errno_value = 0;  // for kOpen and kRead
  std::string why;      // for kUnanswered: what was asked and of which filesystem
};

struct SmallFile {
  std::string bytes;
  struct stat st {};  // of the opened file (its owner, for /proc files the process's)
};

// The whole of an opened file whose fstat is `st`, under the options' rules (all but no_follow,
// which is the opener's); closes fd. nullopt with *error (if given) saying why.
std::optional<SmallFile> ReadOpenedSmallFile(int fd, const struct stat& st,
                                             const SmallFileOptions& options,
                                             SmallFileError* error = nullptr);

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_SMALL_FILE_H_
