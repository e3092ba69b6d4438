// Gathers the facts security::JudgeWriter decides on (writer_rule.h) for a file named with a
// pid: the process holding that pid on the host, the processes of other pid namespaces that
// call themselves by that number, the one holding it in a container's namespace, and which of
// them map the file or hold it open. A Probe so that the ingester's use of it is tested with
// made-up processes; the daemon's reads /proc.
#ifndef JITSYM_DAEMON_INGEST_WRITER_PROBE_H_
#define JITSYM_DAEMON_INGEST_WRITER_PROBE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/os/namespaces.h"
#include "daemon/security/writer_rule.h"

namespace jitsym::ingest {

class WriterProbe {
 public:
  struct Process {
    uint32_t host_pid = 0;
    os::NamespaceFacts ns;
    uint64_t start_ns = 0;  // CLOCK_REALTIME
  };
  virtual ~WriterProbe() = default;
  // The process holding host pid `pid` now.
  virtual std::optional<Process> Host(uint32_t pid) = 0;
  // Processes whose pid in their own pid namespace (not the daemon's) is `nspid`.
  virtual std::vector<Process> Namesakes(uint32_t nspid) = 0;
  // The processes of the mount namespace `mnt_ns` that call themselves `nspid`.
  virtual std::vector<Process> InMountNamespace(uint64_t mnt_ns, uint32_t nspid) = 0;
  // Whether `pid` maps the file (`maps`) or holds it open.
  virtual bool Holds(uint32_t pid, uint64_t dev, uint64_t ino, bool maps) = 0;
};

// Where a file was found, as far as its name's pid is concerned.
struct DirContext {
  // Found in a container's filesystem through /proc/PID/root: the container's mount
  // namespace (0: not readable), and the process it was reached through.
  std::optional<uint64_t> mnt_ns;
  uint32_t via_pid = 0;
  // The directory as it was found (lstat of its path then): files are opened in it only while
  // its path still leads there.
  uint64_t dir_dev = 0, dir_ino = 0;
};

// The facts for JudgeWriter. `jitdump`: the format's writers map their file (checked first,
// then open descriptors).
security::WriterFacts GatherWriterFacts(WriterProbe& probe, const DirContext& where,
                                        uint32_t name_pid, bool jitdump, uint64_t dev, uint64_t ino,
                                        uint32_t file_uid, uint64_t ctime_ns,
                                        bool found_at_startup);

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_WRITER_PROBE_H_
