// Keeps the catalog of host processes up to date with /proc (see process_catalog.h).
#include "daemon/os/process_catalog.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "daemon/os/namespaces.h"
#include "daemon/os/proc.h"
#include "daemon/util/clock.h"

namespace jitsym::os {
namespace {

// pid_max is at most 2^22 (PID_MAX_LIMIT on 64-bit): a listing never needs more.
constexpr size_t kListLimit = size_t{1} << 22;

struct Listed {
  uint32_t pid;
  uint64_t ino;
};

// The numeric entries of /proc with their inode numbers; false if /proc cannot be read.
bool ListProc(const std::string& proc, std::vector<Listed>* out) {
  DIR* d = ::opendir(proc.c_str());
  if (d == nullptr) return false;
  while (dirent* e = ::readdir(d)) {
    if (out->size() >= kListLimit) break;
    const char* name = e->d_name;
    if (*name < '1' || *name > '9') continue;  // ".", "self", "sys", ...
    uint32_t pid = 0;
    const char* end = name + std::strlen(name);
    auto [p, ec] = std::from_chars(name, end, pid);
    if (ec == std::errc() && p == end) out->push_back({pid, static_cast<uint64_t>(e->d_ino)});
  }
  ::closedir(d);
  return true;
}

// What cannot change during a process's life: a pid namespace is chosen at fork. Its uid, mount
// and user namespaces and cgroup may (setuid, unshare, setns, a move between cgroups).
bool SameProcess(const ProcessCatalog::Entry& a, const ProcessCatalog::Entry& b) {
  return a.start_ticks == b.start_ticks && a.nspid == b.nspid && a.pid_ns == b.pid_ns;
}

}  // namespace

ProcessCatalog::ProcessCatalog() : ProcessCatalog(Options{}) {}

ProcessCatalog::ProcessCatalog(Options options) : options_(std::move(options)) {
  const NamespaceFacts& self = SelfNamespaces();
  self_pid_ns_ = self.pid_ns;
  self_mnt_ns_ = self.mnt_ns;
  self_ns_depth_ = self.ns_depth;
}

bool ProcessCatalog::Refresh(uint64_t now_ns) {
  if (ran_ && now_ns >= last_refresh_ && now_ns - last_refresh_ < options_.min_interval_ns) {
    ++stats_.refreshes_skipped;
    return false;
  }
  ran_ = true;
  last_refresh_ = now_ns;
  const uint64_t started = MonotonicNowNs();
  std::vector<Listed> listed;
  listed.reserve(entries_.size() + 256);
  // An unreadable /proc says nothing about which processes are gone: keep what is known.
  if (!ListProc(options_.proc, &listed)) return true;
  const uint64_t round = ++stats_.refreshes;
  stats_.listed = listed.size();

  std::vector<Listed> fresh;
  size_t reads = 0;  // namespace reads, new and renewed pids together
  for (size_t i = 0; i < listed.size(); ++i) {
    const Listed& l = listed[i];
    auto it = entries_.find(l.pid);
    if (it == entries_.end()) {
      fresh.push_back(l);
      continue;
    }
    Slot& slot = it->second;
    if (slot.dir_ino != l.ino) {
      // A new /proc/PID inode: a new process, or only the old directory evicted from the
      // kernel's caches. Rare either way, so all facts are read again and compared: a pid
      // reused within one clock tick has the same start ticks but not the same facts. Past
      // the budget (memory pressure evicts many), the entry waits for the next Refresh.
      if (reads >= options_.max_new_per_refresh) {
        slot.seen = round;
        continue;
      }
      ++reads;
      Slot now;
      if (!ReadEntry(l.pid, l.ino, slot.entry.first_seen_ns, &now)) continue;  // dropped below
      if (!SameProcess(now.entry, slot.entry)) {
        ReleaseCgroup(now.entry.cgroup);
        Erase(it);
        fresh.push_back(l);
        continue;
      }
      Refill(slot, now.entry);
      slot.dir_ino = l.ino;
    } else if (i % kVerifyRotation == round % kVerifyRotation) {
      ++stats_.stat_reads;
      auto id = ReadProcessIdentity(l.pid);
      if (!id) continue;  // gone since the listing: dropped below
      if (id->start_ticks != slot.entry.start_ticks) {
        Erase(it);
        fresh.push_back(l);
        continue;
      }
    }
    slot.seen = round;
  }
  // Entries /proc did not list (or that vanished while read) are gone, unless the listing was
  // cut short, which only a host past every kernel limit could cause.
  if (listed.size() < kListLimit) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto next = std::next(it);
      if (it->second.seen != round) Erase(it);
      it = next;
    }
  }

  stats_.over_cap = 0;
  stats_.deferred = 0;
  for (const Listed& l : fresh) {
    if (entries_.size() >= options_.max_entries) {
      ++stats_.over_cap;
      continue;
    }
    if (reads >= options_.max_new_per_refresh) {
      ++stats_.deferred;
      continue;
    }
    ++reads;
    Slot slot;
    if (ReadEntry(l.pid, l.ino, now_ns, &slot)) {
      slot.seen = round;
      Insert(std::move(slot));
    }
  }
  stats_.last_refresh_ns = MonotonicNowNs() - started;
  return true;
}

