// The ingester's coordination (see ingester.h): what a file event means for the file at that
// path, opening and admitting files, the order files are read in, and finishing them.
#include "daemon/ingest/ingester.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "daemon/index/huge_page_allocator.h"
#include "daemon/ingest/proc_writer_probe.h"
#include "daemon/os/proc.h"
#include "daemon/security/file_trust.h"
#include "daemon/security/writer_rule.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {

namespace {

// Why a file waits to be opened or judged: errno EMFILE (the daemon's limit), ENFILE (the
// system's), or ENOMEM.
const char* OutOfDescriptors(int error) {
  if (error == EMFILE) return "too many open files in jitsymd";
  if (error == ENFILE) return "too many open files in the system";
  return std::strerror(error);
}

}  // namespace

Ingester::Ingester(boost::asio::io_context& io, IngesterOptions options, index::ViewCell& cell)
    : io_(io),
      options_(std::move(options)),
      cell_(cell),
      ledger_owner_(options_.ledger ? options_.ledger
                                    : std::make_shared<security::LimitLedger>(options_.limits)),
      ledger_(*ledger_owner_),
      watcher_(io, {[this](const std::string& dir, const std::string& name, uint32_t mask) {
                      OnEvent(dir, name, mask);
                    },
                    [this](const std::string& dir, const std::string& name) { OnFound(dir, name); },
                    [this] {
                      // New bytes to read, or a state change (a deletion) to publish.
                      if (!dirty_.empty() || publish_pending_) PostDrain();
                    }}),
      probe_(io, ledger_, [this](Incarnation* inc) { OnExited(inc); }),
      table_(probe_),
      admission_(ledger_, {options_.pending_timeout_ms, NowNs(CLOCK_REALTIME)}),
      scanner_(io, catalog_,
               [&] {
                 ProcessScanner::Options o;
                 o.period_ns = static_cast<uint64_t>(std::max(options_.discovery_ms, 1)) * 1000000;
                 return o;
               }(),
               {[this](uint32_t pid, const std::string& path, uint64_t dev, uint64_t ino) {
                  OnMarker(pid, path, dev, ino);
                },
                [this](uint32_t pid, uint64_t, uint64_t mnt_ns, const std::string& dir) {
                  OnForeignDir(pid, mnt_ns, dir);
                },
                [this](const std::string& dir) { OnForeignDirGone(dir); },
                [this](uint32_t pid) { OnProcessGone(pid); }}),
      writer_probe_(std::make_unique<ProcWriterProbe>(catalog_)),
      maintenance_(io),
      pending_timer_(io),
      retry_timer_(io) {
  read_buf_.resize(options_.read_chunk);
}

Ingester::~Ingester() {
  for (auto& f : files_) {
    if (f->fd >= 0 && !f->mirror) ::close(f->fd);
  }
}

bool Ingester::LstatPath(const std::string& path, struct stat* st) {
  auto e = os::StatPath(path, /*no_follow_last=*/true);
  if (!e || e->error != 0) return false;
  *st = e->st;
  return true;
}

bool Ingester::StatOpen(const FollowedFile& file, struct stat* st) {
  if (file.mirror) {
    *st = file.mirror->st();
    return true;
  }
  return file.fd >= 0 && ::fstat(file.fd, st) == 0;
}

bool Ingester::RewrittenSince(const FollowedFile& old, os::OpenedFile& now) {
  if (now.mirror) {
    // What was read of it (its first and last bytes) is copied to be compared; a filesystem
    // that does not answer now leaves the old file as it is.
    if (Status copied = now.mirror->Copy(old.head_len, old.tail_offset, old.tail_len);
        !copied.ok()) {
      JITSYM_LOG(kDebug, old.path, ": not compared with what was read: ", copied.error().message);
      return false;
    }
    return Rewritten(old, now.mirror->fd(), static_cast<uint64_t>(now.mirror->st().st_size));
  }
  return Rewritten(old, now.fd.get(), static_cast<uint64_t>(now.st.st_size));
}

