// Symbolizes a request's addresses in a module: what a parse worker does for the daemon, and
// what the daemon does itself when it runs without workers (tests, tools). One function, so
// both give the same answers.
#ifndef JITSYM_DAEMON_PARSE_WORKER_SERVE_H_
#define JITSYM_DAEMON_PARSE_WORKER_SERVE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
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
  struct Key {
    const char* data;
    size_t size;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.data) ^ (k.size * 0x9e3779b97f4a7c15ull);
    }
  };
  struct Table {
    std::weak_ptr<native::NativeModule> module;
    uint64_t token = 0;
    std::unordered_map<Key, uint32_t, Hash> index;
    std::vector<std::string_view> by_id{std::string_view()};
    uint32_t Of(std::string_view s);
  };
  // The table of the file `key` names, numbered for module `m` (anew if it was another's).
  Table& For(const std::string& key, const std::shared_ptr<native::NativeModule>& m);

 private:
  std::map<std::string, Table> tables_;
  uint64_t next_ = 1;
};

// Opens (or finds) the module of request.path, which must still be the file request.st
// describes, and answers every address. Uses up to the process's thread budget.
SymbolizeReply ServeSymbolize(native::ModuleCache& modules, StringIds& ids,
                              const SymbolizeRequest& request);

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_SERVE_H_
