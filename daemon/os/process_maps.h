// What /proc/<pid>/maps says about a process's mappings, and where each mapped file's image
// starts. Used to turn absolute addresses into RVAs of ReadyToRun images (and, later, of ELF
// objects).
#ifndef JITSYM_DAEMON_QUERY_PROCESS_MAPS_H_
#define JITSYM_DAEMON_QUERY_PROCESS_MAPS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jitsym::query {

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  std::string perms;  // "r-xp"
  uint64_t inode = 0;
  std::string path;  // empty for anonymous mappings; " (deleted)" is removed
  bool deleted = false;
};

// One mapped file: base = start of its mapping at file offset 0 (the image base), end = end of
// its last mapping.
struct MappedFile {
  std::string path;
  uint64_t base = 0;
  uint64_t end = 0;
};

// Parses the text of /proc/<pid>/maps; malformed lines are skipped.
std::vector<Mapping> ParseProcessMaps(std::string_view text);
// nullopt when the process is gone or its maps are not readable.
std::optional<std::vector<Mapping>> ReadProcessMaps(uint32_t pid);
// Files mapped at offset 0 (pseudo-paths like "[heap]" excluded), sorted by base.
std::vector<MappedFile> MappedFiles(const std::vector<Mapping>& mappings);

// Per-pid tables made from /proc (T has a `read_ns` member: when it was read), shared by query
// threads: kept after the process exits (its samples still need answers), read again on a
// refresh at most every 100 ms, bounded in number. Reading happens outside the lock; two
// threads missing on one pid both read, harmlessly.
template <typename T>
class ProcessTableCache {
 public:
  static constexpr uint64_t kMinRereadNs = 100000000ull;
  static constexpr size_t kMaxProcesses = 4096;

  // The cached table (read if there is none, or if `refresh` and it is old enough); *fresh
  // tells whether it was read by this call. `read` returns null when the process is gone or
  // unreadable: the last table read, if any, is returned then.
  std::shared_ptr<const T> Get(uint32_t pid, bool refresh, bool* fresh, uint64_t now_ns,
                               const std::function<std::shared_ptr<const T>(uint32_t)>& read) {
    *fresh = false;
    {
      std::lock_guard lock(mu_);
      auto it = tables_.find(pid);
      if (it != tables_.end() && (!refresh || now_ns - it->second->read_ns < kMinRereadNs)) {
        return it->second;
      }
    }
    std::shared_ptr<const T> table = read(pid);
    std::lock_guard lock(mu_);
    auto it = tables_.find(pid);
    if (!table) return it != tables_.end() ? it->second : nullptr;
    *fresh = true;
    if (it == tables_.end() && tables_.size() >= kMaxProcesses) {
      tables_.erase(tables_.begin());  // bounded; an arbitrary victim is fine
    }
    tables_[pid] = table;
    return table;
  }

 private:
  std::mutex mu_;
  std::unordered_map<uint32_t, std::shared_ptr<const T>> tables_;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_PROCESS_MAPS_H_