void Ingester::Start() {
  watcher_.Open(options_.watch_dirs);
  // Opened now, while there are descriptors: a file that arrives when there is one left can
  // still be opened (with it) and judged later.
  for (const std::string& dir : options_.watch_dirs) DirFd(dir);
  // Watch first, then scan: a file created in between is seen twice, which is harmless.
  startup_scan_ = true;
  watcher_.ScanAll();
  // Then the jitdumps processes map elsewhere, and containers' /tmp.
  if (options_.discovery_ms > 0) scanner_.Tick(MonotonicNowNs());
  startup_scan_ = false;
  DrainDirty();
  watcher_.Listen();
  if (options_.discovery_ms > 0) scanner_.Start();
  ScheduleMaintenance();
}

void Ingester::Stop() {
  stopped_ = true;
  maintenance_.cancel();
  pending_timer_.cancel();
  retry_timer_.cancel();
  watcher_.Close();
  scanner_.Stop();
  probe_.Stop();
  table_.UnwatchAll();
}

void Ingester::OnEvent(const std::string& dir, const std::string& name, uint32_t mask) {
  const std::string path = dir + "/" + name;
  auto known = by_path_.find(path);
  if (mask & (IN_DELETE | IN_MOVED_FROM)) {
    // A refusal was for that file: a new file at the path (which may get the same inode
    // number) is judged afresh.
    admission_.Forget(path);
    if (auto r = retry_.find(path); r != retry_.end()) {
      --retry_per_person_[r->second.person];
      retry_.erase(r);
    }
    evicted_.erase(path);
    if (known != by_path_.end()) {
      FollowedFile& f = *known->second;
      Drain(f);  // whatever was written before the unlink is still readable
      Finish(f, SourceState::kDeleted);
      Forget(f);
    }
    return;
  }
  // A new file at a known path (created, or renamed over it: how `jitsym perfmap --force` and
  // most writers replace a file atomically) is a replacement, which Discover tells from the
  // same file by its inode; so is any event for a file not open: one whose descriptor was
  // given back while idle (Discover reopens it, the same inode only), or a finished one
  // written again (a new file then).
  if (known != by_path_.end() && !(mask & (IN_CREATE | IN_MOVED_TO)) && known->second->fd >= 0) {
    MarkDirty(*known->second);
  } else if (mask & (IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE)) {
    Discover(dir, name);
  }
}

void Ingester::OnFound(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  auto known = by_path_.find(path);
  if (known != by_path_.end() && known->second->fd >= 0) {
    // Still the same file? A rescan after lost events may find a replacement.
    struct stat st {};
    if (LstatPath(path, &st) && st.st_dev == known->second->dev &&
        st.st_ino == known->second->ino) {
      MarkDirty(*known->second);
      return;
    }
  }
  Discover(dir, name);
}

