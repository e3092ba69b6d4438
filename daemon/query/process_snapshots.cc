// Reads and caches per-pid snapshots: see process_snapshots.h.
#include "daemon/query/process_snapshots.h"

#include <sys/stat.h>

#include <algorithm>

#include "daemon/util/clock.h"

namespace jitsym::query {

const ProcessSnapshot::Placed* ProcessSnapshot::PlacedAt(uint64_t addr) const {
  auto before = [addr](const std::vector<Placed>& list) -> const Placed* {
    auto next = std::upper_bound(list.begin(), list.end(), addr,
                                 [](uint64_t a, const Placed& p) { return a < p.base; });
    return next == list.begin() ? nullptr : &*std::prev(next);
  };
  const Placed* mapped = before(images);
  const Placed* logged = perfinfo ? before(*perfinfo) : nullptr;
  if (logged == nullptr || (mapped != nullptr && mapped->base >= logged->base)) return mapped;
  return logged;
}

ProcessSnapshots::ProcessSnapshots(Options options)
    : options_(std::move(options)), perfinfo_(options_.perfinfo) {}

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
  std::sort(p->images.begin(), p->images.end(),
            [](const auto& a, const auto& b) { return a.base < b.base; });
  p->perfinfo = perfinfo_.Read(pid, *identity);
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
