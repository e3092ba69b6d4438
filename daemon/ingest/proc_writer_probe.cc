// The daemon's WriterProbe (proc_writer_probe.h).
#include "daemon/ingest/proc_writer_probe.h"

#include <dirent.h>

#include <charconv>
#include <cstring>

#include "daemon/os/proc.h"
#include "daemon/util/clock.h"

namespace jitsym::ingest {
namespace {

constexpr uint64_t kSnapshotNs = 20ull * 1000 * 1000;
constexpr size_t kMaxProcesses = 1u << 22;  // the kernel's pid_max limit

std::optional<WriterProbe::Process> Read(uint32_t pid, uint64_t* start_ticks) {
  const auto identity = os::ReadProcessIdentity(pid);
  if (!identity) return std::nullopt;
  auto ns = os::ReadNamespaceFacts(pid);
  if (!ns || ns->tgid != pid) return std::nullopt;  // gone, or a thread id
  *start_ticks = identity->start_ticks;
  return WriterProbe::Process{pid, std::move(*ns),
                              os::StartTicksToRealtimeNs(identity->start_ticks)};
}

}  // namespace

std::optional<WriterProbe::Process> ProcWriterProbe::Host(uint32_t pid) {
  uint64_t ticks = 0;
  return Read(pid, &ticks);
}

void ProcWriterProbe::Refresh() {
  const uint64_t now = MonotonicNowNs();
  if (taken_ns_ != 0 && now - taken_ns_ < kSnapshotNs) return;
  taken_ns_ = now;
  std::unordered_map<uint32_t, Known> next;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    if (next.size() >= kMaxProcesses) break;
    uint32_t pid = 0;
    const char* end = e->d_name + std::strlen(e->d_name);
    auto [p, ec] = std::from_chars(e->d_name, end, pid);
    if (ec != std::errc() || p != end) continue;
    const auto identity = os::ReadProcessIdentity(pid);
    if (!identity) continue;
    auto it = known_.find(pid);
    if (it != known_.end() && it->second.start_ticks == identity->start_ticks) {
      next.emplace(pid, std::move(it->second));
      continue;
    }
    uint64_t ticks = 0;
    if (auto process = Read(pid, &ticks)) next.emplace(pid, Known{ticks, std::move(*process)});
  }
  ::closedir(d);
  known_.swap(next);
}

std::vector<WriterProbe::Process> ProcWriterProbe::Namesakes(uint32_t nspid) {
  Refresh();
  std::vector<Process> out;
  const uint64_t self = os::SelfNamespaces().pid_ns;
  for (const auto& [pid, k] : known_) {
    if (k.process.ns.nspid == nspid && k.process.ns.pid_ns != self) out.push_back(k.process);
  }
  return out;
}

std::optional<WriterProbe::Process> ProcWriterProbe::InPidNamespace(uint64_t pid_ns,
                                                                    uint32_t nspid) {
  Refresh();
  for (const auto& [pid, k] : known_) {
    if (k.process.ns.nspid == nspid && k.process.ns.pid_ns == pid_ns) return k.process;
  }
  return std::nullopt;
}

bool ProcWriterProbe::Holds(uint32_t pid, uint64_t dev, uint64_t ino, bool maps) {
  return maps ? os::MapsFile(pid, dev, ino) : os::HoldsOpen(pid, dev, ino);
}

}  // namespace jitsym::ingest