const ProcessCatalog::Entry* ProcessCatalog::Update(uint32_t host_pid) {
  auto it = entries_.find(host_pid);
  if (it == entries_.end()) return nullptr;
  Slot now;
  if (!ReadEntry(host_pid, it->second.dir_ino, it->second.entry.first_seen_ns, &now)) {
    return &it->second.entry;  // gone or changing hands: the next Refresh tells
  }
  if (!SameProcess(now.entry, it->second.entry)) {
    ReleaseCgroup(now.entry.cgroup);
    return &it->second.entry;  // another incarnation: the next Refresh replaces the entry
  }
  Refill(it->second, now.entry);
  return &it->second.entry;
}

void ProcessCatalog::Refill(Slot& slot, const Entry& now) {
  // `now` holds a reference to its cgroup string: it passes to the slot.
  Entry& e = slot.entry;
  ReleaseCgroup(e.cgroup);
  e.cgroup = now.cgroup;
  e.uid = now.uid;
  e.user_ns = now.user_ns;
  if (e.mnt_ns != now.mnt_ns) {
    by_mnt_ns_.erase({e.mnt_ns, e.host_pid});
    by_mnt_ns_.emplace(now.mnt_ns, e.host_pid);
    e.mnt_ns = now.mnt_ns;
  }
}

bool ProcessCatalog::ReadEntry(uint32_t pid, uint64_t dir_ino, uint64_t now_ns, Slot* slot) {
  // Start ticks before and after the facts: if the pid changed hands in between, the facts may
  // be of either process, so the entry waits for the next Refresh.
  stats_.stat_reads += 2;
  ++stats_.facts_reads;
  auto before = ReadProcessIdentity(pid);
  if (!before) return false;
  auto facts = ReadNamespaceFacts(pid);
  if (!facts || facts->tgid != pid) return false;  // gone, or a thread id
  auto after = ReadProcessIdentity(pid);
  if (!after || after->start_ticks != before->start_ticks) return false;
  Entry& e = slot->entry;
  e.host_pid = pid;
  e.start_ticks = before->start_ticks;
  e.uid = facts->uid;
  e.nspid = facts->nspid;
  e.pid_ns = facts->pid_ns;
  e.ns_depth = facts->ns_depth;
  e.mnt_ns = facts->mnt_ns;
  e.user_ns = facts->user_ns;
  e.cgroup = InternCgroup(facts->cgroup);
  e.first_seen_ns = now_ns;
  slot->dir_ino = dir_ino;
  return true;
}

