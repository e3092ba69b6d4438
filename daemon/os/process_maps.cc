#include "daemon/os/process_maps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>

#include "daemon/os/guarded_fs.h"
#include "daemon/os/small_file.h"

namespace jitsym::os {
namespace {

std::string_view NextField(std::string_view* line) {
  size_t i = 0;
  while (i < line->size() && (*line)[i] == ' ') ++i;
  line->remove_prefix(i);
  size_t end = line->find(' ');
  if (end == std::string_view::npos) end = line->size();
  std::string_view f = line->substr(0, end);
  line->remove_prefix(end);
  return f;
}

bool ParseNumber(std::string_view s, int base, uint64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::vector<Mapping> ParseProcessMaps(std::string_view text) {
  // start-end perms offset dev inode [path]
  std::vector<Mapping> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    Mapping m;
    std::string_view range = NextField(&line);
    const size_t dash = range.find('-');
    if (dash == std::string_view::npos || !ParseNumber(range.substr(0, dash), 16, &m.start) ||
        !ParseNumber(range.substr(dash + 1), 16, &m.end) || m.end < m.start) {
      continue;
    }
    m.perms = std::string(NextField(&line));
    if (!ParseNumber(NextField(&line), 16, &m.file_offset)) continue;
    std::string_view dev = NextField(&line);  // major:minor, in hex
    const size_t colon = dev.find(':');
    uint64_t major = 0, minor = 0;
    if (colon == std::string_view::npos || !ParseNumber(dev.substr(0, colon), 16, &major) ||
        !ParseNumber(dev.substr(colon + 1), 16, &minor)) {
      continue;
    }
    m.dev = makedev(major, minor);
    if (!ParseNumber(NextField(&line), 10, &m.inode)) continue;
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    std::string_view path = line.substr(i);
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) {
      path.remove_suffix(kDeleted.size());
      m.deleted = true;
    }
    m.path = std::string(path);
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<std::vector<Mapping>> ReadProcessMaps(uint32_t pid) {
  auto file = ReadSmallFile("/proc/" + std::to_string(pid) + "/maps", {});
  if (!file) return std::nullopt;
  return ParseProcessMaps(file->bytes);
}

namespace {

// The device and inode /proc/PID/maps shows for a mapping of the file at `path`: the kernel's
// own record, which is not always what stat(2) says (btrfs subvolumes, overlays). This process
// maps one page of it and reads its own maps, which needs no privilege (map_files does:
// CAP_SYS_ADMIN). nullopt when it cannot (not a regular file, empty, on a FUSE mount).
std::optional<std::pair<uint64_t, uint64_t>> MapsIdentityOf(const std::string& path) {
  auto opened = OpenForReading(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (!opened || opened->error != 0 || opened->mirror || !S_ISREG(opened->st.st_mode) ||
      opened->st.st_size <= 0) {
    return std::nullopt;
  }
  void* at = ::mmap(nullptr, 1, PROT_READ, MAP_PRIVATE, opened->fd.get(), 0);
  if (at == MAP_FAILED) return std::nullopt;
  std::optional<std::pair<uint64_t, uint64_t>> id;
  if (auto maps = ReadProcessMaps(static_cast<uint32_t>(::getpid()))) {
    for (const Mapping& m : *maps) {
      if (m.start == reinterpret_cast<uint64_t>(at)) id.emplace(m.dev, m.inode);
    }
  }
  ::munmap(at, 1);
  return id;
}

}  // namespace

std::string MappedFilePath(uint32_t pid, const std::string& path, uint64_t dev, uint64_t inode,
                           uint64_t start, uint64_t end) {
  // Looked at through guarded_fs.h: a file of a FUSE mount is asked of a worker, with a timeout.
  using Id = std::pair<uint64_t, uint64_t>;  // (device, inode)
  bool unanswered = false;
  auto stat_of = [&unanswered](const std::string& p) -> std::optional<Id> {
    auto e = StatPath(p, /*no_follow_last=*/false);
    if (!e) unanswered = true;
    if (!e || e->error != 0) return std::nullopt;
    return Id(static_cast<uint64_t>(e->st.st_dev), static_cast<uint64_t>(e->st.st_ino));
  };
  char files[96];
  std::snprintf(files, sizeof(files), "/proc/%u/map_files/%llx-%llx", pid,
                static_cast<unsigned long long>(start), static_cast<unsigned long long>(end));
  std::optional<std::optional<Id>> mapped;  // map_files', looked at once
  auto is_it = [&](const std::string& p) {
    const std::optional<Id> id = stat_of(p);
    if (!id || id->second != inode) return false;
    if (id->first == dev) return true;
    // What a mapping of it shows, as the process's maps show its mapping; else map_files.
    if (MapsIdentityOf(p) == Id(dev, inode)) return true;
    if (!mapped) mapped = stat_of(files);
    return *mapped && **mapped == *id;
  };
  if (is_it(path)) return path;
  // A filesystem that was not asked or did not answer (a guarded mount, in backoff or hung):
  // its path is opened the same guarded way, which fails the same, and says why.
  if (unanswered) return path;
  std::string root = "/proc/" + std::to_string(pid) + "/root" + path;
  if (is_it(root)) return root;
  if (unanswered) return path;
  if (auto id = stat_of(files); id && id->second == inode) return files;
  return {};
}

std::vector<MappedFile> MappedFiles(const std::vector<Mapping>& mappings) {
  // A file may be mapped more than once; each mapping at offset 0 starts an image, and the
  // image extends over the following mappings of the same file.
  std::vector<MappedFile> out;
  std::map<std::pair<std::string, uint64_t>, size_t> open;  // (path, inode) -> current image
  for (const Mapping& m : mappings) {
    if (m.path.empty() || m.path.front() != '/') continue;
    const auto key = std::make_pair(m.path, m.inode);
    if (m.file_offset == 0) {
      open[key] = out.size();
      out.push_back({m.path, m.start, m.end});
    } else if (auto it = open.find(key); it != open.end() && m.start >= out[it->second].base) {
      out[it->second].end = std::max(out[it->second].end, m.end);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const MappedFile& a, const MappedFile& b) { return a.base < b.base; });
  return out;
}

}  // namespace jitsym::os
