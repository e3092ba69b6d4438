#include "daemon/ingest/ingester.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <set>
#include <system_error>

#include "daemon/index/huge_page_allocator.h"
#include "daemon/os/proc.h"
#include "daemon/security/file_trust.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::ingest {
namespace {

constexpr uint32_t kDirMask = IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                              IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// Sources of a process in answer order: exact timestamps first, then the newer file first.
int OriginRank(std::string_view origin) {
  if (origin == "jitdump") return 0;
  if (origin == "mlpd") return 1;
  if (origin == "perfmap") return 2;
  return 3;
}

}  // namespace

Ingester::Ingester(boost::asio::io_context& io, IngesterOptions options, index::ViewCell& cell)
    : io_(io),
      options_(std::move(options)),
      cell_(cell),
      maintenance_(io),
      retry_timer_(io),
      pending_timer_(io),
      ledger_(options_.limits) {
  event_buf_.resize(64 * 1024);
  read_buf_.resize(options_.read_chunk);
}

Ingester::~Ingester() {
  for (auto& f : files_) {
    if (f->fd >= 0) ::close(f->fd);
  }
}

void Ingester::Start() {
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) throw std::system_error(errno, std::generic_category(), "inotify_init1");
  inotify_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, inotify_fd_);
  for (const std::string& dir : options_.watch_dirs) AddWatch(dir);
  // Watch first, then scan: a file created in between is seen twice, which is harmless.
  startup_scan_ = true;
  for (const auto& [wd, dir] : watch_dirs_) Scan(dir);
  startup_scan_ = false;
  DrainDirty();
  ReadEvents();
  ScheduleMaintenance();
}

void Ingester::Stop() {
  stopped_ = true;
  maintenance_.cancel();
  pending_timer_.cancel();
  retry_timer_.cancel();
  if (inotify_) inotify_->close();
  for (auto& [pid, incs] : processes_) {
    for (auto& inc : incs) {
      if (inc->pidfd) inc->pidfd->close();
    }
  }
}

void Ingester::AddWatch(const std::string& dir) {
  int wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), kDirMask);
  if (wd < 0) {
    JITSYM_LOG(kError, "cannot watch ", dir, ": ", std::strerror(errno));
    return;
  }
  watch_dirs_[wd] = dir;
  JITSYM_LOG(kInfo, "watching ", dir);
}

void Ingester::ReadEvents() {
  inotify_->async_read_some(
      boost::asio::buffer(event_buf_), [this](const boost::system::error_code& ec, size_t n) {
        if (ec || stopped_) {
          if (ec != boost::asio::error::operation_aborted && !stopped_) {
            JITSYM_LOG(kError, "inotify read failed: ", ec.message());
          }
          return;
        }
        size_t off = 0;
        while (off + sizeof(inotify_event) <= n) {
          inotify_event ev;
          std::memcpy(&ev, event_buf_.data() + off, sizeof(ev));
          const char* name_ptr = event_buf_.data() + off + sizeof(inotify_event);
          const std::string name = ev.len ? std::string(name_ptr, ::strnlen(name_ptr, ev.len)) : "";
          off += sizeof(inotify_event) + ev.len;
          if (ev.mask & IN_Q_OVERFLOW) {
            JITSYM_LOG(kWarning, "inotify queue overflowed; rescanning watch directories");
            for (const auto& [wd, dir] : watch_dirs_) Scan(dir);
            continue;
          }
          auto dir_it = watch_dirs_.find(ev.wd);
          if (dir_it == watch_dirs_.end()) continue;
          const std::string& dir = dir_it->second;
          if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
            JITSYM_LOG(kWarning, "watch directory ", dir,
                       " was removed or moved; not watched any more");
            watch_dirs_.erase(dir_it);
            continue;
          }
          if (name.empty()) continue;
          const std::string path = dir + "/" + name;
          auto known = by_path_.find(path);
          if (ev.mask & (IN_DELETE | IN_MOVED_FROM)) {
            pending_.erase(path);
            // A refusal was for that file: a new file at the path (which may get the same
            // inode number) is judged afresh.
            ignored_.erase(path);
            if (auto r = retry_.find(path); r != retry_.end()) {
              --retry_per_user_[r->second.uid];
              retry_.erase(r);
            }
            evicted_.erase(path);
            if (known != by_path_.end()) {
              FollowedFile& f = *known->second;
              Drain(f);  // whatever was written before the unlink is still readable
              Finish(f, "deleted");
              Forget(f);
            }
            continue;
          }
          // A new file at a known path (created, or renamed over it: how `jitsym perfmap
          // --force` and most writers replace a file atomically) is a replacement, which
          // Discover tells from the same file by its inode; so is any event for a file not
          // open: one whose descriptor was given back while idle (Discover reopens it, the same
          // inode only), or a finished one written again (a new file then).
          if (known != by_path_.end() && !(ev.mask & (IN_CREATE | IN_MOVED_TO)) &&
              known->second->fd >= 0) {
            MarkDirty(*known->second);
          } else if (ev.mask & (IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE)) {
            Discover(dir, name);
          }
        }
        // New bytes to read, or a state change (a deletion) to publish.
        if (!dirty_.empty() || publish_pending_) PostDrain();
        ReadEvents();
      });
}

