// A cache of per-pid tables read from /proc, shared by the query threads: the rules for
// staleness, exited processes and memory, kept apart from what a table holds. The daemon has one
// instance, query::ProcessSnapshots (what each process maps, for every lookup that needs it).
#ifndef JITSYM_DAEMON_OS_PROCESS_TABLE_CACHE_H_
#define JITSYM_DAEMON_OS_PROCESS_TABLE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace jitsym::os {

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

}  // namespace jitsym::os

#endif  // JITSYM_DAEMON_OS_PROCESS_TABLE_CACHE_H_
