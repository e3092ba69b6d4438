// The daemon's side of the parse workers: native files (ELF, DWARF, debug files, .dwo, .dwp,
// dwz files) are read in worker processes, never in the daemon, so that a hostile file can
// cost only its owner's answers.
//
// A file is read by a worker of its owner: one group of workers per uid, and one for root's
// files that no one else may write (root's files that a group or everyone may write have a
// group of their own). A worker runs as that uid (root's as nobody) when the daemon is root,
// with no capabilities, not dumpable, no_new_privs, an address-space limit, a CPU limit per
// request and a seccomp filter without open(2) (sandbox.h). It reads only descriptors: the
// file asked about, passed with the request, and the companion files it names, which it asks
// the daemon for (kFileOp): the daemon opens those only when they are root's or the group's
// owner's and the owner could open them himself (every directory on the way searchable, the
// file readable, by his uid and groups: security::PeerAccess::CheckRead), and answers "no such
// file" for any other, whether it exists or not. So a worker taken over by its file can read
// no more than the file's owner could.
//
// A request that outlives the deadline, a worker that dies, runs out of memory or CPU time,
// or says something that is not the protocol: the worker is killed and reaped, the request
// fails with what happened (the lookup's answers then say native_failed), the file is not
// read again for a while (doubling from 10 s up to 10 min), and the group's next worker
// starts after a backoff (doubling from 250 ms up to 30 s). Other groups are not affected.
//
// A worker serves up to `lanes` requests at once (a socket and a thread each, sharing its
// modules). Up to `per_group` requests of one group run at once, and more wait for a lane
// within the deadline. A file goes to the worker that read it last or is reading it now (its
// module is there): a lane of that worker, or a wait for one, never a second reader. A request
// waits on a query thread: the server lets one person hold fewer query threads than there are
// (ServerOptions::person_threads), so that a user whose worker hangs (he may stop it: it runs
// as him) cannot take every thread. At most `max_workers` workers live: an idle worker of
// another group makes room. Debug files from debuginfod are fetched by the daemon and handed to the
// worker that asks for a build id. Thread-safe.
#ifndef JITSYM_DAEMON_PARSE_WORKER_WORKER_POOL_H_
#define JITSYM_DAEMON_PARSE_WORKER_WORKER_POOL_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "daemon/native/debuginfod_fetcher.h"
#include "daemon/os/unique_fd.h"
#include "daemon/parse_worker/channel.h"
#include "daemon/parse_worker/parser.h"
#include "daemon/security/peer_access.h"

namespace jitsym::parse_worker {

struct PoolOptions {
  std::string exe = "/proc/self/exe";  // started with kWorkerFlag
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  // The tables of every worker's modules together: each worker's module cache may hold this
  // much, and when the workers' anonymous memory together is above it, idle workers are
  // stopped, least recently used first.
  size_t cache_bytes = size_t{1} << 30;
  uint64_t address_space_bytes = uint64_t{4} << 30;
  // Bytes one module's compressed debug sections may inflate to: the owner's quota
  // (limit-user-bytes), at most native::kMaxInflatedDebugBytes.
  uint64_t inflate_bytes = uint64_t{1} << 30;
  uint64_t timeout_ms = 30000;  // one request, end to end; also its CPU time
  size_t per_group = 2;         // requests of one group at once (main.cc: the query threads)
  size_t lanes = 2;             // requests of one worker at once
  size_t max_workers = 8;
  std::string log_level = "info";
  // Start the worker of root's files (the system's libraries: most native lookups) with the
  // pool, so that the first lookup of one does not wait for a worker to start.
  bool prestart_root = false;
};

class WorkerPool : public Parser {
 public:
  explicit WorkerPool(PoolOptions options);
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  Result<SymbolizeReply> Symbolize(const SymbolizeRequest& request, int fd) override;
  ParserStats Stats() override;

  // The group that reads a file with this stat: "uid N", "root", "root, writable by others".
  static std::string GroupOf(const struct stat& st, uint32_t* owner);

 private:
  struct Worker {
    pid_t pid = -1;   // -1 once buried
    std::string end;  // then: what became of it
    os::UniqueFd pidfd;
    std::vector<os::UniqueFd> lanes;  // the sockets of its lanes
    std::vector<bool> lane_busy;
    size_t busy = 0;     // lanes serving a request
    uint64_t bytes = 0;  // its anonymous memory (its tables) after its last request
    uint64_t last_used_ns = 0;
    std::vector<std::string> files;      // identities of the files it read lately, oldest first
    std::map<std::string, int> reading;  // file identity -> its lanes reading it now
    bool Has(const std::string& key) const;
  };
  // A lane of a worker, taken for one request.
  struct Lease {
    std::shared_ptr<Worker> worker;
    size_t lane = 0;
  };
  struct Group {
    uint32_t owner = 0;
    // Whose rights a companion file is opened with: the owner's, nobody's for root's files
    // others may write; null for root's own files (root's only, then).
    std::unique_ptr<security::PeerAccess> reader;
    std::vector<std::shared_ptr<Worker>> workers;  // alive
    size_t busy = 0;                               // lanes serving a request
    unsigned failures = 0;                         // in a row
    uint64_t retry_at_ns = 0;
    std::string last_failure;
    uint64_t last_used_ns = 0;
    std::map<std::string, int> starting;  // file identity -> workers starting for it
  };
  struct Backoff {
    uint64_t until_ns = 0;
    unsigned failures = 0;
    std::string why;
  };

  Result<Lease> Take(const std::string& name, Group& g, const std::string& key,
                     uint64_t deadline_ns, std::unique_lock<std::mutex>& lock);
  Lease LeaseLocked(Group& g, const std::shared_ptr<Worker>& w, const std::string& key);
  Result<std::shared_ptr<Worker>> Spawn(const std::string& name, uint32_t owner);
  // Starts root's worker (PoolOptions::prestart_root).
  void Prestart();
  // Kills (if needed) and reaps a worker, and takes it out of its group; what became of it,
  // for a person. Once.
  std::string BuryLocked(Group* g, Worker& w, bool killed_by_us);
  std::string Describe(int wait_status, bool killed_by_us) const;
  void Release(Group& g, const Lease& lease, const std::string& key);
  bool EvictIdleLocked(const Worker* spare = nullptr);
  // While the workers' tables together exceed cache_bytes, idle workers go, least recently
  // used first (but `spare`, just used).
  void TrimLocked(const Worker* spare);
  size_t LiveLocked() const;
  // Serves one kFileOp for a worker of group `g` on socket `sock`.
  void ServeFileOp(const Worker& w, int sock, const Group& g, const Frame& frame);

  PoolOptions options_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::map<std::string, Group> groups_;
  std::map<std::string, Backoff> files_;  // by file identity
  ParserStats stats_;
  // Debug files are fetched here (DEBUGINFOD_URLS): a worker has no network. The files handed
  // out are the daemon's, opened for any worker that asks for that build id.
  std::unique_ptr<native::DebuginfodFetcher> debuginfod_;
  std::set<std::string> fetched_;
};

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_WORKER_POOL_H_
