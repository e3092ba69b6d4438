// The one reader of small whole files: /proc/<pid>/{stat,maps}, the config file, perfinfo maps
// and ReadyToRun maps from the operator's directories. Every caller gets the same hygiene (no
// controlling tty, no blocking on a FIFO, close-on-exec, a size bound checked before and while
// reading, EINTR retried) and may judge the opened file's owner and type before a byte is read.
// A path outside /proc's own files is resolved by guarded_fs.h: a file on a FUSE mount is
// copied by a worker process that may time out (kUnanswered), never read by the caller's
// thread.
#ifndef JITSYM_DAEMON_OS_SMALL_FILE_H_
#define JITSYM_DAEMON_OS_SMALL_FILE_H_

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace jitsym::os {

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
  // kUnanswered: on a guarded filesystem (mounts.h) that did not answer, or is not asked now.
  enum Kind { kOpen, kNotRegular, kRefused, kRead, kTooLarge, kUnanswered };
  Kind kind = kOpen;
  int errno_value = 0;  // for kOpen and kRead
  std::string why;      // for kUnanswered: what was asked and of which filesystem
};

struct SmallFile {
  std::string bytes;
  struct stat st {};  // of the opened file (its owner, for /proc files the process's)
};

// The whole file, or nullopt with *error (if given) saying why.
std::optional<SmallFile> ReadSmallFile(const std::string& path, const SmallFileOptions& options,
                                       SmallFileError* error = nullptr);

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_SMALL_FILE_H_