void Ingester::Discover(const std::string& dir, const std::string& name) {
  auto match = MatchFile(name);
  if (!match) return;
  const std::string path = dir + "/" + name;
  // Never follow a symlink planted in a shared directory; only regular files. A file on a
  // FUSE filesystem is never opened here: a worker process copies it (os/guarded_fs.h).
  auto opened = OpenInDir(dir, name);
  if (!opened) {
    // Its filesystem did not answer (logged where it timed out), or is not asked now.
    JITSYM_LOG(kInfo, path, ": not followed now: ", opened.error().message);
    return;
  }
  if (const int error = opened->error; error != 0) {
    if (error == ELOOP) {
      JITSYM_LOG(kWarning, path, ": is a symbolic link; not followed");
    } else if (error == EMFILE || error == ENFILE) {
      // Out of descriptors: not this file's fault. Tried again shortly (idle files give theirs
      // back), not dropped.
      Retry(dir, name, OutOfDescriptors(error));
    } else if (error != ENOENT) {
      JITSYM_LOG(kWarning, path, ": cannot open: ", std::strerror(error));
    }
    return;
  }
  const struct stat st = opened->st;
  if (!S_ISREG(st.st_mode)) {
    JITSYM_LOG(kWarning, path, ": not a regular file; not followed");
    return;
  }
  if (SkipEvicted(path, st)) return;
  if (auto known = by_path_.find(path); known != by_path_.end()) {
    FollowedFile& old = *known->second;
    if (old.dev == st.st_dev && old.ino == st.st_ino) {
      if (old.parked) {
        if (!Unpark(old, std::move(*opened))) {
          Retry(dir, name, "over its owner's quota of open files");
        }
        return;
      }
      const bool unchanged = st.st_ctim.tv_sec == old.finished_ctime.tv_sec &&
                             st.st_ctim.tv_nsec == old.finished_ctime.tv_nsec;
      if (old.fd >= 0 || unchanged || !RewrittenSince(old, *opened)) {
        // Open: read on. Finished: nothing new (its writer's close), or appended to (a file
        // stopped at an error or limit stays stopped).
        MarkDirty(old);
        return;
      }
      // Finished (its process exited, or stopped at an error or limit) and rewritten, e.g.
      // truncated and written again by a later process with the same pid: a new file from
      // here on; what the old one read stays.
    }
  }
  // Judging the file reads /proc, a directory and a file at a time: with no descriptor for that,
  // its live writer would read as a process that does not exist.
  if (match->pid && !os::DescriptorsFree(2)) {
    const int error = errno;
    Retry(dir, name, OutOfDescriptors(error));
    return;
  }
  // Which process the name's pid means: containers repeat pid numbers (writer_rule.h).
  std::optional<uint32_t> pid = match->pid;
  if (pid && !IdentifyWriter(dir, name, path, *match, st, &pid)) return;
  bool exited = false;
  std::optional<os::ProcessIdentity> identity;
  if (!Admit(dir, name, path, pid, st, &exited, &identity)) return;
  if (auto known = by_path_.find(path); known != by_path_.end()) {
    FollowedFile& old = *known->second;
    // Replaced by another file of the same name: the old one's symbols stay.
    if (old.fd >= 0 || old.parked) Finish(old, SourceState::kReplaced);
    Forget(old);
  }
  auto file = std::make_unique<FollowedFile>();
  file->dir = dir;
  file->name = name;
  file->path = path;
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  file->uid = st.st_uid;
  const FileIdentity id = IdentityOf(st);
  file->ctime_ns = id.facts.ctime_ns;
  file->nlink = id.facts.nlink;
  file->found_at_startup = id.facts.found_at_startup;
  file->mirror = std::move(opened->mirror);
  file->fd = file->mirror ? file->mirror->fd() : opened->fd.release();
  file->last_data_ns = MonotonicNowNs();
  file->image = match->image;
  SourceContext context;
  context.discovered_ns = file->last_data_ns;
  context.initial_size = static_cast<uint64_t>(st.st_size);
  context.allocated_size = static_cast<uint64_t>(st.st_blocks) * 512;
  if (pid) {
    Incarnation* inc = exited ? table_.Exited(*pid, identity, st.st_uid) : table_.Live(*pid);
    const bool reused = !exited && identity && inc->start_ticks != identity->start_ticks;
    if (reused || (st.st_uid != 0 && inc->uid && *inc->uid != st.st_uid)) {
      // The pid was reused by another process since Admit looked.
      ++counters_.files_untrusted;
      JITSYM_LOG(kWarning, path, ": owned by ", security::DescribeUid(st.st_uid), " but pid ", *pid,
                 " is now another process",
                 inc->uid ? log::Cat(", owned by ", security::DescribeUid(*inc->uid)) : "",
                 "; ignored");
      Refuse(path, st.st_uid, *pid,
             "untrusted: pid " + std::to_string(*pid) + " is now another process");
      ledger_.ReleaseFile(st.st_uid);
      return;
    }
    file->incarnation = inc;
    inc->files.push_back(file.get());
    inc->changed = true;
    if (inc->alive && !inc->ns) LearnNamespaces(*inc);
    context.process_start_ns = inc->start_time;
  }
  file->source = match->create(path, context);
  JITSYM_LOG(kInfo, "following ", path,
             file->incarnation ? log::Cat(" (pid ", file->incarnation->pid, " incarnation ",
                                          file->incarnation->id, ")")
                               : std::string(),
             file->mirror ? log::Cat(" on ", os::MountFor(file->mirror->file()).Describe(),
                                     ", read through a worker process")
                          : std::string());
  by_path_[path] = file.get();
  MarkDirty(*file);
  files_.push_back(std::move(file));
}

