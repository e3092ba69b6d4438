// Symbolizes a request's addresses in a module: what a parse worker does for the daemon, and
// what the daemon does itself when it runs without workers (tests, tools). One function, so
// both give the same answers.
#ifndef JITSYM_DAEMON_PARSE_WORKER_SERVE_H_
#define JITSYM_DAEMON_PARSE_WORKER_SERVE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/native/module_cache.h"
#include "daemon/parse_worker/messages.h"

namespace jitsym::parse_worker {

// The ids of the strings a module's answers use, numbered once per module object: a reply
// sends only those the daemon does not have yet. A strings' id is its module's view (its
// address), valid for as long as the module is; a module opened anew is numbered anew, under
// a new token.
class StringIds {
 public:
  // One module's numbering: a string is known by where its bytes are (the module's tables
  // hold each name once), so numbering it again is a probe of an open-addressed table.
  struct Table {
    std::weak_ptr<native::NativeModule> module;
    uint64_t token = 0;
    std::vector<std::string_view> by_id{std::string_view()};
    uint32_t Of(std::string_view s);

   private:
    void Grow();
    std::vector<uint32_t> slots_;  // ids (0: free), by hash of the bytes' address and size
  };
  // The table of the file `key` names, numbered for module `m` (anew if it was another's).
  // Held with `mu` locked, for as long as the table is used: a worker's lanes share it.
  Table& For(const std::string& key, const std::shared_ptr<native::NativeModule>& m);
  std::mutex mu;

 private:
  std::map<std::string, Table> tables_;
  uint64_t next_ = 1;
};

// Opens (or finds) the module of request.path, which must still be the file request.st
// describes, and answers every address. Uses up to the process's thread budget. Thread-safe.
SymbolizeReply ServeSymbolize(native::ModuleCache& modules, StringIds& ids,
                              const SymbolizeRequest& request);

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_SERVE_H_
