// Mount tables and the rule of which mounts are guarded (mounts.h).
#include "daemon/os/mounts.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>

#include "daemon/os/small_file.h"

namespace jitsym::os {
namespace {

// Mount tables of hosts with many containers run to megabytes; beyond this one is not read.
constexpr size_t kMaxMountinfoBytes = size_t{64} << 20;
// Overlays over overlays: layers are decided this many levels deep.
constexpr int kOverlayRounds = 4;

std::string_view NextField(std::string_view* line) {
  while (!line->empty() && line->front() == ' ') line->remove_prefix(1);
  size_t end = line->find(' ');
  if (end == std::string_view::npos) end = line->size();
  std::string_view f = line->substr(0, end);
  line->remove_prefix(end);
  return f;
}

bool ParseNumber(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 10);
  return ec == std::errc() && end == s.data() + s.size();
}

// mountinfo writes space, tab, newline and backslash in paths as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Splits `s` at `sep` where it is not escaped with a backslash; the escapes are removed.
std::vector<std::string> SplitEscaped(std::string_view s, char sep) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out.back().push_back(s[++i]);
    } else if (s[i] == sep) {
      out.emplace_back();
    } else {
      out.back().push_back(s[i]);
    }
  }
  return out;
}

// The layer directories an overlay's options name (lowerdir, upperdir, workdir, datadir).
std::vector<std::string> OverlayLayers(std::string_view super_options) {
  std::vector<std::string> out;
  for (const std::string& option : SplitEscaped(super_options, ',')) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos) continue;
    const std::string_view key = std::string_view(option).substr(0, eq);
    if (key != "lowerdir" && key != "upperdir" && key != "workdir" && key != "datadir" &&
        key != "lowerdir+" && key != "datadir+") {
      continue;
    }
    for (std::string& dir : SplitEscaped(std::string_view(option).substr(eq + 1), ':')) {
      if (!dir.empty()) out.push_back(std::move(dir));
    }
  }
  return out;
}

std::optional<uint32_t> FuseOwner(std::string_view super_options) {
  for (const std::string& option : SplitEscaped(super_options, ',')) {
    constexpr std::string_view kKey = "user_id=";
    if (!std::string_view(option).starts_with(kKey)) continue;
    uint64_t uid = 0;
    if (ParseNumber(std::string_view(option).substr(kKey.size()), &uid) && uid <= UINT32_MAX) {
      return static_cast<uint32_t>(uid);
    }
  }
  return std::nullopt;
}

std::mutex g_testing_mu;
std::vector<std::string> g_guarded_for_testing;
std::atomic<uint64_t> g_testing_generation{0};

bool GuardedForTesting(const std::string& mount_point) {
  std::lock_guard lock(g_testing_mu);
  return std::find(g_guarded_for_testing.begin(), g_guarded_for_testing.end(), mount_point) !=
         g_guarded_for_testing.end();
}

bool Under(std::string_view path, std::string_view dir) {
  if (dir == "/") return path.starts_with('/');
  return path.starts_with(dir) && (path.size() == dir.size() || path[dir.size()] == '/');
}

std::shared_ptr<const MountTable> ReadTable(const std::string& path) {
  SmallFileOptions options;
  options.max_bytes = kMaxMountinfoBytes;
  auto file = ReadSmallFile(path, options);
  if (!file) return nullptr;
  return std::make_shared<const MountTable>(MountTable::Parse(file->bytes));
}

}  // namespace

std::string Mount::Describe() const {
  std::string out = fstype + " at " + mount_point;
  if (owner) out += " (user_id " + std::to_string(*owner) + ")";
  return out;
}

std::string GuardReason(std::string_view fstype) {
  if (fstype == "fuse" || fstype == "fuseblk" || fstype.starts_with("fuse.")) {
    return "a FUSE filesystem, served by a process that may never answer";
  }
  return {};
}

MountTable MountTable::Parse(std::string_view text) {
  MountTable table;
  std::vector<Mount> mounts;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // id parent major:minor root mount_point options [optional...] - fstype source super
    Mount m;
    if (!ParseNumber(NextField(&line), &m.id) || !ParseNumber(NextField(&line), &m.parent)) {
      continue;
    }
    const std::string_view dev = NextField(&line);
    const size_t colon = dev.find(':');
    uint64_t major = 0, minor = 0;
    if (colon == std::string_view::npos || !ParseNumber(dev.substr(0, colon), &major) ||
        !ParseNumber(dev.substr(colon + 1), &minor)) {
      continue;
    }
    m.dev = makedev(major, minor);
    m.root = Unescape(NextField(&line));
    m.mount_point = Unescape(NextField(&line));
    NextField(&line);  // per-mount options
    bool separator = false;
    while (!line.empty()) {
      const std::string_view f = NextField(&line);
      if (f == "-") {
        separator = true;
        break;
      }
      if (f.empty()) break;
    }
    if (!separator || m.mount_point.empty()) continue;
    m.fstype = Unescape(NextField(&line));
    if (m.fstype.empty()) continue;
    m.source = Unescape(NextField(&line));
    m.super_options = std::string(NextField(&line));
    m.guard_reason = GuardReason(m.fstype);
    if (m.guard_reason.empty() && g_testing_generation.load() != 0 &&
        GuardedForTesting(m.mount_point)) {
      m.guard_reason = "guarded for a test";
    }
    if (m.fstype.starts_with("fuse")) m.owner = FuseOwner(m.super_options);
    mounts.push_back(std::move(m));
  }
  for (auto& m : mounts) table.mounts_.push_back(std::make_shared<const Mount>(m));
  // Overlays: guarded when a layer lies on a guarded mount (of this table, where the layer
  // paths were resolved when mounted).
  for (int round = 0; round < kOverlayRounds; ++round) {
    bool changed = false;
    for (size_t i = 0; i < mounts.size(); ++i) {
      Mount& m = mounts[i];
      if (m.guarded() || m.fstype != "overlay") continue;
      for (const std::string& layer : OverlayLayers(m.super_options)) {
        std::shared_ptr<const Mount> under = table.Containing(layer);
        if (under && under->guarded()) {
          m.guard_reason = "an overlay over " + under->Describe() + ", " + under->guard_reason;
          table.mounts_[i] = std::make_shared<const Mount>(m);
          changed = true;
          break;
        }
      }
    }
    if (!changed) break;
  }
  for (const auto& m : table.mounts_) table.any_guarded_ = table.any_guarded_ || m->guarded();
  return table;
}

