// The daemon's WriterProbe (proc_writer_probe.h).
#include "daemon/ingest/proc_writer_probe.h"

#include "daemon/os/proc.h"
#include "daemon/util/clock.h"

namespace jitsym::ingest {
namespace {

WriterProbe::Process FromEntry(const os::ProcessCatalog::Entry& e) {
  WriterProbe::Process p;
  p.host_pid = e.host_pid;
  p.ns.tgid = e.host_pid;
  p.ns.uid = e.uid;
  p.ns.nspid = e.nspid;
  p.ns.ns_depth = e.ns_depth;
  p.ns.pid_ns = e.pid_ns;
  p.ns.mnt_ns = e.mnt_ns;
  p.ns.user_ns = e.user_ns;
  p.ns.cgroup = std::string(e.cgroup);
  p.start_ns = os::StartTicksToRealtimeNs(e.start_ticks);
  return p;
}

}  // namespace

std::optional<WriterProbe::Process> ProcWriterProbe::Host(uint32_t pid) {
  const auto before = os::ReadProcessIdentity(pid);
  if (!before) return std::nullopt;
  auto ns = os::ReadNamespaceFacts(pid);
  if (!ns || ns->tgid != pid) return std::nullopt;  // gone, or a thread id
  const auto after = os::ReadProcessIdentity(pid);
  if (!after || after->start_ticks != before->start_ticks) return std::nullopt;  // reused
  return Process{pid, std::move(*ns), os::StartTicksToRealtimeNs(before->start_ticks)};
}

std::vector<WriterProbe::Process> ProcWriterProbe::Namesakes(uint32_t nspid) {
  catalog_.Refresh(MonotonicNowNs());
  std::vector<Process> out;
  for (const os::ProcessCatalog::Entry* e : catalog_.Namesakes(nspid)) {
    out.push_back(FromEntry(*e));
  }
  return out;
}

std::vector<WriterProbe::Process> ProcWriterProbe::InMountNamespace(uint64_t mnt_ns,
                                                                    uint32_t nspid) {
  catalog_.Refresh(MonotonicNowNs());
  std::vector<Process> out;
  for (const os::ProcessCatalog::Entry* e : catalog_.InMountNamespace(mnt_ns)) {
    if (e->nspid == nspid) out.push_back(FromEntry(*e));
  }
  return out;
}

bool ProcWriterProbe::Holds(uint32_t pid, uint64_t dev, uint64_t ino, bool maps) {
  return maps ? os::MapsFile(pid, dev, ino) : os::HoldsOpen(pid, dev, ino);
}

}  // namespace jitsym::ingest
