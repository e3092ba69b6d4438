// The perfinfo maps of processes (`/tmp/perfinfo-<pid>.map`, formats/perfinfo), followed as
// they grow: a process's file is read on from where the last read stopped, so a lookup never
// parses it again, and the images it places are kept sorted by base, one table per process
// shared by every snapshot of it (process_snapshots.h).
//
// Anyone may write /tmp: a file counts only if it is no symlink and is believed for the
// process's owner (security::JudgeProcessFile); it is read up to kMaxFileBytes and kMaxImages,
// and every byte read is charged to its owner's per-user byte quota (security::LimitLedger,
// shared with the ingester) until the table is dropped. What a limit stops is logged once, with
// the file and the offset; what was read before stays.
//
// Thread-safe: query threads read different processes' files in parallel; one process's file
// is read by one thread at a time.
#ifndef JITSYM_DAEMON_QUERY_PERFINFO_FILES_H_
#define JITSYM_DAEMON_QUERY_PERFINFO_FILES_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/os/proc.h"
#include "daemon/query/placed_image.h"

namespace jitsym::security {
class LimitLedger;
}

namespace jitsym::query {

class PerfinfoFiles {
 public:
  static constexpr uint64_t kMaxFileBytes = 256ull << 20;
  static constexpr size_t kMaxImages = size_t{1} << 20;
  // Processes whose tables are kept (as os::ProcessTableCache keeps their snapshots).
  static constexpr size_t kMaxProcesses = 4096;

  struct Options {
    std::string dir = "/tmp";
    // Charged with the bytes read, per owner; none: only the per-file bounds apply.
    std::shared_ptr<security::LimitLedger> ledger;
  };
  PerfinfoFiles() : PerfinfoFiles(Options{}) {}
  explicit PerfinfoFiles(Options options);
  ~PerfinfoFiles();

  // The images the perfinfo file of the process `identity` says pid placed, sorted by base with
  // one per base (a later line for a base replaces an earlier one), read up to the file's end;
  // null when there is no such file or it is not believed.
  std::shared_ptr<const std::vector<PlacedImage>> Read(uint32_t pid,
                                                       const os::ProcessIdentity& identity);

 private:
  struct File;
  void ReadMore(File& file, int fd, uint64_t size);

  const Options options_;
  std::mutex mu_;
  std::unordered_map<uint32_t, std::shared_ptr<File>> files_;  // guarded by mu_
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_PERFINFO_FILES_H_