FileIdentity Ingester::IdentityOf(const struct stat& st) const {
  FileIdentity id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.facts.uid = st.st_uid;
  id.facts.nlink = st.st_nlink;
  id.facts.ctime_ns = static_cast<uint64_t>(st.st_ctim.tv_sec) * 1000000000ull +
                      static_cast<uint64_t>(st.st_ctim.tv_nsec);
  id.facts.found_at_startup = startup_scan_;
  return id;
}

namespace {

std::optional<security::ProcessFacts> ProcessFactsOf(
    const std::optional<os::ProcessIdentity>& identity) {
  if (!identity) return std::nullopt;
  return security::ProcessFacts{identity->uid, os::StartTicksToRealtimeNs(identity->start_ticks)};
}

}  // namespace

bool Ingester::IdentifyWriter(const std::string& dir, const std::string& name,
                              const std::string& path, const FileMatch& match,
                              const struct stat& st, std::optional<uint32_t>* pid) {
  const FileIdentity id = IdentityOf(st);
  if (admission_.Ignored(path, id.dev, id.ino)) return false;
  const uint64_t now = MonotonicNowNs();
  auto where = dir_context_.find(dir);
  const security::WriterFacts facts =
      GatherWriterFacts(*writer_probe_, where != dir_context_.end() ? where->second : DirContext{},
                        **pid, match.origin == Origin::kJitdump, id.dev, id.ino, id.facts.uid,
                        id.facts.ctime_ns, id.facts.found_at_startup);
  const security::WriterJudgement w =
      security::JudgeWriter(facts, admission_.WaitExpired(path, id.dev, id.ino, now));
  switch (w.kind) {
    case security::WriterKind::kProcess:
      if (w.host_pid != **pid) {
        JITSYM_LOG(kInfo, path, ": written by host pid ", w.host_pid, " (pid ", **pid,
                   " in its pid namespace)");
      }
      *pid = w.host_pid;
      return true;
    case security::WriterKind::kByName:
      *pid = w.host_pid;
      return true;
    case security::WriterKind::kWait: {
      const Decision d = admission_.Hold(dir, name, path, id, now, w.why);
      counters_.files_over_limit += d.over_limit;
      publish_pending_ = publish_pending_ || d.publish;
      if (d.verdict == Verdict::kWaiting) ArmPendingTimer();
      return false;
    }
    case security::WriterKind::kUnattached:
      admission_.DropPending(path);
      admission_.Ignore(path, id.dev, id.ino);
      Unattach(path, id.facts.uid, w.why);
      return false;
  }
  return false;
}

void Ingester::Unattach(const std::string& path, uint32_t uid, const std::string& why) {
  JITSYM_LOG(kWarning, path, ": not attached to any process: ", why);
  ++counters_.files_unattached;
  // Bounded: the newest are kept (a user creating endless such files pushes out only older
  // entries of the list; the counter keeps counting).
  constexpr size_t kMaxUnattached = 1024;
  auto list = std::make_shared<std::vector<index::UnattachedFile>>();
  if (unattached_) *list = *unattached_;
  list->erase(std::remove_if(list->begin(), list->end(),
                             [&](const index::UnattachedFile& u) { return u.path == path; }),
              list->end());
  if (list->size() >= kMaxUnattached) list->erase(list->begin());
  list->push_back({path, uid, why});
  unattached_ = std::move(list);
  lifecycle_changed_ = true;
  publish_pending_ = true;
}

void Ingester::Refuse(const std::string& path, uint32_t uid, uint32_t pid, const std::string& why) {
  // Bounded as the unattached list is: the newest are kept.
  constexpr size_t kMaxRefused = 1024;
  auto list = std::make_shared<std::vector<index::RefusedFile>>();
  if (refused_) *list = *refused_;
  std::erase_if(*list, [&](const index::RefusedFile& r) { return r.path == path; });
  if (list->size() >= kMaxRefused) list->erase(list->begin());
  list->push_back({path, uid, pid, why});
  refused_ = std::move(list);
  lifecycle_changed_ = true;
  publish_pending_ = true;
}

