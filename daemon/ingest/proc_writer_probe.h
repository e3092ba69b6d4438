// The daemon's WriterProbe: /proc, read through a snapshot of every process's namespace facts
// that is taken again when older than a short interval (files naming pids arrive in bursts,
// and each needs to know every process that calls itself by that number).
#ifndef JITSYM_DAEMON_INGEST_PROC_WRITER_PROBE_H_
#define JITSYM_DAEMON_INGEST_PROC_WRITER_PROBE_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "daemon/ingest/writer_probe.h"

namespace jitsym::ingest {

class ProcWriterProbe : public WriterProbe {
 public:
  std::optional<Process> Host(uint32_t pid) override;
  std::vector<Process> Namesakes(uint32_t nspid) override;
  std::optional<Process> InPidNamespace(uint64_t pid_ns, uint32_t nspid) override;
  bool Holds(uint32_t pid, uint64_t dev, uint64_t ino, bool maps) override;

 private:
  void Refresh();
  std::vector<Process> processes_;
  uint64_t taken_ns_ = 0;
  // Known processes (pid -> start ticks and facts), so a refresh reads only new ones.
  struct Known {
    uint64_t start_ticks = 0;
    Process process;
  };
  std::unordered_map<uint32_t, Known> known_;
};

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_PROC_WRITER_PROBE_H_