void Ingester::Scan(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    JITSYM_LOG(kError, "cannot scan ", dir, ": ", std::strerror(errno));
    return;
  }
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!MatchFile(name)) continue;
    auto known = by_path_.find(dir + "/" + name);
    if (known != by_path_.end() && known->second->fd >= 0) {
      // Still the same file? A rescan after lost events may find a replacement.
      struct stat st {};
      if (::lstat((dir + "/" + name).c_str(), &st) == 0 && st.st_dev == known->second->dev &&
          st.st_ino == known->second->ino) {
        MarkDirty(*known->second);
        continue;
      }
    }
    Discover(dir, name);
  }
  ::closedir(d);
}

void Ingester::Discover(const std::string& dir, const std::string& name) {
  auto match = MatchFile(name);
  if (!match) return;
  const std::string path = dir + "/" + name;
  // Never follow a symlink planted in a shared directory; only regular files.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP) {
      JITSYM_LOG(kWarning, path, ": is a symbolic link; not followed");
    } else if (errno == EMFILE || errno == ENFILE) {
      // Out of descriptors: not this file's fault. Tried again shortly (idle files give theirs
      // back), not dropped.
      Retry(dir, name, errno == EMFILE ? "too many open files in jitsymd" : "too many open files");
    } else if (errno != ENOENT) {
      JITSYM_LOG(kWarning, path, ": cannot open: ", std::strerror(errno));
    }
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    JITSYM_LOG(kWarning, path, ": not a regular file; not followed");
    ::close(fd);
    return;
  }
  if (SkipEvicted(path, st)) {
    ::close(fd);
    return;
  }
  if (auto known = by_path_.find(path); known != by_path_.end()) {
    FollowedFile& old = *known->second;
    if (old.dev == st.st_dev && old.ino == st.st_ino) {
      if (old.parked) {
        if (!Unpark(old, fd, st)) Retry(dir, name, "over its owner's quota of open files");
        return;
      }
      const bool unchanged = st.st_ctim.tv_sec == old.finished_ctime.tv_sec &&
                             st.st_ctim.tv_nsec == old.finished_ctime.tv_nsec;
      if (old.fd >= 0 || unchanged || !Rewritten(old, fd, static_cast<uint64_t>(st.st_size))) {
        // Open: read on. Finished: nothing new (its writer's close), or appended to (a file
        // stopped at an error or limit stays stopped).
        ::close(fd);
        MarkDirty(old);
        return;
      }
      // Finished (its process exited, or stopped at an error or limit) and rewritten, e.g.
      // truncated and written again by a later process with the same pid: a new file from
      // here on; what the old one read stays.
    }
  }
  Admitted admitted;
  if (!Admit(dir, name, path, match->pid, st, &admitted)) {
    ::close(fd);
    return;
  }
  const bool exited = admitted.exited;
  if (auto known = by_path_.find(path); known != by_path_.end()) {
    FollowedFile& old = *known->second;
    // Replaced by another file of the same name: the old one's symbols stay.
    if (old.fd >= 0 || old.parked) Finish(old, "replaced");
    Forget(old);
  }
  auto file = std::make_unique<FollowedFile>();
  file->dir = dir;
  file->name = name;
  file->path = path;
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  file->uid = st.st_uid;
  const security::FileFacts facts = FileFactsOf(st);
  file->ctime_ns = facts.ctime_ns;
  file->nlink = facts.nlink;
  file->found_at_startup = facts.found_at_startup;
  file->fd = fd;
  file->last_data_ns = MonotonicNowNs();
  file->image = match->image;
  SourceContext context;
  context.discovered_ns = file->last_data_ns;
  context.initial_size = static_cast<uint64_t>(st.st_size);
  context.allocated_size = static_cast<uint64_t>(st.st_blocks) * 512;
  if (match->pid) {
    Incarnation* inc = exited ? ExitedIncarnationFor(*match->pid, admitted.identity, st.st_uid)
                              : IncarnationFor(*match->pid);
    const bool reused =
        !exited && admitted.identity && inc->start_ticks != admitted.identity->start_ticks;
    if (reused || (st.st_uid != 0 && inc->uid && *inc->uid != st.st_uid)) {
      // The pid was reused by another process since Admit looked.
      ++files_untrusted_;
      JITSYM_LOG(kWarning, path, ": owned by ", security::DescribeUid(st.st_uid), " but pid ",
                 *match->pid, " is now another process",
                 inc->uid ? log::Cat(", owned by ", security::DescribeUid(*inc->uid)) : "",
                 "; ignored");
      ledger_.ReleaseFile(st.st_uid);
      ::close(fd);
      return;
    }
    file->incarnation = inc;
    inc->files.push_back(file.get());
    inc->changed = true;
    context.process_start_ns = inc->start_time;
  }
  file->source = match->create(path, context);
  JITSYM_LOG(kInfo, "following ", path,
             file->incarnation ? log::Cat(" (pid ", file->incarnation->pid, " incarnation ",
                                          file->incarnation->id, ")")
                               : std::string());
  by_path_[path] = file.get();
  MarkDirty(*file);
  files_.push_back(std::move(file));
}