void ProcessCatalog::Insert(Slot slot) {
  const uint32_t pid = slot.entry.host_pid;
  auto [it, inserted] = entries_.emplace(pid, std::move(slot));
  if (!inserted) return;  // cannot happen: callers insert unknown pids only
  const Entry& e = it->second.entry;
  // Foreign: seen by more pid namespaces than the daemon (a child namespace, told even when
  // the namespace inode is not readable), or in a namespace of another inode.
  if (e.ns_depth > self_ns_depth_ || (e.pid_ns != 0 && e.pid_ns != self_pid_ns_)) {
    by_nspid_.emplace(e.nspid, pid);
  }
  by_pid_ns_[{e.pid_ns, e.nspid}] = pid;
  by_mnt_ns_.emplace(e.mnt_ns, pid);
  ++stats_.added;
  for (const auto& [id, l] : listeners_) {
    if (l.added) l.added(e);
  }
}

void ProcessCatalog::Erase(std::unordered_map<uint32_t, Slot>::iterator it) {
  const Entry& e = it->second.entry;
  for (const auto& [id, l] : listeners_) {
    if (l.removed) l.removed(e);
  }
  by_nspid_.erase({e.nspid, e.host_pid});
  if (auto p = by_pid_ns_.find({e.pid_ns, e.nspid});
      p != by_pid_ns_.end() && p->second == e.host_pid) {
    by_pid_ns_.erase(p);
  }
  by_mnt_ns_.erase({e.mnt_ns, e.host_pid});
  ReleaseCgroup(e.cgroup);
  ++stats_.removed;
  entries_.erase(it);
}

std::string_view ProcessCatalog::InternCgroup(const std::string& path) {
  if (path.empty() || path.size() > kMaxCgroupBytes) return {};
  auto it = cgroups_.find(path);
  if (it == cgroups_.end()) {
    if (cgroup_bytes_ + path.size() > options_.max_cgroup_bytes) return {};
    cgroup_bytes_ += path.size();
    it = cgroups_.emplace(path, 0).first;
  }
  ++it->second;
  return it->first;  // node-based: the key's address is stable until it is erased
}

void ProcessCatalog::ReleaseCgroup(std::string_view path) {
  if (path.empty()) return;
  auto it = cgroups_.find(std::string(path));
  if (it == cgroups_.end() || --it->second > 0) return;
  cgroup_bytes_ -= it->first.size();
  cgroups_.erase(it);
}

const ProcessCatalog::Entry* ProcessCatalog::Find(uint32_t host_pid) const {
  auto it = entries_.find(host_pid);
  return it == entries_.end() ? nullptr : &it->second.entry;
}

std::vector<const ProcessCatalog::Entry*> ProcessCatalog::Namesakes(uint32_t nspid) const {
  std::vector<const Entry*> out;
  for (auto it = by_nspid_.lower_bound({nspid, 0}); it != by_nspid_.end() && it->first == nspid;
       ++it) {
    if (const Entry* e = Find(it->second)) out.push_back(e);
  }
  return out;
}

const ProcessCatalog::Entry* ProcessCatalog::InPidNamespace(uint64_t pid_ns, uint32_t nspid) const {
  auto it = by_pid_ns_.find({pid_ns, nspid});
  return it == by_pid_ns_.end() ? nullptr : Find(it->second);
}

std::vector<const ProcessCatalog::Entry*> ProcessCatalog::InMountNamespace(uint64_t mnt_ns) const {
  std::vector<const Entry*> out;
  for (auto it = by_mnt_ns_.lower_bound({mnt_ns, 0}); it != by_mnt_ns_.end() && it->first == mnt_ns;
       ++it) {
    if (const Entry* e = Find(it->second)) out.push_back(e);
  }
  return out;
}

int ProcessCatalog::AddListener(Listener listener) {
  const int id = next_listener_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void ProcessCatalog::RemoveListener(int id) { listeners_.erase(id); }

}  // namespace jitsym::os
