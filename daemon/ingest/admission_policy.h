// Which newly opened files the ingester follows, and as which process: a thin adapter around
// security::JudgeAdmission (the one trust rule, on facts a user cannot set) that adds what the
// rule needs remembered over time: files waiting for their process (bounded per owner, with a
// deadline), refusals (so that a refused file's further writes are neither judged nor logged
// again) and the owner's quota of followed files (security::LimitLedger).
//
// It does no I/O: the caller gives it the opened file's facts and the process holding the pid,
// so it is tested with made-up facts (tests/unit/admission_policy_test.cc).
#ifndef JITSYM_DAEMON_INGEST_ADMISSION_POLICY_H_
#define JITSYM_DAEMON_INGEST_ADMISSION_POLICY_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "daemon/security/file_trust.h"
#include "daemon/security/limits.h"

namespace jitsym::ingest {

// What identifies an opened file, and the facts the trust rule decides on.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  security::FileFacts facts;  // owner, link count, ctime, found at start-up
};

enum class Verdict {
  kFollow,        // follow it, as the live process of its pid (or as a file naming none)
  kFollowExited,  // follow it, as an earlier, exited process of its pid
  kRefused,       // not followed (logged once; ignored until it is another file)
  kWaiting,       // its pid does not exist yet: asked again later (RecheckPending)
  kNoRoom,        // over its owner's (or the total) quota of followed files: try again later
};

struct Decision {
  Verdict verdict = Verdict::kRefused;
  bool untrusted = false;   // counts in files_untrusted
  bool over_limit = false;  // counts in files_over_limit
  bool publish = false;     // the published counters (pending, untrusted, ...) changed
  std::string no_room;      // kNoRoom: which quota
  std::string why;          // kRefused: why, for people (explain)
};

class AdmissionPolicy {
 public:
  struct Options {
    int pending_timeout_ms = 5000;
    uint64_t daemon_start_ns = 0;  // CLOCK_REALTIME ns
  };
  AdmissionPolicy(security::LimitLedger& ledger, Options options)
      : ledger_(ledger), options_(options) {}

  // A file at `path` (in `dir` as `name`) was opened. `pid`: the process its name names, if
  // any; `process`: the process holding that pid now. `now_ns`: CLOCK_MONOTONIC. A followed
  // file is charged to its owner's quota (release it with the ledger).
  Decision Admit(const std::string& dir, const std::string& name, const std::string& path,
                 const FileIdentity& file, std::optional<uint32_t> pid,
                 const std::optional<security::ProcessFacts>& process, uint64_t now_ns);

  // Makes the file wait (a kWaiting decision) for the reason `why`, bounded per owner like
  // files waiting for their pid (kRefused and over_limit beyond it); asked again by the
  // caller's recheck until its deadline.
  Decision Hold(const std::string& dir, const std::string& name, const std::string& path,
                const FileIdentity& file, uint64_t now_ns, const std::string& why);
  // Whether this file has waited until its deadline.
  bool WaitExpired(const std::string& path, dev_t dev, ino_t ino, uint64_t now_ns) const;
  // Remembers a refused file, so that its further modifications are not logged again.
  void Ignore(const std::string& path, dev_t dev, ino_t ino);
  bool Ignored(const std::string& path, dev_t dev, ino_t ino) const;
  // The file at `path` is gone: a new file there (which may get the same inode number) is
  // judged afresh.
  void Forget(const std::string& path);

  struct Pending {
    std::string dir, name;
    dev_t dev = 0;
    ino_t ino = 0;
    uint64_t deadline_ns = 0;  // CLOCK_MONOTONIC
    uint32_t uid = 0;          // the file's owner
  };
  // Files waiting for their pid to appear, by path.
  const std::unordered_map<std::string, Pending>& pending() const { return pending_; }
  bool DropPending(const std::string& path) { return pending_.erase(path) > 0; }
  uint64_t daemon_start_ns() const { return options_.daemon_start_ns; }

 private:
  security::LimitLedger& ledger_;
  Options options_;
  std::unordered_map<std::string, Pending> pending_;
  std::unordered_map<std::string, std::pair<dev_t, ino_t>> ignored_;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_ADMISSION_POLICY_H_
