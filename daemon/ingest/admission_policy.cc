// The admission policy of admission_policy.h.
#include "daemon/ingest/admission_policy.h"

#include "daemon/util/log.h"

namespace jitsym::ingest {

Decision AdmissionPolicy::Admit(const std::string& dir, const std::string& name,
                                const std::string& path, const FileIdentity& file,
                                std::optional<uint32_t> pid,
                                const std::optional<security::ProcessFacts>& process,
                                uint64_t now_ns) {
  Decision d;
  if (Ignored(path, file.dev, file.ino)) return d;
  const uint32_t owner = file.facts.uid;
  // Refuses the file for good (until another file is at the path).
  auto refuse = [&](bool untrusted, std::string why) {
    d.verdict = Verdict::kRefused;
    d.why = std::move(why);
    d.untrusted = untrusted;
    d.publish = true;
    Ignore(path, file.dev, file.ino);
    return d;
  };
  if (pid) {
    const security::Admission verdict =
        security::JudgeAdmission(file.facts, process, options_.daemon_start_ns);
    switch (verdict) {
      case security::Admission::kLive:
        if (pending_.erase(path) > 0) d.publish = true;
        break;
      case security::Admission::kExited:
        // Changed last before the daemon started, and before the process now holding the pid
        // (if any) started: what an earlier process of this pid left. Kept as that exited
        // process, owned by the file's owner, so only its owner (and root, and the trusted
        // group) is answered from it, and it never speaks for the live process.
        JITSYM_LOG(kInfo, path, ": last changed before jitsymd started, and pid ", *pid,
                   process ? " now belongs to a later process" : " has exited",
                   "; kept as an exited process of ", security::DescribeUid(owner));
        d.verdict = Verdict::kFollowExited;
        break;
      case security::Admission::kPredates:
        JITSYM_LOG(kWarning, path, ": owned by ", security::DescribeUid(owner),
                   ", last changed before pid ", *pid,
                   " started, so not written by it, and not found at start-up; ignored");
        pending_.erase(path);
        return refuse(true, "untrusted: owned by " + security::DescribeUid(owner) +
                                ", last changed before the process started");
      case security::Admission::kRootLink:
        // Root's file under a second name: possibly a hard link a user made to a file it cannot
        // read, to have it parsed and answered as its own process's symbols.
        JITSYM_LOG(kWarning, path, ": owned by root with ", file.facts.nlink,
                   " hard links, for a process that is not root's; ignored");
        return refuse(true,
                      "untrusted: owned by root with several hard links, for a process "
                      "that is not root's");
      case security::Admission::kUntrusted:
        JITSYM_LOG(kWarning, path, ": owned by ", security::DescribeUid(owner), " but pid ", *pid,
                   " is owned by ", security::DescribeUid(process->uid), "; ignored");
        pending_.erase(path);
        return refuse(true, "untrusted: owned by " + security::DescribeUid(owner) +
                                ", neither root nor the process's owner");
      case security::Admission::kPending: {
        const uint64_t now = now_ns;
        auto it = pending_.find(path);
        if (it != pending_.end() && it->second.dev == file.dev && it->second.ino == file.ino &&
            now >= it->second.deadline_ns) {
          JITSYM_LOG(kWarning, path, ": pid ", *pid, " did not appear within ",
                     options_.pending_timeout_ms, " ms; file owned by ",
                     security::DescribeUid(owner), " ignored");
          pending_.erase(it);
          return refuse(true, "the process did not appear within " +
                                  std::to_string(options_.pending_timeout_ms) + " ms");
        }
        return Hold(dir, name, path, file, now,
                    "pid " + std::to_string(*pid) + " does not exist (yet)");
      }
    }
  }
  const Status refused = ledger_.AdmitFile(owner);
  if (!refused.ok()) {
    // Over the owner's (or the total) quota of open files: tried again for a while, as the
    // owner's idle files give their descriptors back; never at the expense of other users.
    d.verdict = Verdict::kNoRoom;
    d.over_limit = true;
    d.publish = true;
    d.no_room = refused.error().message;
    return d;
  }
  if (d.verdict != Verdict::kFollowExited) d.verdict = Verdict::kFollow;
  return d;
}

Decision AdmissionPolicy::Hold(const std::string& dir, const std::string& name,
                               const std::string& path, const FileIdentity& file, uint64_t now_ns,
                               const std::string& why) {
  Decision d;
  d.verdict = Verdict::kWaiting;
  const uint32_t owner = file.facts.uid;
  auto it = pending_.find(path);
  if (it != pending_.end() && it->second.dev == file.dev && it->second.ino == file.ino) return d;
  // Bounded per owner too: one user's files for pids that never come must not use up the room
  // another user's file needs while its process starts.
  size_t mine = 0;
  const uint32_t person = ledger_.PersonOf(owner);
  for (const auto& [p, waiting] : pending_) mine += ledger_.PersonOf(waiting.uid) == person;
  if (pending_.size() >= ledger_.limits().total_files || mine >= ledger_.limits().user_files) {
    JITSYM_LOG(kWarning, path, ": not followed: too many files waiting for their process (", mine,
               " of ", security::DescribeUid(owner), ", ", pending_.size(), " in all)");
    Ignore(path, file.dev, file.ino);
    d.verdict = Verdict::kRefused;
    d.over_limit = true;
    d.why = "over a limit: too many files waiting for their process";
    return d;
  }
  const uint64_t timeout_ns = static_cast<uint64_t>(options_.pending_timeout_ms) * 1000000;
  pending_[path] = Pending{dir, name, file.dev, file.ino, now_ns + timeout_ns, owner};
  d.publish = true;
  JITSYM_LOG(kInfo, path, ": ", why, "; waiting up to ", options_.pending_timeout_ms,
             " ms before following a file owned by ", security::DescribeUid(owner));
  return d;
}

bool AdmissionPolicy::WaitExpired(const std::string& path, dev_t dev, ino_t ino,
                                  uint64_t now_ns) const {
  auto it = pending_.find(path);
  return it != pending_.end() && it->second.dev == dev && it->second.ino == ino &&
         now_ns >= it->second.deadline_ns;
}

void AdmissionPolicy::Ignore(const std::string& path, dev_t dev, ino_t ino) {
  if (ignored_.size() >= 65536) ignored_.clear();  // bounded; the cost is a repeated log line
  ignored_[path] = {dev, ino};
}

bool AdmissionPolicy::Ignored(const std::string& path, dev_t dev, ino_t ino) const {
  auto it = ignored_.find(path);
  return it != ignored_.end() && it->second.first == dev && it->second.second == ino;
}

void AdmissionPolicy::Forget(const std::string& path) {
  pending_.erase(path);
  ignored_.erase(path);
}

}  // namespace jitsym::ingest
