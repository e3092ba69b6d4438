// The daemon's WriterProbe: the process catalog (os/process_catalog.h) for the processes of
// other pid namespaces, refreshed before each question (it reads only processes it has not
// seen, and at most every 20 ms), and /proc itself for the process holding a host pid now and
// for what a process maps or holds open.
#ifndef JITSYM_DAEMON_INGEST_PROC_WRITER_PROBE_H_
#define JITSYM_DAEMON_INGEST_PROC_WRITER_PROBE_H_

#include <cstdint>
#include <vector>

#include "daemon/ingest/writer_probe.h"
#include "daemon/os/process_catalog.h"

namespace jitsym::ingest {

class ProcWriterProbe : public WriterProbe {
 public:
  explicit ProcWriterProbe(os::ProcessCatalog& catalog) : catalog_(catalog) {}
  std::optional<Process> Host(uint32_t pid) override;
  std::vector<Process> Namesakes(uint32_t nspid) override;
  std::vector<Process> InMountNamespace(uint64_t mnt_ns, uint32_t nspid) override;
  bool Holds(uint32_t pid, uint64_t dev, uint64_t ino, bool maps) override;

 private:
  os::ProcessCatalog& catalog_;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_PROC_WRITER_PROBE_H_
