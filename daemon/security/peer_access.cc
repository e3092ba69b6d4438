#include "daemon/security/peer_access.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "daemon/os/mounts.h"
#include "daemon/os/proc.h"
#include "daemon/os/unique_fd.h"

namespace jitsym::security {

std::optional<uint32_t> ResolveGroup(const std::string& name) {
  if (name.empty()) return std::nullopt;
  std::vector<char> buf(16384);
  group gr{};
  group* result = nullptr;
  if (::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &result) == 0 && result) {
    return static_cast<uint32_t>(result->gr_gid);
  }
  uint32_t gid = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), gid);
  if (ec == std::errc() && end == name.data() + name.size()) return gid;
  return std::nullopt;
}

std::vector<uint32_t> GroupsOfUser(uint32_t uid, uint32_t gid) {
  std::vector<uint32_t> out{gid};
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* result = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &result) != 0 || result == nullptr) {
    return out;
  }
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    int n = static_cast<int>(groups.size());
    if (::getgrouplist(result->pw_name, gid, groups.data(), &n) >= 0) {
      out.assign(groups.begin(), groups.begin() + n);
      return out;
    }
    groups.resize(static_cast<size_t>(n) + 1);
  }
  return out;
}

namespace {

// The group database is read at most every few seconds per user: requests come by the thousand.
std::vector<uint32_t> CachedGroupsOfUser(uint32_t uid, uint32_t gid) {
  struct Entry {
    std::vector<uint32_t> groups;
    std::chrono::steady_clock::time_point read;
  };
  static std::mutex mu;
  static std::unordered_map<uint64_t, Entry> cache;
  const uint64_t key = (uint64_t{uid} << 32) | gid;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu);
    auto it = cache.find(key);
    if (it != cache.end() && now - it->second.read < std::chrono::seconds(5)) {
      return it->second.groups;
    }
  }
  std::vector<uint32_t> groups = GroupsOfUser(uid, gid);
  std::lock_guard lock(mu);
  if (cache.size() >= 4096) cache.clear();  // bounded
  cache[key] = Entry{groups, now};
  return groups;
}

}  // namespace

PeerAccess::PeerAccess(const PeerCredentials& peer, const AccessPolicy& policy)
    : uid_(peer.uid), gid_(peer.gid), pid_(peer.pid) {
  groups_.assign(peer.groups.begin(), peer.groups.end());
  std::sort(groups_.begin(), groups_.end());
  trusted_ = uid_ == 0 || (policy.trusted_gid && InGroup(*policy.trusted_gid));
  if (!trusted_ && policy.trusted_gid) {
    // Members by the group database count too (a user added to the group since logging in;
    // a kernel that did not report the peer's groups).
    const std::vector<uint32_t> db = CachedGroupsOfUser(uid_, gid_);
    trusted_ = std::find(db.begin(), db.end(), *policy.trusted_gid) != db.end();
  }
  facts_ = PeerFacts{uid_, gid_, groups_, trusted_};
}

bool PeerAccess::InGroup(uint32_t gid) const {
  return gid == gid_ || std::binary_search(groups_.begin(), groups_.end(), gid);
}

bool PeerAccess::MaySeeProcess(std::optional<uint32_t> owner) const {
  return DecideProcess(facts_, owner, std::nullopt) == ProcessAccess::kAllowed;
}

ProcessAccess PeerAccess::ForProcess(std::optional<uint32_t> owner, uint32_t pid) const {
  if (MaySeeProcess(owner)) return ProcessAccess::kAllowed;
  std::optional<uint32_t> live_owner;
  if (const auto identity = os::ReadProcessIdentity(pid)) live_owner = identity->uid;
  return DecideProcess(facts_, owner, live_owner);
}

FileAccess PeerAccess::CheckRead(const std::string& path, WalkedPath* walked) const {
  if (!WalkPath(path, walked)) return FileAccess::kDenied;
  const FileAccess access = DecideFileRead(facts_, walked->facts);
  // A walk that ended at a filesystem that did not answer: said so only to a peer that could
  // have searched its way there itself (else denied, as any path behind such a directory).
  if (!walked->unanswered.empty() && access != FileAccess::kDenied) return FileAccess::kUnanswered;
  return access;
}

