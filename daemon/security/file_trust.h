// Which files to believe. /tmp is writable by everyone: a file naming a process
// (jit-<pid>.dump, perf-<pid>.map, an .mlpd by its header's pid) is believed only if its owner
// is root or the owner of that process. A file for a pid that does not exist (yet) waits a short
// while for the process to appear. Files are opened with O_NOFOLLOW and checked on the open
// descriptor (a regular file) by the ingester. docs/operations.md ("Security model").
#ifndef JITSYM_DAEMON_SECURITY_FILE_TRUST_H_
#define JITSYM_DAEMON_SECURITY_FILE_TRUST_H_

#include <cstdint>
#include <optional>
#include <string>

namespace jitsym::security {

enum class FileVerdict {
  kTrusted,
  kUntrusted,  // owned by someone else than the process's owner and root
  kPending,    // no such process (yet), and the file is not root's
};

// `file_uid`: owner of the opened file; `process_uid`: owner of the pid now, nullopt if there is
// no such process.
FileVerdict JudgeProcessFile(uint32_t file_uid, std::optional<uint32_t> process_uid);

// "uid 1000 (alice)", for log lines.
std::string DescribeUid(uint32_t uid);

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_FILE_TRUST_H_
