// The file operations native/ uses (native/file_ops.h), made to never wait on a filesystem
// whose server is a process: paths are resolved by os/guarded_fs.h, and a file of a FUSE mount
// is read from a copy a worker process made (at most kMaxCopiedFileBytes), not opened here.
#ifndef JITSYM_DAEMON_QUERY_NATIVE_FILES_H_
#define JITSYM_DAEMON_QUERY_NATIVE_FILES_H_

#include <cstdint>
#include <string>

namespace jitsym::query {

// A file of a FUSE mount larger than this is not copied (EFBIG): its copy is held in memory
// for as long as its module is.
inline constexpr uint64_t kMaxCopiedFileBytes = uint64_t{256} << 20;

// Installs the operations for the whole process (once; later calls do nothing).
void InstallGuardedNativeFiles();

// Why the last of these operations on this thread that failed did (its filesystem did not
// answer, or is not asked now), forgotten once taken; "" when none failed so since.
std::string TakeUnanswered();

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_NATIVE_FILES_H_