std::shared_ptr<const Mount> MountTable::ById(uint64_t id) const {
  for (const auto& m : mounts_) {
    if (m->id == id) return m;
  }
  return nullptr;
}

std::shared_ptr<const Mount> MountTable::ByDev(uint64_t dev) const {
  for (const auto& m : mounts_) {
    if (m->dev == dev) return m;
  }
  return nullptr;
}

std::shared_ptr<const Mount> MountTable::Containing(std::string_view path) const {
  std::shared_ptr<const Mount> best;
  for (const auto& m : mounts_) {
    if (!Under(path, m->mount_point)) continue;
    if (!best || m->mount_point.size() >= best->mount_point.size()) best = m;
  }
  return best;
}

std::shared_ptr<const MountTable> OwnMounts() {
  static std::mutex mu;
  static int fd = -1;
  static std::shared_ptr<const MountTable> table;
  static uint64_t generation = 0;
  std::lock_guard lock(mu);
  if (fd < 0) fd = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  bool stale = table == nullptr || generation != g_testing_generation.load();
  generation = g_testing_generation.load();
  if (fd >= 0 && !stale) {
    // The kernel flags a change since this descriptor last read the file.
    pollfd p{fd, POLLPRI, 0};
    stale = ::poll(&p, 1, 0) != 0;
  }
  if (!stale) return table;
  if (fd >= 0) {
    // Read through the polled descriptor, which resets its change mark.
    std::string text;
    char buf[65536];
    ::lseek(fd, 0, SEEK_SET);
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > kMaxMountinfoBytes) break;
    }
    if (!text.empty()) table = std::make_shared<const MountTable>(MountTable::Parse(text));
  }
  if (!table) table = ReadTable("/proc/self/mountinfo");
  return table;
}

void GuardMountPointForTesting(const std::string& mount_point) {
  std::lock_guard lock(g_testing_mu);
  g_guarded_for_testing.push_back(mount_point);
  ++g_testing_generation;
}

std::shared_ptr<const MountTable> MountsOf(uint32_t pid) {
  return ReadTable("/proc/" + std::to_string(pid) + "/mountinfo");
}

std::optional<FdMount> ParseFdinfoOf(const std::string& path) {
  SmallFileError error;
  auto file = ReadSmallFile(path, {}, &error);
  if (!file) {
    errno = error.errno_value != 0 ? error.errno_value : EIO;
    return std::nullopt;
  }
  FdMount out;
  bool found = false;
  std::string_view text = file->bytes;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    if (key == "mnt_id") found = ParseNumber(value, &out.mount_id);
    if (key == "ino") ParseNumber(value, &out.ino);
    if (key == "flags") {
      uint64_t flags = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), flags, 8);
      if (ec == std::errc() && end == value.data() + value.size()) out.flags = flags;
    }
  }
  if (!found) {
    errno = EIO;
    return std::nullopt;
  }
  return out;
}

std::optional<uint64_t> MountIdOf(int fd) {
  auto m = ParseFdinfoOf("/proc/self/fdinfo/" + std::to_string(fd));
  if (!m) return std::nullopt;
  return m->mount_id;
}

std::shared_ptr<const Mount> FindMount(uint64_t id, uint32_t pid) {
  if (auto own = OwnMounts()) {
    if (auto m = own->ById(id)) return m;
  }
  if (pid != 0) {
    if (auto theirs = MountsOf(pid)) {
      if (auto m = theirs->ById(id)) return m;
    }
  }
  return nullptr;
}

std::shared_ptr<const Mount> MountOfDevice(uint64_t dev, uint32_t pid) {
  // One device is one filesystem, wherever it is mounted: the daemon's own table (cached)
  // first, another process's (read) only for a device the daemon does not see.
  if (auto own = OwnMounts()) {
    if (auto m = own->ByDev(dev)) return m;
  }
  if (pid != 0) {
    if (auto theirs = MountsOf(pid)) return theirs->ByDev(dev);
  }
  return nullptr;
}

}  // namespace jitsym::os