void Ingester::LearnNamespaces(Incarnation& inc) {
  auto ns = os::ReadNamespaceFacts(inc.pid);
  // Only while it is the same process (its start time) and a process, not a thread.
  const auto identity = os::ReadProcessIdentity(inc.pid);
  if (!ns || ns->tgid != inc.pid || !identity || !inc.start_ticks ||
      identity->start_ticks != *inc.start_ticks) {
    return;
  }
  inc.ns = std::move(*ns);
  inc.changed = true;
}

bool Ingester::Admit(const std::string& dir, const std::string& name, const std::string& path,
                     std::optional<uint32_t> pid, const struct stat& st, bool* exited,
                     std::optional<os::ProcessIdentity>* identity) {
  const FileIdentity id = IdentityOf(st);
  if (admission_.Ignored(path, id.dev, id.ino)) return false;
  if (pid) {
    const os::ProcessLookup process = os::LookUpProcess(*pid);
    if (process.error != 0) {
      Retry(dir, name, OutOfDescriptors(process.error));
      return false;
    }
    *identity = process.identity;
  }
  const Decision d =
      admission_.Admit(dir, name, path, id, pid, ProcessFactsOf(*identity), MonotonicNowNs());
  counters_.files_untrusted += d.untrusted;
  counters_.files_over_limit += d.over_limit;
  publish_pending_ = publish_pending_ || d.publish;
  switch (d.verdict) {
    case Verdict::kFollow:
      return true;
    case Verdict::kFollowExited:
      *exited = true;
      return true;
    case Verdict::kWaiting:
      ArmPendingTimer();
      return false;
    case Verdict::kNoRoom:
      Retry(dir, name, d.no_room.c_str());
      return false;
    case Verdict::kRefused:
      if (pid && !d.why.empty()) Refuse(path, id.facts.uid, *pid, d.why);
      return false;
  }
  return false;
}

void Ingester::RecheckPending() {
  pending_timer_armed_ = false;
  if (stopped_ || admission_.pending().empty()) return;
  std::vector<AdmissionPolicy::Pending> work;
  for (const auto& [path, p] : admission_.pending()) work.push_back(p);
  for (const AdmissionPolicy::Pending& p : work) {
    const std::string path = p.dir + "/" + p.name;
    struct stat st {};
    if (!LstatPath(path, &st) || st.st_dev != p.dev || st.st_ino != p.ino) {
      admission_.DropPending(path);  // gone or replaced (a replacement is its own event)
      publish_pending_ = true;
      continue;
    }
    Discover(p.dir, p.name);
  }
  if (!dirty_.empty() || publish_pending_) PostDrain();
  ArmPendingTimer();
}

void Ingester::ArmPendingTimer() {
  if (pending_timer_armed_ || admission_.pending().empty() || stopped_) return;
  pending_timer_armed_ = true;
  pending_timer_.expires_after(std::chrono::milliseconds(100));
  pending_timer_.async_wait([this](const boost::system::error_code& ec) {
    pending_timer_armed_ = false;
    if (!ec) RecheckPending();
  });
}

