// Which files to believe. /tmp is writable by everyone: a file naming a process
// (jit-<pid>.dump, perf-<pid>.map, an .mlpd by its header's pid) is believed only if its owner
// is root or the owner of that process, and only if it can have been written by the process
// that holds the pid now. A file for a pid that does not exist (yet) waits a short while for the
// process to appear. Files are opened with O_NOFOLLOW and checked on the open descriptor (a
// regular file) by the ingester. docs/operations.md ("Security model").
//
// Every decision here rests on facts a local user cannot set: the file's owner and link count,
// its ctime (the kernel sets it to the current time on every write, chmod, link and rename; no
// call sets it back), the process's owner and start time (/proc/<pid>/stat), and the daemon's
// start. Never on st_mtime, which the file's owner sets at will (touch -d).
#ifndef JITSYM_DAEMON_SECURITY_FILE_TRUST_H_
#define JITSYM_DAEMON_SECURITY_FILE_TRUST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jitsym::security {

enum class FileVerdict {
  kTrusted,
  kUntrusted,  // owned by someone else than the process's owner and root
  kPending,    // no such process (yet), and the file is not root's
};

// `file_uid`: owner of the opened file; `process_uid`: owner of the pid now, nullopt if there is
// no such process.
FileVerdict JudgeProcessFile(uint32_t file_uid, std::optional<uint32_t> process_uid);

// What is known of a file naming a pid, when it is opened.
struct FileFacts {
  uint32_t uid = 0;
  uint64_t nlink = 1;
  uint64_t ctime_ns = 0;  // CLOCK_REALTIME ns of the inode's last change
  // Found by the daemon's start-up scan (files written while it was not running), rather than
  // announced by inotify or found by a later rescan.
  bool found_at_startup = false;
};

// The process holding the pid now.
struct ProcessFacts {
  uint32_t uid = 0;
  // CLOCK_REALTIME ns of its start, from the boot-time ticks of /proc/<pid>/stat (rounded
  // down to the tick: the true start is up to one tick later).
  uint64_t start_ns = 0;
};

// How far a file's ctime must precede a start time to be "before" it. File times come from the
// kernel's coarse clock, up to one jiffy (4 ms at HZ=250, 10 ms at HZ=100) behind the real time;
// process start times are whole ticks of 10 ms rounded down; the realtime conversion adds
// microseconds. A file written by a process just after it started can thus look up to ~20 ms
// older than the computed start; 50 ms covers that with room and is far below the delay of any
// real restart or pid reuse.
inline constexpr uint64_t kStartToleranceNs = 50ull * 1000 * 1000;

enum class Admission {
  kLive,       // believed as the side file of the live process holding the pid
  kExited,     // believed as an earlier, exited process of that pid, owned by the file's owner
  kPending,    // no such process (yet), not root's: wait for it
  kUntrusted,  // another user's file for this process
  kRootLink,   // root's file under a second hard link, for a process that is not root's
  kPredates,   // changed last before the live process started, and not found at start-up
};

// The one rule for files naming a pid:
//  - root's file with several hard links is refused unless the process is root's (a user can
//    link a file of root's it cannot read, to have it answered as its own process's);
//  - a file whose ctime precedes the live process's start cannot have been written by that
//    process, whoever owns it (root included): found at start-up it is an exited earlier
//    process of the pid, otherwise it is refused;
//  - a file found at start-up, last changed before the daemon started, for a pid no process
//    holds, is an exited process;
//  - otherwise the owner rule of JudgeProcessFile.
// A file announced by inotify is never taken as an exited process: it was just created,
// renamed or written, so the process that wrote it is the one holding the pid, or none.
Admission JudgeAdmission(const FileFacts& file, const std::optional<ProcessFacts>& process,
                         uint64_t daemon_start_ns);

std::string_view AdmissionName(Admission a);

// "uid 1000 (alice)", for log lines.
std::string DescribeUid(uint32_t uid);

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_FILE_TRUST_H_
