// Reads and caches per-pid snapshots: see process_snapshots.h.
#include "daemon/query/process_snapshots.h"

#include <sys/stat.h>

#include <algorithm>

#include "daemon/formats/perfinfo/perfinfo_parser.h"
#include "daemon/os/small_file.h"
#include "daemon/security/file_trust.h"
#include "daemon/util/clock.h"

namespace jitsym::query {
namespace {

constexpr size_t kMaxPerfinfoBytes = 1ull << 30;

bool EndsWithNoCase(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    char a = s[s.size() - suffix.size() + i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (a != suffix[i]) return false;
  }
  return true;
}

bool IsDll(std::string_view path) { return EndsWithNoCase(path, ".dll"); }

// A perfinfo file is one anyone may write (in /tmp) that describes the process of `owner`: no
// symlink is followed and it must be believed for that process (security::JudgeProcessFile).
std::optional<std::string> ReadPerfinfo(const std::string& path, uint32_t owner) {
  os::SmallFileOptions options;
  options.max_bytes = kMaxPerfinfoBytes;
  options.no_follow = true;
  options.accept = [&](const struct stat& st) {
    return security::JudgeProcessFile(st.st_uid, owner) == security::FileVerdict::kTrusted;
  };
  auto file = os::ReadSmallFile(path, options);
  if (!file) return std::nullopt;
  return std::move(file->bytes);
}

}  // namespace

std::string ImageNameFromPath(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  if (IsDll(path)) path.remove_suffix(4);
  return std::string(path);
}

ProcessSnapshots::ProcessSnapshots(Options options) : options_(std::move(options)) {}

std::shared_ptr<const ProcessSnapshot> ProcessSnapshots::Read(uint32_t pid) {
  const auto identity = options_.read_identity(pid);
  if (!identity) return nullptr;
  const auto maps = options_.read_maps(pid);
  if (!maps) return nullptr;
  auto p = std::make_shared<ProcessSnapshot>();
  p->identity = *identity;
  p->read_ns = MonotonicNowNs();
  for (const os::Mapping& m : *maps) {
    if (m.perms.size() < 3 || m.perms[2] != 'x' || m.path.empty() || m.path.front() != '/') {
      continue;
    }
    p->exec.push_back({m.start, m.end, m.file_offset, m.inode, m.dev, m.path});
  }
  std::sort(p->exec.begin(), p->exec.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  for (const os::MappedFile& f : os::MappedFiles(*maps)) {
    p->images.push_back({IsDll(f.path) ? ImageNameFromPath(f.path) : std::string(), f.base, f.end});
  }
  const std::string perfinfo = options_.perfinfo_dir + "/perfinfo-" + std::to_string(pid) + ".map";
  if (auto text = ReadPerfinfo(perfinfo, identity->uid)) {
    for (const perfinfo::PerfInfoImage& img : perfinfo::ParsePerfInfo(*text)) {
      const bool known = std::any_of(p->images.begin(), p->images.end(),
                                     [&](const auto& x) { return x.base == img.base; });
      if (!known) p->images.push_back({ImageNameFromPath(img.path), img.base, 0});
    }
  }
  std::sort(p->images.begin(), p->images.end(),
            [](const auto& a, const auto& b) { return a.base < b.base; });
  return p;
}

std::shared_ptr<const ProcessSnapshot> ProcessSnapshots::Current(uint32_t pid, bool* fresh) {
  auto read = [this](uint32_t p) { return Read(p); };
  std::shared_ptr<const ProcessSnapshot> s = cache_.Get(pid, false, fresh, MonotonicNowNs(), read);
  if (s && !*fresh && MonotonicNowNs() - s->read_ns >= kMinRereadNs) {
    // The pid may belong to another process by now: then it is read again.
    const auto identity = options_.read_identity(pid);
    if (identity && identity->start_ticks != s->identity.start_ticks) {
      s = cache_.Get(pid, true, fresh, MonotonicNowNs(), read);
    }
  }
  return s;
}

std::shared_ptr<const ProcessSnapshot> ProcessSnapshots::Refreshed(uint32_t pid, bool* fresh) {
  return cache_.Get(pid, true, fresh, MonotonicNowNs(), [this](uint32_t p) { return Read(p); });
}

std::shared_ptr<const ProcessSnapshot> ProcessSnapshots::ReadLive(uint32_t pid) {
  std::shared_ptr<const ProcessSnapshot> s = Read(pid);
  if (!s) return nullptr;
  const auto after = options_.read_identity(pid);
  if (!after || after->start_ticks != s->identity.start_ticks || after->uid != s->identity.uid) {
    return nullptr;
  }
  return s;
}

}  // namespace jitsym::query