void Ingester::OnExited(Incarnation* p) {
  // The last threads, if the process is still there to list. Usually it is not: a pidfd
  // signals once every thread has exited, so threads started since the last tick are missed.
  threads_.Look(*p, table_.processes());
  table_.MarkExited(*p);
  JITSYM_LOG(kInfo, "pid ", p->pid, " incarnation ", p->id, " exited");
  // Read what it wrote last before saying it exited.
  uint64_t spent = 0;
  for (FollowedFile* f : p->files) {
    if (f->parked) {
      // Idle: anything written since the last look (an event not handled yet) is read
      // through a fresh descriptor.
      auto opened = os::OpenForReading(f->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
      if (opened && opened->error == 0) Unpark(*f, std::move(*opened));
      if (f->fd < 0) {
        f->parked = false;
        Finish(*f, SourceState::kClosed);
        continue;
      }
    }
    if (f->fd < 0) continue;
    // One turn now, within one turn's budget for all the files together (a process may have
    // hundreds); a file with more to read (a large or compressed one, or one beyond that
    // budget) is read on in turns like any other, then closed: nobody writes it any more.
    if (spent >= options_.drain_budget) {
      f->close_when_drained = true;
      MarkDirty(*f);
      continue;
    }
    const uint64_t before = f->charged;
    const bool more = Drain(*f);
    spent += f->charged - before;
    if (more) {
      f->close_when_drained = true;
      MarkDirty(*f);
    } else if (f->fd >= 0) {
      Finish(*f, SourceState::kClosed);
    }
  }
  if (!dirty_.empty()) PostDrain();
  Publish();
}

void Ingester::MarkDirty(FollowedFile& file) {
  if (file.dirty || file.fd < 0) return;
  file.dirty = true;
  dirty_.push_back(&file);
}

void Ingester::PostDrain() {
  if (drain_posted_) return;
  drain_posted_ = true;
  // Cleared by the posted call only: DrainDirty called directly (DrainBacklog, which loops on
  // it before the loop runs) must not queue one more call each time, or the loop would start
  // with a backlog of them ahead of everything posted later (a SIGTERM's stop, for one).
  boost::asio::post(io_, [this] {
    drain_posted_ = false;
    DrainDirty();
  });
}

void Ingester::DrainDirty() {
  if (stopped_) return;
  // One pass of the loop gives each owner about kOwnerShareNs: a file's turn is bounded, but
  // a user with hundreds of busy files (gzip bombs) would otherwise make one pass last
  // hundreds of turns, during which nobody else's file is read, nothing is published and the
  // watchdog is not fed. A file whose owner has had its share waits for the next pass, in
  // order; so does a file with more to read, after the others.
  constexpr uint64_t kOwnerShareNs = 20ull * 1000 * 1000;
  std::vector<FollowedFile*> work, later;
  work.swap(dirty_);
  std::unordered_map<uint32_t, uint64_t> spent;
  for (FollowedFile* f : work) {
    uint64_t& mine = spent[ledger_.PersonOf(f->uid)];
    if (mine >= kOwnerShareNs) {
      later.push_back(f);  // still dirty
      continue;
    }
    const uint64_t t0 = MonotonicNowNs();
    f->dirty = false;
    if (Drain(*f)) {
      MarkDirty(*f);  // budget spent: continue after the others
    } else if (f->close_when_drained && f->fd >= 0) {
      Finish(*f, SourceState::kClosed);
    }
    mine += MonotonicNowNs() - t0;
  }
  later.insert(later.end(), dirty_.begin(), dirty_.end());
  dirty_.swap(later);
  Publish();
  if (!dirty_.empty()) PostDrain();
}

bool Ingester::Drain(FollowedFile& file) {
  if (file.fd < 0) return false;
  const uint64_t records_before = file.source->records();
  const uint64_t offset_before = file.offset;
  if (file.mirror) {
    // A file of a FUSE filesystem: a worker copies what is new (and what was read last, to
    // notice a rewrite) into the mirror first. A filesystem that does not answer leaves the
    // file as it is; it is tried again at the next maintenance tick.
    const uint64_t from = file.tail_len > 0 ? file.tail_offset : file.offset;
    if (Status copied =
            file.mirror->Copy(file.head_len, from, file.offset - from + options_.drain_budget);
        !copied.ok()) {
      JITSYM_LOG(kDebug, file.path, ": not read now: ", copied.error().message);
      return false;
    }
  }
  ReadTurn turn{ledger_, read_buf_, options_.drain_budget, &counters_.bytes_ingested};
  uint64_t size = 0;
  ReadStop stop = ReadNew(file, turn, &size);
  if (file.mirror && file.fd >= 0) {
    // What was read is not needed again; more than one copy's worth is read in later turns.
    file.mirror->Drop(file.head_len, file.tail_len > 0 ? file.tail_offset : file.offset);
    if (stop == ReadStop::kCaughtUp && file.mirror->more()) stop = ReadStop::kBudget;
  }
  switch (stop) {
    case ReadStop::kUnreadable:
      return false;
    case ReadStop::kRewritten: {
      const std::string dir = file.dir, name = file.name;
      Finish(file, SourceState::kTruncated);
      Forget(file);
      Discover(dir, name);
      return false;
    }
    case ReadStop::kLimit:
      ++counters_.files_over_limit;
      Finish(file, SourceState::kLimit);
      break;
    case ReadStop::kError:
      ++counters_.files_failed;
      Finish(file, SourceState::kError);
      break;
    case ReadStop::kCaughtUp:
    case ReadStop::kBudget:
      break;
  }
  if (file.offset != offset_before) {
    file.last_growth_ns = MonotonicNowNs();
    file.settled = false;
  }
  if (!file.incarnation && !file.image) AttachToContentPid(file);
  if (file.source->records() != records_before || file.changed) {
    file.changed = true;
    file.last_data_ns = MonotonicNowNs();
    if (file.incarnation) file.incarnation->changed = true;
  }
  return file.fd >= 0 && stop == ReadStop::kBudget;
}

void Ingester::AttachToContentPid(FollowedFile& file) {
  std::optional<uint32_t> pid = file.source->content_pid();
  if (!pid) return;
  // The same rules as for a pid in the file name, now that the header named it, on the facts
  // of the file when it was opened: first which process that number means (the header has the
  // pid the writer calls itself, in its own pid namespace), then whether it is believed.
  // As in Discover: not judged while /proc cannot be read.
  if (!os::DescriptorsFree(2)) {
    JudgeAgain(file, errno);
    return;
  }
  auto where = dir_context_.find(file.dir);
  const security::WriterJudgement w = security::JudgeWriter(
      GatherWriterFacts(*writer_probe_, where != dir_context_.end() ? where->second : DirContext{},
                        *pid, /*jitdump=*/false, file.dev, file.ino, file.uid, file.ctime_ns,
                        file.found_at_startup),
      /*waited=*/true);  // the writer holds it open while it writes the header
  if (w.kind == security::WriterKind::kWait || w.kind == security::WriterKind::kUnattached) {
    Unattach(file.path, file.uid, w.why);
    Finish(file, SourceState::kUntrusted);
    return;
  }
  if (w.host_pid != *pid) {
    JITSYM_LOG(kInfo, file.path, ": written by host pid ", w.host_pid, " (pid ", *pid,
               " in its pid namespace)");
  }
  pid = w.host_pid;
  const os::ProcessLookup process = os::LookUpProcess(*pid);
  if (process.error != 0) {
    JudgeAgain(file, process.error);
    return;
  }
  file.judge_again = false;
  const std::optional<os::ProcessIdentity>& identity = process.identity;
  security::FileFacts facts;
  facts.uid = file.uid;
  facts.nlink = file.nlink;
  facts.ctime_ns = file.ctime_ns;
  facts.found_at_startup = file.found_at_startup;
  const security::Admission verdict =
      security::JudgeAdmission(facts, ProcessFactsOf(identity), admission_.daemon_start_ns());
  Incarnation* inc = nullptr;
  if (verdict == security::Admission::kExited) {
    inc = table_.Exited(*pid, identity, file.uid);
  } else if (verdict == security::Admission::kLive) {
    inc = table_.Live(*pid);
    if (identity && inc->start_ticks != identity->start_ticks) inc = nullptr;  // reused
  }
  if (inc == nullptr) {
    ++counters_.files_untrusted;
    JITSYM_LOG(kWarning, file.path, ": owned by ", security::DescribeUid(file.uid),
               identity ? log::Cat(" but pid ", *pid, " is owned by ",
                                   security::DescribeUid(identity->uid))
                        : log::Cat(" but names pid ", *pid, ", which does not exist"),
               "; ignored (", security::AdmissionName(verdict), ")");
    Refuse(file.path, file.uid, *pid,
           "untrusted: its header names pid " + std::to_string(*pid) + " (" +
               std::string(security::AdmissionName(verdict)) + ")");
    Finish(file, SourceState::kUntrusted);
    return;
  }
  file.incarnation = inc;
  inc->files.push_back(&file);
  JITSYM_LOG(kInfo, file.path, ": belongs to pid ", *pid, " incarnation ", inc->id);
}

void Ingester::JudgeAgain(FollowedFile& file, int error) {
  if (!file.judge_again) {
    JITSYM_LOG(kWarning, file.path, ": its header names pid ", *file.source->content_pid(),
               ", not judged yet: ", OutOfDescriptors(error), "; trying again");
  }
  file.judge_again = true;
}

void Ingester::Finish(FollowedFile& file, SourceState state) {
  struct stat st {};
  if (file.fd >= 0 ? StatOpen(file, &st)
                   : LstatPath(file.path, &st) && st.st_dev == file.dev && st.st_ino == file.ino) {
    file.finished_ctime = st.st_ctim;
  }
  file.state = state;
  file.parked = false;
  // Nothing more will be read: a last line without its newline counts when the file ended
  // normally (its process exited, it was deleted or replaced after it was read); not when it
  // was rewritten (what was read is no longer its content), stopped at a limit (nothing more
  // is indexed) or refused.
  if (state == SourceState::kClosed || state == SourceState::kDeleted ||
      state == SourceState::kReplaced) {
    file.source->Settle();
  }
  file.source->Release();
  publish_pending_ = true;
  file.changed = true;
  if (file.incarnation) file.incarnation->changed = true;
  CloseFd(file);
}

void Ingester::CloseFd(FollowedFile& file) {
  if (file.fd < 0) return;
  if (file.mirror) {
    file.mirror.reset();  // its memfd, and the file's O_PATH descriptor: nothing is asked
  } else {
    ::close(file.fd);
  }
  file.fd = -1;
  ledger_.ReleaseFile(file.uid);
}

void Ingester::Forget(FollowedFile& file) {
  auto it = by_path_.find(file.path);
  if (it != by_path_.end() && it->second == &file) by_path_.erase(it);
}

void Ingester::Publish() {
  publish_pending_ = false;
  counters_.files_pending = admission_.pending().size();
  counters_.memory_budget_bytes = options_.memory_budget_bytes;
  auto view = BuildView(files_, table_.processes(), counters_, *cell_.Get(), lifecycle_changed_,
                        table_.TakeRemoved());
  if (!view) return;
  view->unattached = unattached_;
  view->refused = refused_;
  lifecycle_changed_ = false;
  cell_.Set(std::move(view));
}

void Ingester::ScheduleMaintenance() {
  maintenance_.expires_after(std::chrono::milliseconds(options_.idle_compact_ms));
  maintenance_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    // A source that stopped growing gets its runs merged into one: fastest lookups.
    const uint64_t now = MonotonicNowNs();
    const uint64_t idle_ns = static_cast<uint64_t>(options_.idle_compact_ms) * 1000000ull;
    bool compacted = false;
    for (auto& f : files_) {
      if (f->source->code().ranges().run_count() > 1 && now - f->last_data_ns >= idle_ns) {
        f->source->code().CompactAll();
        f->changed = true;
        compacted = true;
      }
    }
    // A file that has stopped growing for as long: its last line, if it lacks its newline, is
    // indexed as it stands (Source::Settle; a later append that completes it replaces it).
    for (auto& f : files_) {
      if (f->settled || f->last_growth_ns == 0 || now - f->last_growth_ns < idle_ns) continue;
      if (f->fd < 0 && !f->parked) continue;  // finished: settled then
      f->settled = true;
      if (f->source->Settle()) {
        f->changed = true;
        f->last_data_ns = now;
        if (f->incarnation) f->incarnation->changed = true;
        compacted = true;
      }
    }
    // Files whose header named a pid that could not be judged then (out of descriptors), and
    // that may not grow again to be judged on their next read.
    for (auto& f : files_) {
      if (!f->judge_again || f->state != SourceState::kFollowing || f->incarnation || f->image)
        continue;
      AttachToContentPid(*f);
      if (f->incarnation) {
        f->changed = true;
        f->incarnation->changed = true;
        compacted = true;
      }
    }
    if (compacted) Publish();
    PollUnwatched();
    ParkIdle();
    PruneEmpty();
    // Exits of live processes that have no pidfd (their owner's descriptor quota was full).
    for (Incarnation* inc : table_.ExitedUnwatched()) OnExited(inc);
    // Thread ids of live indexed processes, for lookups by thread id after they exit.
    if (threads_.Tick(table_.processes())) Publish();
    EvictExpired();
    // Freed index arrays are kept for the next run built; unmap those unused for a tick.
    index::TrimLargeCache();
    ScheduleMaintenance();
  });
}

}  // namespace jitsym::ingest