bool PeerAccess::MayRead(const std::string& path) const {
  WalkedPath walked;
  return CheckRead(path, &walked) == FileAccess::kAllowed;
}

std::optional<FileAccess> PeerAccess::CheckDescriptor(int32_t fd, WalkedPath* walked,
                                                      std::string* why) const {
  *walked = WalkedPath();
  if (pid_ <= 0) return std::nullopt;  // another pid namespace
  const std::string proc = "/proc/" + std::to_string(pid_);
  const std::string n = std::to_string(fd);
  const std::optional<os::ProcessIdentity> before = os::ReadProcessIdentity(pid_);
  const std::optional<os::FdMount> held = os::ParseFdinfoOf(proc + "/fdinfo/" + n);
  const int held_errno = errno;
  if (!before) {
    *why = "your process (pid " + std::to_string(pid_) + ") is gone";
    return FileAccess::kDenied;
  }
  if (!held && (held_errno == EACCES || held_errno == EPERM)) return std::nullopt;
  if (!held || !held->flags) {
    *why = "descriptor " + n + " is not open in your process (pid " + std::to_string(pid_) + ")" +
           (held ? "" : ": " + std::string(std::strerror(held_errno)));
    return FileAccess::kNotFound;
  }
  switch (DecideDescriptor(facts_, DescriptorFacts{before->uid, *held->flags})) {
    case DescriptorAccess::kAllowed:
      break;
    case DescriptorAccess::kNotTheClients:
      *why = "pid " + std::to_string(pid_) + " is not your process";
      return FileAccess::kDenied;
    case DescriptorAccess::kNotOpenForReading:
      *why = "descriptor " + n + " is not open for reading (O_PATH or write-only)";
      return FileAccess::kDenied;
  }
  // The object the descriptor holds, reached by the kernel (no filesystem asked), and where it
  // lies: it must be the one the fdinfo above describes.
  os::UniqueFd ours(::open((proc + "/fd/" + n).c_str(), O_PATH | O_CLOEXEC));
  if (!ours.valid()) {
    *why = "descriptor " + n + " of your process: " + std::strerror(errno);
    return FileAccess::kNotFound;
  }
  const std::optional<os::FdMount> mine =
      os::ParseFdinfoOf("/proc/self/fdinfo/" + std::to_string(ours.get()));
  const std::shared_ptr<const os::Mount> mount =
      mine ? os::FindMount(mine->mount_id, static_cast<uint32_t>(pid_)) : nullptr;
  if (!mine || mount == nullptr) {
    *why = "descriptor " + n + ": its file lies on a mount the daemon cannot see";
    return FileAccess::kDenied;
  }
  uint64_t dev = mount->dev, ino = mine->ino;
  bool regular = true;  // on a guarded mount, the open says (only regular files are read)
  if (!mount->guarded()) {
    struct stat st {};
    if (::fstat(ours.get(), &st) != 0) {
      *why = "descriptor " + n + ": " + std::strerror(errno);
      return FileAccess::kDenied;
    }
    dev = st.st_dev;
    ino = st.st_ino;
    regular = S_ISREG(st.st_mode);
  }
  const std::optional<os::ProcessIdentity> after = os::ReadProcessIdentity(pid_);
  if (ino == 0 || mine->mount_id != held->mount_id || (held->ino != 0 && held->ino != ino) ||
      !after || after->start_ticks != before->start_ticks || after->uid != before->uid) {
    *why = "descriptor " + n + " changed while it was looked at";
    return FileAccess::kDenied;
  }
  walked->resolved = proc + "/fd/" + n;
  walked->dev = static_cast<dev_t>(dev);
  walked->ino = static_cast<ino_t>(ino);
  walked->regular = regular;
  walked->client_descriptor = true;
  return FileAccess::kAllowed;
}

}  // namespace jitsym::security
