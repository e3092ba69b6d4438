// Small whole files read by path: /proc/<pid>/{stat,maps}, the config file, /etc/subuid,
// ReadyToRun maps from the operator's directories. The reading rule is the base's
// (util/small_file.h); this is how a path is opened: no controlling tty, no blocking on a FIFO,
// close-on-exec, and a path outside /proc's own files resolved by guarded_fs.h: a file on a FUSE
// mount is copied by a worker process that may time out (kUnanswered), never read by the
// caller's thread.
#ifndef JITSYM_DAEMON_OS_SMALL_FILE_H_
#define JITSYM_DAEMON_OS_SMALL_FILE_H_

#include <optional>
#include <string>

#include "daemon/util/small_file.h"

namespace jitsym::os {

using jitsym::SmallFile;
using jitsym::SmallFileError;
using jitsym::SmallFileOptions;

// The whole file, or nullopt with *error (if given) saying why.
std::optional<SmallFile> ReadSmallFile(const std::string& path, const SmallFileOptions& options,
                                       SmallFileError* error = nullptr);

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_SMALL_FILE_H_
