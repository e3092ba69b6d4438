// Opened ELF modules, shared by all queries: by file (device, inode, size, mtime), so processes
// mapping the same file share one module and its tables (which file answers a build id, and to
// whom, is query/native_lookup.cc's rule). Bounded by a
// byte budget: the least recently used modules are dropped (queries still using one keep it
// alive until they finish). Thread-safe; a slow load blocks only the queries that need that file.
#ifndef JITSYM_DAEMON_NATIVE_MODULE_CACHE_H_
#define JITSYM_DAEMON_NATIVE_MODULE_CACHE_H_

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "daemon/native/debuginfod_fetcher.h"
#include "daemon/native/native_module.h"

namespace jitsym::native {

// A file's identity (stat's st_dev, st_ino).
struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
};

// A file's version, as a key: device, inode, size and mtime. The module cache, the parse
// workers and the daemon's answer strings all key a file by it.
std::string FileVersionKey(const struct stat& st);

class ModuleCache {
 public:
  struct Options {
    std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
    size_t budget_bytes = size_t{1} << 30;
    uint64_t inflate_bytes = kMaxInflatedDebugBytes;  // per module: DebugSearch::inflate_bytes
    // The path of the debug file debuginfod has for a build id, asking for it in the
    // background when there is none yet. Unset: a DebuginfodFetcher of this cache's own when
    // DEBUGINFOD_URLS names a server.
    std::function<std::optional<std::string>(const std::string& build_id)> debuginfod;
  };
  explicit ModuleCache(Options options);

  // The module of an ELF file; nullptr and *error on failure (retried after a second). With
  // `expect`, only if `path` is still that file (the one an access check examined). The error
  // names `path`: callers check that the client may read it first.
  std::shared_ptr<NativeModule> GetByPath(const std::string& path, std::string* error,
                                          std::optional<FileId> expect = std::nullopt);

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
  std::unique_ptr<DebuginfodFetcher> fetcher_;  // when DEBUGINFOD_URLS is set and no function
  std::function<std::optional<std::string>(const std::string&)> debuginfod_;  // or null
  std::atomic<uint64_t> clock_{0};
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;  // file identity -> slot
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_MODULE_CACHE_H_
