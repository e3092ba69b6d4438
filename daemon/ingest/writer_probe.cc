// Gathering writer facts (writer_probe.h).
#include "daemon/ingest/writer_probe.h"

namespace jitsym::ingest {
namespace {

security::WriterCandidate Candidate(WriterProbe& probe, const WriterProbe::Process& p, bool jitdump,
                                    uint64_t dev, uint64_t ino) {
  security::WriterCandidate c;
  c.host_pid = p.host_pid;
  c.uid = p.ns.uid;
  c.nspid = p.ns.nspid;
  c.start_ns = p.start_ns;
  // A jitdump's writer maps it; perf maps and .mlpd files are held open by theirs (or closed
  // after one write, as the JVM's Compiler.perfmap does: then nothing tells).
  c.holds = (jitdump && probe.Holds(p.host_pid, dev, ino, true)) ||
            probe.Holds(p.host_pid, dev, ino, false);
  return c;
}

}  // namespace

security::WriterFacts GatherWriterFacts(WriterProbe& probe, const DirContext& where,
                                        uint32_t name_pid, bool jitdump, uint64_t dev, uint64_t ino,
                                        uint32_t file_uid, uint64_t ctime_ns,
                                        bool found_at_startup) {
  security::WriterFacts f;
  f.name_pid = name_pid;
  f.jitdump = jitdump;
  f.file_uid = file_uid;
  f.file_ctime_ns = ctime_ns;
  f.found_at_startup = found_at_startup;
  if (where.mnt_ns) {
    f.container_dir = true;
    std::vector<WriterProbe::Process> found;
    if (*where.mnt_ns != 0) found = probe.InMountNamespace(*where.mnt_ns, name_pid);
    if (found.empty() && where.via_pid != 0) {
      // The namespace is not readable: only the process the directory was reached through
      // can be told to call itself so.
      if (auto p = probe.Host(where.via_pid); p && p->ns.nspid == name_pid) found.push_back(*p);
    }
    for (const WriterProbe::Process& p : found) {
      f.in_container.push_back(Candidate(probe, p, jitdump, dev, ino));
    }
    return f;
  }
  if (auto p = probe.Host(name_pid)) f.host = Candidate(probe, *p, jitdump, dev, ino);
  for (const WriterProbe::Process& p : probe.Namesakes(name_pid)) {
    if (p.host_pid == name_pid) continue;
    f.namesakes.push_back(Candidate(probe, p, jitdump, dev, ino));
  }
  return f;
}

}  // namespace jitsym::ingest