bool Ingester::Rewritten(const FollowedFile& file, int fd, uint64_t size) {
  // Truncated below what was read, or the first or last bytes read are no longer there.
  auto differs = [fd](const uint8_t* saved, size_t len, uint64_t at) {
    uint8_t now[64];
    const ssize_t n = ::pread(fd, now, len, static_cast<off_t>(at));
    return n != static_cast<ssize_t>(len) || std::memcmp(now, saved, len) != 0;
  };
  return size < file.offset || differs(file.head, file.head_len, 0) ||
         differs(file.tail, file.tail_len, file.tail_offset);
}

Ingester::Incarnation* Ingester::IncarnationFor(uint32_t pid) {
  auto& incs = processes_[pid];
  const auto identity = os::ReadProcessIdentity(pid);
  if (identity) {
    // A live process: the live incarnation with the same start time, or a new one (pid
    // reused). Start times tick at 100 Hz, so a pid reused within 10 ms has the same start
    // time: the old incarnation's pidfd tells whether it is still the same process (its exit
    // notification may not have been handled yet).
    for (auto& inc : incs) {
      if (inc->alive && inc->start_ticks == identity->start_ticks && !HasExited(*inc)) {
        return inc.get();
      }
    }
  }
  auto inc = std::make_unique<Incarnation>();
  inc->pid = pid;
  inc->id = next_incarnation_++;
  if (identity) {
    inc->start_ticks = identity->start_ticks;
    inc->start_time = os::StartTicksToMonotonicNs(identity->start_ticks);
    inc->uid = identity->uid;
    inc->alive = true;
    WatchExit(*inc);
  }
  // An older incarnation of a reused pid is over by now.
  for (auto& old : incs) {
    if (old->alive && old->start_ticks != inc->start_ticks) {
      old->alive = false;
      old->exit_time = MonotonicNowNs();
      old->changed = true;
    }
  }
  incs.push_back(std::move(inc));
  return incs.back().get();
}

