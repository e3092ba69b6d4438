// How native/ opens and looks at files by path: ELF files, their debug files, .dwp packages,
// .dwo files and dwz files, whose paths come from a process's mappings and from the files
// themselves (a debug link, DW_AT_dwo_name, .gnu_debugaltlink), so from their users.
//
// native/ knows no filesystem; the daemon installs operations (query/native_lookup.cc) that never
// wait on one whose server is a process (os/guarded_fs.h: a file of a FUSE mount is copied by
// a worker process, with a timeout, and read from that copy). The defaults are the plain system
// calls, for tools and tests.
#ifndef JITSYM_DAEMON_NATIVE_FILE_OPS_H_
#define JITSYM_DAEMON_NATIVE_FILE_OPS_H_

#include <sys/stat.h>

#include <functional>
#include <string>

namespace jitsym::native {

struct FileOps {
  // open(2) for reading: a descriptor, or -1 and errno.
  std::function<int(const std::string& path, int flags)> open;
  // stat(2) (`follow`) or lstat(2): false and errno on failure. *served_by_process: the object
  // lies on a filesystem whose server is a process (FUSE), where it may change at any time.
  std::function<bool(const std::string& path, bool follow, struct stat* st,
                     bool* served_by_process)>
      stat;
  // realpath(3): false and errno on failure.
  std::function<bool(const std::string& path, std::string* resolved)> resolve;
};

// The operations in force (the plain system calls until SetFileOps).
const FileOps& Files();
// Installs `ops` for the whole process; call before any query (not thread-safe with Files()).
void SetFileOps(FileOps ops);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_FILE_OPS_H_
