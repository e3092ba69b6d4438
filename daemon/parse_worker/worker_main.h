// The parse worker process: `jitsymd --parse-worker ...`, started by the daemon's WorkerPool
// (worker_pool.h) with its ends of `lanes` sockets as descriptors 3, 4, ... It enters its
// sandbox (sandbox.h) before it reads a byte of any file, then serves kSymbolize requests,
// one at a time on each lane (a thread each, sharing the modules), until the daemon closes
// them. Every file it reads is a descriptor the daemon passed: the files asked about, and the
// companions the daemon agreed to open for it.
#ifndef JITSYM_DAEMON_PARSE_WORKER_WORKER_MAIN_H_
#define JITSYM_DAEMON_PARSE_WORKER_WORKER_MAIN_H_

#include <string>
#include <vector>

namespace jitsym::parse_worker {

inline constexpr const char* kWorkerFlag = "--parse-worker";
inline constexpr int kWorkerSocketFd = 3;  // lane 0; lane k is kWorkerSocketFd + k
inline constexpr int kMaxLanes = 8;
// Exit statuses the daemon reads (worker_pool.cc).
inline constexpr int kExitOutOfMemory = 3;
inline constexpr int kExitNoSandbox = 4;
inline constexpr int kExitBadMessage = 5;

// argv: kWorkerFlag, then name=value settings (uid, gid, as, cpu, cache, lanes,
// debug-dir...).
int RunParseWorker(const std::vector<std::string>& args);

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_WORKER_MAIN_H_
