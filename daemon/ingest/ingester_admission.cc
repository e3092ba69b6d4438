// The ingester's admission of files (see ingester.h): which files naming a pid are followed,
// and as which process, by security::JudgeAdmission on facts a user cannot set; files waiting
// for their process; refusals remembered so that they are not logged again.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "daemon/ingest/ingester.h"
#include "daemon/os/proc.h"
#include "daemon/security/file_trust.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {

security::FileFacts Ingester::FileFactsOf(const struct stat& st) const {
  security::FileFacts facts;
  facts.uid = st.st_uid;
  facts.nlink = st.st_nlink;
  facts.ctime_ns = static_cast<uint64_t>(st.st_ctim.tv_sec) * 1000000000ull +
                   static_cast<uint64_t>(st.st_ctim.tv_nsec);
  facts.found_at_startup = startup_scan_;
  return facts;
}

std::optional<security::ProcessFacts> Ingester::ProcessFactsOf(
    const std::optional<os::ProcessIdentity>& identity) {
  if (!identity) return std::nullopt;
  return security::ProcessFacts{identity->uid, os::StartTicksToRealtimeNs(identity->start_ticks)};
}

Ingester::Incarnation* Ingester::ExitedIncarnationFor(
    uint32_t pid, const std::optional<os::ProcessIdentity>& live, uint32_t uid) {
  if (live) {
    // The process holding the pid now is known too, even with no file of its own yet: without
    // it the exited one would be the newest incarnation, the one a lookup without a time (and
    // a symbols listing, whose access check is the live process's owner) is answered from.
    IncarnationFor(pid);
  }
  auto& incs = processes_[pid];
  for (auto& inc : incs) {
    if (inc->restored && inc->uid == uid) return inc.get();  // its jitdump and perf map
  }
  auto inc = std::make_unique<Incarnation>();
  inc->pid = pid;
  inc->id = next_incarnation_++;
  inc->uid = uid;
  inc->restored = true;
  // Oldest first: it ended before anything the daemon has seen of this pid.
  return incs.insert(incs.begin(), std::move(inc))->get();
}

