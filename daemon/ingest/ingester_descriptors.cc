// The ingester's descriptors (see ingester.h): followed files and pidfds count against their
// owner's quota (security::LimitLedger, capped below RLIMIT_NOFILE); idle files give their
// descriptor back and are reopened, the same inode only, on their next event; a file that
// found no descriptor (EMFILE, ENFILE, or its owner's quota) is tried again for a while; finished
// files that indexed nothing are dropped.
//
// Why idle files are closed rather than kept open: inotify already says when a file changes, so
// an idle descriptor buys nothing but a slot, and every slot a user's idle files hold is one a
// quota must count; reopening costs one open(2) on the next change.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "daemon/ingest/ingester.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {

void Ingester::Park(FollowedFile& file) {
  if (file.fd < 0 || file.parked) return;
  CloseFd(file);
  file.parked = true;
  JITSYM_LOG(kDebug, file.path, ": idle; descriptor closed until it changes");
}

bool Ingester::Unpark(FollowedFile& file, os::OpenedFile opened) {
  const struct stat& st = opened.st;
  // Files of FUSE filesystems are never parked: a parked file's path that now leads to one is
  // another file.
  if (!file.parked || opened.mirror || !opened.fd.valid() || st.st_dev != file.dev ||
      st.st_ino != file.ino || !ledger_.AdmitFile(file.uid).ok()) {
    return false;
  }
  file.fd = opened.fd.release();
  file.parked = false;
  MarkDirty(file);
  return true;
}

void Ingester::ParkIdle() {
  if (options_.idle_close_ms <= 0) return;
  const uint64_t now = MonotonicNowNs();
  const uint64_t idle_ns = static_cast<uint64_t>(options_.idle_close_ms) * 1000000ull;
  for (auto& f : files_) {
    // A mirror holds no descriptor of the file's filesystem, and nothing tells when it grows
    // but polling (PollUnwatched): it stays.
    if (f->fd < 0 || f->mirror || f->dirty || f->close_when_drained || f->source->backlog()) {
      continue;
    }
    if (now - std::min(now, f->last_data_ns) < idle_ns) continue;
    // Nothing new since the last look? (An event may be queued; then it reopens the file.)
    struct stat st {};
    if (::fstat(f->fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != f->offset) continue;
    Park(*f);
  }
}

void Ingester::Retry(const std::string& dir, const std::string& name, const char* why) {
  const std::string path = dir + "/" + name;
  struct stat st {};
  auto it = retry_.find(path);
  if (!LstatPath(path, &st)) {  // gone (or on a FUSE filesystem that does not answer)
    if (it != retry_.end()) {
      --retry_per_person_[it->second.person];
      retry_.erase(it);
    }
    return;
  }
  const uint64_t now = MonotonicNowNs();
  if (it != retry_.end()) {
    it->second.again = true;
    if (now < it->second.deadline_ns) {
      ArmRetryTimer();
      return;
    }
    JITSYM_LOG(kWarning, path, ": not followed: ", why, " for ", options_.retry_timeout_ms,
               " ms; ignored until it changes");
    --retry_per_person_[it->second.person];
    retry_.erase(it);
    admission_.Ignore(path, st.st_dev, st.st_ino);
    return;
  }
  // Bounded like the files themselves: per owner and in total.
  const uint32_t person = ledger_.PersonOf(st.st_uid);
  size_t& mine = retry_per_person_[person];
  if (mine >= ledger_.limits().user_files || retry_.size() >= ledger_.limits().total_files) {
    JITSYM_LOG(kWarning, path, ": not followed: ", why, "; too many files waiting to be opened");
    admission_.Ignore(path, st.st_dev, st.st_ino);
    return;
  }
  ++mine;
  const uint64_t timeout_ns = static_cast<uint64_t>(options_.retry_timeout_ms) * 1000000ull;
  retry_[path] = Retrying{dir, name, st.st_uid, person, now + timeout_ns};
  JITSYM_LOG(kWarning, path, ": not followed yet: ", why, "; trying again for up to ",
             options_.retry_timeout_ms, " ms");
  ArmRetryTimer();
}

void Ingester::RecheckRetries() {
  retry_timer_armed_ = false;
  if (stopped_ || retry_.empty()) return;
  std::vector<Retrying> work;
  for (const auto& [path, r] : retry_) {
    // Only when its owner has room: a quota-bound user's files cost no open(2) each tick.
    if (ledger_.HasRoom(r.uid)) work.push_back(r);
  }
  for (const Retrying& r : work) {
    const std::string path = r.dir + "/" + r.name;
    auto it = retry_.find(path);
    if (it == retry_.end()) continue;
    it->second.again = false;
    Discover(r.dir, r.name);  // calls Retry (which sets `again`) if there is still no room
    it = retry_.find(path);
    if (it != retry_.end() && !it->second.again) {  // followed now, or decided otherwise
      --retry_per_person_[it->second.person];
      retry_.erase(it);
    }
  }
  // Past their deadline: given up (Retry logs and ignores them).
  const uint64_t now = MonotonicNowNs();
  std::vector<Retrying> expired;
  for (const auto& [path, r] : retry_) {
    if (now >= r.deadline_ns) expired.push_back(r);
  }
  for (const Retrying& r : expired) Retry(r.dir, r.name, "no room");
  if (!dirty_.empty() || publish_pending_) PostDrain();
  ArmRetryTimer();
}

void Ingester::ArmRetryTimer() {
  if (retry_timer_armed_ || retry_.empty() || stopped_) return;
  retry_timer_armed_ = true;
  retry_timer_.expires_after(std::chrono::milliseconds(options_.retry_ms));
  retry_timer_.async_wait([this](const boost::system::error_code& ec) {
    retry_timer_armed_ = false;
    if (!ec) RecheckRetries();
  });
}

void Ingester::PruneEmpty() {
  bool pruned = false;
  for (auto& f : files_) {
    if (f->fd >= 0 || f->parked || f->dirty || f->state == SourceState::kFollowing ||
        f->source->records() != 0 || f->source->code().ranges().size() != 0) {
      continue;
    }
    // Still at its path (refused after reading, e.g. an .mlpd naming another user's pid, or an
    // empty map of an exited process): forgotten, so that if it is written again it is judged
    // and read as a new file (another process may have the pid by then).
    Forget(*f);
    if (Incarnation* inc = f->incarnation) {
      std::erase(inc->files, f.get());
      inc->changed = true;
    }
    f.reset();
    pruned = true;
  }
  if (!pruned) return;
  std::erase_if(files_, [](const std::unique_ptr<FollowedFile>& f) { return !f; });
  lifecycle_changed_ = true;
  Publish();
}

}  // namespace jitsym::ingest
