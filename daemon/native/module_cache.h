// Opened ELF modules, shared by all queries: by file (device, inode, size, mtime) and by
// build-id, so processes mapping the same file share one module and its tables. Bounded by a
// byte budget: the least recently used modules are dropped (queries still using one keep it
// alive until they finish). Thread-safe; a slow load blocks only the queries that need that file.
#ifndef JITSYM_DAEMON_NATIVE_MODULE_CACHE_H_
#define JITSYM_DAEMON_NATIVE_MODULE_CACHE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "daemon/native/debuginfod_fetcher.h"
#include "daemon/native/native_module.h"

namespace jitsym::native {

class ModuleCache {
 public:
  struct Options {
    std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
    size_t budget_bytes = size_t{1} << 30;
  };
  explicit ModuleCache(Options options);

  // The module of an ELF file; nullptr and *error on failure (retried after a second).
  std::shared_ptr<NativeModule> GetByPath(const std::string& path, std::string* error);
  // A module by build-id (hex): one already known, else `<debug-dir>/.build-id/xx/yyyy` (the
  // binary) or `.debug` (its debug file).
  std::shared_ptr<NativeModule> GetByBuildId(const std::string& build_id, std::string* error);

  // Drops least recently used modules while the total is over budget.
  void Trim();
  size_t Bytes();
  size_t Modules();

 private:
  struct Slot {
    std::mutex mu;
    std::shared_ptr<NativeModule> module;
    std::string error;
    uint64_t checked_ns = 0;
    std::atomic<uint64_t> last_used{0};
    std::string fetched;  // the debuginfod file the module was last opened with
  };
  bool Load(const std::string& path, Slot* slot);
  std::shared_ptr<Slot> SlotFor(const std::string& key);

  Options options_;
  std::unique_ptr<DebuginfodFetcher> debuginfod_;  // when DEBUGINFOD_URLS is set
  std::atomic<uint64_t> clock_{0};
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;           // file identity -> slot
  std::unordered_map<std::string, std::string> build_id_paths_;  // build-id -> a path of it
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_MODULE_CACHE_H_
