// Gathering writer facts (writer_probe.h).
#include "daemon/ingest/writer_probe.h"

namespace jitsym::ingest {
namespace {

security::WriterCandidate Candidate(const WriterProbe::Process& p) {
  security::WriterCandidate c;
  c.host_pid = p.host_pid;
  c.uid = p.ns.uid;
  c.nspid = p.ns.nspid;
  c.start_ns = p.start_ns;
  return c;
}

// Which candidates map the file or hold it open. A jitdump's writer maps it; perf maps and .mlpd
// files are held open by theirs (or closed after one write, as the JVM's Compiler.perfmap
// does: then nothing tells).
void CheckHolders(WriterProbe& probe, security::WriterCandidate& c, bool jitdump, uint64_t dev,
                  uint64_t ino) {
  c.holds = (jitdump && probe.Holds(c.host_pid, dev, ino, true)) ||
            probe.Holds(c.host_pid, dev, ino, false);
}

}  // namespace

security::WriterFacts GatherWriterFacts(WriterProbe& probe, const DirContext& where,
                                        uint32_t name_pid, bool jitdump, uint64_t dev, uint64_t ino,
                                        uint32_t file_uid, uint64_t ctime_ns,
                                        bool found_at_startup) {
  security::WriterFacts f;
  bool host_maps_read = false;  // the host candidate's maps were read: it does not map the file
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
    for (const WriterProbe::Process& p : found) f.in_container.push_back(Candidate(p));
  } else {
    if (auto p = probe.Host(name_pid)) f.host = Candidate(*p);
    // A jitdump that the process its name gives maps is that process's (the rule's first
    // clause): its namesakes in other pid namespaces are not looked for, which would take a
    // scan of every process (one per file, at start-up: O(files x processes)). One maps file
    // is read instead. Only for jitdumps: their writers keep them mapped while they live,
    // where a perf map's writer may have closed it, and reading descriptors costs more.
    if (jitdump && f.host) {
      if (probe.Holds(f.host->host_pid, dev, ino, true)) {
        f.host->holds = true;
        return f;
      }
      host_maps_read = true;
    }
    for (const WriterProbe::Process& p : probe.Namesakes(name_pid)) {
      if (p.host_pid != name_pid) f.namesakes.push_back(Candidate(p));
    }
  }
  // Otherwise mappings and descriptors decide only between several candidates, and for a
  // jitdump found at start-up (whose live namesake must map it). Reading them costs a maps file
  // and a descriptor table per candidate, so only then (beyond the one maps file above, a user
  // creating files by the thousand must not make the daemon read a process's tables for each).
  const bool several = f.in_container.size() > 1 || !f.namesakes.empty();
  if (several || (jitdump && found_at_startup)) {
    for (auto& c : f.in_container) CheckHolders(probe, c, jitdump, dev, ino);
    if (f.host && host_maps_read) {
      f.host->holds = probe.Holds(f.host->host_pid, dev, ino, false);  // its maps were read
    } else if (f.host) {
      CheckHolders(probe, *f.host, jitdump, dev, ino);
    }
    for (auto& c : f.namesakes) CheckHolders(probe, c, jitdump, dev, ino);
  }
  return f;
}

}  // namespace jitsym::ingest