bool Ingester::HasExited(Incarnation& inc) {
  if (!inc.pidfd || !inc.pidfd->is_open()) return !inc.alive;
  pollfd p{inc.pidfd->native_handle(), POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  inc.alive = false;
  inc.exit_time = MonotonicNowNs();
  inc.changed = true;
  return true;
}

void Ingester::WatchExit(Incarnation& inc) {
  // A pidfd is a descriptor like a followed file's: charged to the process's owner, so that
  // one user's many processes cannot take the descriptors either. A process without one is
  // polled through /proc by the maintenance tick instead (PollExits).
  if (!inc.uid || !ledger_.AdmitFile(*inc.uid).ok()) return;
  int pidfd = os::OpenPidfd(inc.pid);
  if (pidfd < 0) {
    ledger_.ReleaseFile(*inc.uid);
    return;
  }
  // The pid may have been reused between reading /proc and opening the pidfd.
  auto identity = os::ReadProcessIdentity(inc.pid);
  if (!identity || identity->start_ticks != inc.start_ticks) {
    ::close(pidfd);
    ledger_.ReleaseFile(*inc.uid);
    inc.alive = false;
    inc.exit_time = MonotonicNowNs();
    return;
  }
  inc.pidfd = std::make_unique<boost::asio::posix::stream_descriptor>(io_, pidfd);
  Incarnation* p = &inc;
  inc.pidfd->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                        [this, p](const boost::system::error_code& ec) {
                          if (ec || stopped_) return;
                          OnExited(p);
                        });
}