bool Ingester::Admit(const std::string& dir, const std::string& name, const std::string& path,
                     std::optional<uint32_t> pid, const struct stat& st, Admitted* out) {
  *out = Admitted{};
  if (Ignored(path, st)) return false;
  const uint32_t owner = st.st_uid;
  if (pid) {
    const auto identity = os::ReadProcessIdentity(*pid);
    out->identity = identity;
    const security::Admission verdict =
        security::JudgeAdmission(FileFactsOf(st), ProcessFactsOf(identity), started_realtime_ns_);
    switch (verdict) {
      case security::Admission::kLive:
        if (pending_.erase(path) > 0) publish_pending_ = true;
        break;
      case security::Admission::kExited:
        // Changed last before the daemon started, and before the process now holding the pid
        // (if any) started: what an earlier process of this pid left. Kept as that exited
        // process, owned by the file's owner, so only its owner (and root, and the trusted
        // group) is answered from it, and it never speaks for the live process.
        JITSYM_LOG(kInfo, path, ": last changed before jitsymd started, and pid ", *pid,
                   identity ? " now belongs to a later process" : " has exited",
                   "; kept as an exited process of ", security::DescribeUid(owner));
        out->exited = true;
        break;
      case security::Admission::kPredates:
        ++files_untrusted_;
        publish_pending_ = true;
        JITSYM_LOG(kWarning, path, ": owned by ", security::DescribeUid(owner),
                   ", last changed before pid ", *pid,
                   " started, so not written by it, and not found at start-up; ignored");
        pending_.erase(path);
        Ignore(path, st);
        return false;
      case security::Admission::kRootLink:
        // Root's file under a second name: possibly a hard link a user made to a file it cannot
        // read, to have it parsed and answered as its own process's symbols.
        ++files_untrusted_;
        publish_pending_ = true;
        JITSYM_LOG(kWarning, path, ": owned by root with ", st.st_nlink,
                   " hard links, for a process that is not root's; ignored");
        Ignore(path, st);
        return false;
      case security::Admission::kUntrusted:
        ++files_untrusted_;
        publish_pending_ = true;
        JITSYM_LOG(kWarning, path, ": owned by ", security::DescribeUid(owner), " but pid ", *pid,
                   " is owned by ", security::DescribeUid(identity->uid), "; ignored");
        pending_.erase(path);
        Ignore(path, st);
        return false;
      case security::Admission::kPending: {
        const uint64_t now = MonotonicNowNs();
        auto it = pending_.find(path);
        if (it == pending_.end() || it->second.dev != st.st_dev || it->second.ino != st.st_ino) {
          // Bounded per owner too: one user's files for pids that never come must not use up
          // the room another user's file needs while its process starts.
          size_t mine = 0;
          for (const auto& [p, waiting] : pending_) mine += waiting.uid == owner;
          if (pending_.size() >= ledger_.limits().total_files ||
              mine >= ledger_.limits().user_files) {
            ++files_over_limit_;
            JITSYM_LOG(kWarning, path, ": not followed: too many files waiting for their process (",
                       mine, " of ", security::DescribeUid(owner), ", ", pending_.size(),
                       " in all)");
            Ignore(path, st);
            return false;
          }
          const uint64_t timeout_ns = static_cast<uint64_t>(options_.pending_timeout_ms) * 1000000;
          pending_[path] = Pending{dir, name, st.st_dev, st.st_ino, now + timeout_ns, owner};
          publish_pending_ = true;
          JITSYM_LOG(kInfo, path, ": pid ", *pid, " does not exist (yet); waiting up to ",
                     options_.pending_timeout_ms, " ms for it before following a file owned by ",
                     security::DescribeUid(owner));
          ArmPendingTimer();
        } else if (now >= it->second.deadline_ns) {
          ++files_untrusted_;
          publish_pending_ = true;
          JITSYM_LOG(kWarning, path, ": pid ", *pid, " did not appear within ",
                     options_.pending_timeout_ms, " ms; file owned by ",
                     security::DescribeUid(owner), " ignored");
          pending_.erase(it);
          Ignore(path, st);
        }
        return false;
      }
    }
  }
  const Status refused = ledger_.AdmitFile(owner);
  if (!refused.ok()) {
    // Over the owner's (or the total) quota of open files: tried again for a while, as the
    // owner's idle files give their descriptors back; never at the expense of other users.
    ++files_over_limit_;
    publish_pending_ = true;
    Retry(dir, name, refused.error().message.c_str());
    return false;
  }
  return true;
}

void Ingester::RecheckPending() {
  pending_timer_armed_ = false;
  if (stopped_ || pending_.empty()) return;
  std::vector<Pending> work;
  for (const auto& [path, p] : pending_) work.push_back(p);
  for (const Pending& p : work) {
    const std::string path = p.dir + "/" + p.name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || st.st_dev != p.dev || st.st_ino != p.ino) {
      pending_.erase(path);  // gone or replaced (a replacement is its own event)
      publish_pending_ = true;
      continue;
    }
    Discover(p.dir, p.name);
  }
  if (!dirty_.empty() || publish_pending_) PostDrain();
  ArmPendingTimer();
}

void Ingester::ArmPendingTimer() {
  if (pending_timer_armed_ || pending_.empty() || stopped_) return;
  pending_timer_armed_ = true;
  pending_timer_.expires_after(std::chrono::milliseconds(100));
  pending_timer_.async_wait([this](const boost::system::error_code& ec) {
    pending_timer_armed_ = false;
    if (!ec) RecheckPending();
  });
}

void Ingester::Ignore(const std::string& path, const struct stat& st) {
  if (ignored_.size() >= 65536) ignored_.clear();  // bounded; the cost is a repeated log line
  ignored_[path] = {st.st_dev, st.st_ino};
}

bool Ingester::Ignored(const std::string& path, const struct stat& st) const {
  auto it = ignored_.find(path);
  return it != ignored_.end() && it->second.first == st.st_dev && it->second.second == st.st_ino;
}

}  // namespace jitsym::ingest