void Ingester::OnExited(Incarnation* p) {
  const bool was_alive = p->alive;
  p->alive = false;
  if (was_alive) p->exit_time = MonotonicNowNs();
  p->changed = true;
  if (p->pidfd && p->pidfd->is_open()) {
    p->pidfd->close();
    if (p->uid) ledger_.ReleaseFile(*p->uid);
  }
  JITSYM_LOG(kInfo, "pid ", p->pid, " incarnation ", p->id, " exited");
  // Read what it wrote last before saying it exited.
  uint64_t spent = 0;
  for (FollowedFile* f : p->files) {
    if (f->parked) {
      // Idle: anything written since the last look (an event not handled yet) is read
      // through a fresh descriptor.
      struct stat st {};
      int fd = ::open(f->path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        if (::fstat(fd, &st) == 0) {
          Unpark(*f, fd, st);
        } else {
          ::close(fd);
        }
      }
      if (f->fd < 0) {
        f->parked = false;
        Finish(*f, "closed");
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
      Finish(*f, "closed");
    }
  }
  if (!dirty_.empty()) PostDrain();
  Publish();
}

void Ingester::PollExits() {
  std::vector<Incarnation*> gone;
  for (auto& [pid, incs] : processes_) {
    for (auto& inc : incs) {
      if (!inc->alive || (inc->pidfd && inc->pidfd->is_open())) continue;
      const auto identity = os::ReadProcessIdentity(inc->pid);
      if (!identity || identity->start_ticks != inc->start_ticks) gone.push_back(inc.get());
    }
  }
  for (Incarnation* inc : gone) OnExited(inc);
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
    uint64_t& mine = spent[f->uid];
    if (mine >= kOwnerShareNs) {
      later.push_back(f);  // still dirty
      continue;
    }
    const uint64_t t0 = MonotonicNowNs();
    f->dirty = false;
    if (Drain(*f)) {
      MarkDirty(*f);  // budget spent: continue after the others
    } else if (f->close_when_drained && f->fd >= 0) {
      Finish(*f, "closed");
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
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return false;
  const auto size = static_cast<uint64_t>(st.st_size);
  // Rewritten in place (truncated, then written again): the file is smaller, or it has grown
  // back past our offset already and the last bytes we read are no longer there.
  // Also when the size did not change: truncated and rewritten to the same length between two
  // looks (two small preads per event that brought nothing new). The first bytes are compared
  // too: a rewrite with the same tail (code bytes) differs at the start.
  bool rewritten = size < file.offset;
  if (!rewritten && file.tail_len > 0 && (size != file.checked_size || size == file.offset)) {
    rewritten = Rewritten(file, file.fd, size);
  }
  file.checked_size = size;
  if (rewritten) {
    JITSYM_LOG(kWarning, file.path, ": rewritten (", file.offset, " bytes read, now ", size,
               " bytes); keeping what was read and starting over");
    const std::string dir = file.dir, name = file.name;
    Finish(file, "truncated");
    Forget(file);
    Discover(dir, name);
    return false;
  }
  Source& src = *file.source;
  size_t budget = options_.drain_budget;
  const uint64_t records_before = src.records();
  std::string limit;
  // Charges what the source decoded since `before` (a compressed file's inflated bytes).
  auto charge_decoded = [&](uint64_t before) {
    const uint64_t n = src.decoded_bytes() - before;
    file.charged += n;
    ledger_.ChargeBytes(file.uid, n);
    budget -= std::min<uint64_t>(budget, n);
  };
  // Stops the file at a limit or an error; true if it did.
  auto stopped = [&]() {
    if (Status ranges = ledger_.CheckRanges(src.code().ranges().size()); !ranges.ok()) {
      ++files_over_limit_;
      JITSYM_LOG(kWarning, file.path, ": offset ", file.offset, ": ", ranges.error().message,
                 " reached; stopped reading this file, keeping its first ", src.records(),
                 " records");
      Finish(file, "limit");
      return true;
    }
    if (src.failed()) {
      ++files_failed_;
      JITSYM_LOG(kWarning, file.path, ": offset ", src.error_offset(), ": ", src.error(),
                 "; stopped reading this file, keeping the ", src.records(), " records before it");
      Finish(file, "error");
      return true;
    }
    return false;
  };
  while ((file.offset < size || src.backlog()) && budget > 0) {
    const uint64_t allowance = ledger_.ByteAllowance(file.uid, file.charged, &limit);
    if (allowance == 0) {
      ++files_over_limit_;
      JITSYM_LOG(kWarning, file.path, ": offset ", file.offset, ": ", limit,
                 " reached; stopped reading this file, keeping the ", src.records(),
                 " records before it");
      Finish(file, "limit");
      break;
    }
    if (src.backlog()) {
      // Decode what was read before reading more: one bounded step per iteration, so the
      // budget (and the limits) count what the file expands to.
      const uint64_t before = src.decoded_bytes();
      src.Continue();
      charge_decoded(before);
      if (stopped()) break;
      if (src.decoded_bytes() == before && src.backlog()) break;  // no progress: wait for bytes
      continue;
    }
    if (uint64_t skip = src.skippable(); skip > 0) {
      // Code bytes nobody needs: seek over them (they count as ingested).
      const uint64_t n = std::min({skip, size - file.offset, allowance});
      src.Skip(n);
      file.offset += n;
      file.bytes_read += n;
      file.charged += n;
      bytes_ingested_ += n;
      ledger_.ChargeBytes(file.uid, n);
      continue;
    }
    const size_t want = static_cast<size_t>(
        std::min<uint64_t>({read_buf_.size(), size - file.offset, budget, allowance}));
    ssize_t got = ::pread(file.fd, read_buf_.data(), want, static_cast<off_t>(file.offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    const uint64_t decoded_before = src.decoded_bytes();
    src.Feed({read_buf_.data(), static_cast<size_t>(got)});
    // Remember the last bytes read, to notice a rewrite that grew past them.
    file.tail_len = std::min(sizeof(file.tail), static_cast<size_t>(got));
    file.tail_offset = file.offset + static_cast<uint64_t>(got) - file.tail_len;
    std::memcpy(file.tail, read_buf_.data() + got - file.tail_len, file.tail_len);
    if (file.head_len == file.offset && file.head_len < sizeof(file.head)) {
      const size_t n = std::min(sizeof(file.head) - file.head_len, static_cast<size_t>(got));
      std::memcpy(file.head + file.head_len, read_buf_.data(), n);
      file.head_len += n;
    }
    file.offset += static_cast<uint64_t>(got);
    file.bytes_read += static_cast<uint64_t>(got);
    file.charged += static_cast<uint64_t>(got);
    bytes_ingested_ += static_cast<uint64_t>(got);
    ledger_.ChargeBytes(file.uid, static_cast<uint64_t>(got));
    budget -= std::min(budget, static_cast<size_t>(got));
    charge_decoded(decoded_before);
    if (stopped()) break;
  }
  // A file whose name named no process belongs to the pid its content names.
  if (!file.incarnation && !file.image) {
    if (auto pid = src.content_pid()) {
      // The same rule as for a pid in the file name, now that the header named it, on the
      // facts of the file when it was opened.
      const auto identity = os::ReadProcessIdentity(*pid);
      security::FileFacts facts;
      facts.uid = file.uid;
      facts.nlink = file.nlink;
      facts.ctime_ns = file.ctime_ns;
      facts.found_at_startup = file.found_at_startup;
      const security::Admission verdict =
          security::JudgeAdmission(facts, ProcessFactsOf(identity), started_realtime_ns_);
      Incarnation* inc = nullptr;
      if (verdict == security::Admission::kExited) {
        inc = ExitedIncarnationFor(*pid, identity, file.uid);
      } else if (verdict == security::Admission::kLive) {
        inc = IncarnationFor(*pid);
        if (identity && inc->start_ticks != identity->start_ticks) inc = nullptr;  // reused
      }
      if (inc == nullptr) {
        ++files_untrusted_;
        JITSYM_LOG(kWarning, file.path, ": owned by ", security::DescribeUid(file.uid),
                   identity ? log::Cat(" but pid ", *pid, " is owned by ",
                                       security::DescribeUid(identity->uid))
                            : log::Cat(" but names pid ", *pid, ", which does not exist"),
                   "; ignored (", security::AdmissionName(verdict), ")");
        Finish(file, "untrusted");
        return false;
      }
      file.incarnation = inc;
      inc->files.push_back(&file);
      JITSYM_LOG(kInfo, file.path, ": belongs to pid ", *pid, " incarnation ", inc->id);
    }
  }
  if (src.records() != records_before || file.changed) {
    file.changed = true;
    file.last_data_ns = MonotonicNowNs();
    if (file.incarnation) file.incarnation->changed = true;
  }
  return file.fd >= 0 && (file.offset < size || src.backlog()) && budget == 0;
}

void Ingester::Finish(FollowedFile& file, const std::string& state) {
  struct stat st {};
  if (file.fd >= 0 ? ::fstat(file.fd, &st) == 0
                   : ::lstat(file.path.c_str(), &st) == 0 && st.st_dev == file.dev &&
                         st.st_ino == file.ino) {
    file.finished_ctime = st.st_ctim;
  }
  file.state = state;
  file.parked = false;
  file.source->Release();
  publish_pending_ = true;
  file.changed = true;
  if (file.incarnation) file.incarnation->changed = true;
  CloseFd(file);
}

void Ingester::CloseFd(FollowedFile& file) {
  if (file.fd < 0) return;
  ::close(file.fd);
  file.fd = -1;
  ledger_.ReleaseFile(file.uid);
}

void Ingester::Forget(FollowedFile& file) {
  auto it = by_path_.find(file.path);
  if (it != by_path_.end() && it->second == &file) by_path_.erase(it);
}

namespace {

std::optional<uint64_t> FirstTime(const index::ProcessView& view) {
  std::optional<uint64_t> first;
  for (const auto& s : view.sources) {
    auto t = s->code->ranges().first_time();
    if (t && (!first || *t < *first)) first = t;
  }
  return first;
}

}  // namespace

void Ingester::Publish() {
  publish_pending_ = false;
  bool any = false;
  std::set<uint32_t> changed_pids;
  for (auto& f : files_) {
    if (!f->changed) continue;
    any = true;
    f->changed = false;
    auto v = std::make_shared<index::SourceView>();
    v->origin = std::string(f->source->origin());
    v->path = f->path;
    v->state = f->state == "following" && f->source->closed() ? "closed" : f->state;
    v->error = f->source->failed()
                   ? log::Cat("offset ", f->source->error_offset(), ": ", f->source->error())
                   : "";
    v->bytes_read = f->bytes_read;
    if (f->image) {
      v->image = *f->image;
      v->image_signature = f->source->image_signature();
    }
    v->code = f->source->code().Publish();
    v->ranges = v->code->ranges().size();
    f->view = std::move(v);
    if (f->incarnation) f->incarnation->changed = true;
  }
  for (auto& [pid, incs] : processes_) {
    for (auto& inc : incs) {
      if (!inc->changed) continue;
      any = true;
      inc->changed = false;
      auto v = std::make_shared<index::ProcessView>();
      v->pid = inc->pid;
      v->incarnation = inc->id;
      v->alive = inc->alive;
      v->uid = inc->uid;
      v->exit_time = inc->exit_time;
      v->start_time = inc->start_time;
      // Exact timestamps first (by origin), and within an origin the newer file (a replacement).
      std::vector<FollowedFile*> order(inc->files.rbegin(), inc->files.rend());
      std::stable_sort(order.begin(), order.end(), [](FollowedFile* a, FollowedFile* b) {
        return OriginRank(a->source->origin()) < OriginRank(b->source->origin());
      });
      for (FollowedFile* f : order) {
        if (f->view) v->sources.push_back(f->view);
      }
      if (!v->start_time) v->start_time = FirstTime(*v);
      inc->view = std::move(v);
      changed_pids.insert(pid);
    }
  }
  // Where time-qualified lookups switch from one incarnation of a pid to the next. /proc start
  // times tick at 100 Hz, and a pid can be reused within one tick; but a process writes nothing
  // after it exits and its successor starts after that, so the successor starts after the
  // predecessor's last record, and after its observed exit if that came before the successor's
  // first record.
  for (uint32_t pid : changed_pids) {
    std::optional<uint64_t> prev_last, prev_exit;
    for (auto& inc : processes_[pid]) {
      if (!inc->view) continue;
      const std::optional<uint64_t> first = FirstTime(*inc->view);
      uint64_t start = inc->start_time ? *inc->start_time : first.value_or(0);
      if (prev_last) start = std::max(start, *prev_last + 1);
      if (prev_exit && (!first || *prev_exit <= *first)) start = std::max(start, *prev_exit);
      if (first && start > *first) start = *first;
      if (inc->view->start_time != start) {
        auto v = std::make_shared<index::ProcessView>(*inc->view);
        v->start_time = start;
        inc->view = std::move(v);
      }
      for (const auto& src : inc->view->sources) {
        auto t = src->code->ranges().last_time();
        if (t && (!prev_last || *t > *prev_last)) prev_last = t;
      }
      prev_exit = inc->exit_time;
    }
  }
  const index::IndexCounters& before = cell_.Get()->counters;
  if (!any && !lifecycle_changed_ && cell_.Get()->processes.size() == processes_.size() &&
      before.files_untrusted == files_untrusted_ && before.files_pending == pending_.size() &&
      before.files_over_limit == files_over_limit_) {
    return;
  }
  lifecycle_changed_ = false;
  auto view = std::make_shared<index::IndexView>();
  for (auto& [pid, incs] : processes_) {
    auto& out = view->processes[pid];
    for (auto& inc : incs) {
      if (inc->view) out.push_back(inc->view);
    }
  }
  for (auto it = files_.rbegin(); it != files_.rend(); ++it) {  // newest first
    if ((*it)->image && (*it)->view) view->images[*(*it)->image].push_back((*it)->view);
  }
  index::IndexCounters& c = view->counters;
  for (auto& f : files_) {
    if (f->fd >= 0) ++c.files_followed;
    c.records_ingested += f->source->records();
    c.ranges += f->source->code().ranges().size();
    c.memory_bytes += f->source->code().memory_bytes();
  }
  c.files_failed = files_failed_;
  c.files_untrusted = files_untrusted_;
  c.files_pending = pending_.size();
  c.files_over_limit = files_over_limit_;
  c.bytes_ingested = bytes_ingested_;
  FillLifecycleCounters(c);
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
    if (compacted) Publish();
    ParkIdle();
    PruneEmpty();
    PollExits();
    EvictExpired();
    // Freed index arrays are kept for the next run built; unmap those unused for a tick.
    index::TrimLargeCache();
    ScheduleMaintenance();
  });
}

}  // namespace jitsym::ingest
