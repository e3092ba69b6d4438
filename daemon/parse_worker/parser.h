// Who reads native files for the daemon's lookups: a pool of sandboxed worker processes, one
// set per file owner (worker_pool.h), or the daemon itself (InProcessParser: tests and tools).
#ifndef JITSYM_DAEMON_PARSE_WORKER_PARSER_H_
#define JITSYM_DAEMON_PARSE_WORKER_PARSER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/native/module_cache.h"
#include "daemon/parse_worker/messages.h"
#include "daemon/parse_worker/serve.h"
#include "daemon/util/result.h"

namespace jitsym::parse_worker {

struct ParserStats {
  uint64_t workers = 0;  // worker processes running
  uint64_t started = 0;  // worker processes started since the daemon started
  uint64_t failed = 0;   // requests that ended with a worker killed or dead
  uint64_t refused = 0;  // requests refused without asking (a file or worker backing off)
  uint64_t bytes = 0;    // the workers' anonymous memory (their tables), after their last request
};

class Parser {
 public:
  virtual ~Parser() = default;
  // Symbolizes request.addrs in the file at request.path, which the daemon opened (`fd`) and
  // stat'ed (request.st: its identity and owner). Fails (kLimit) when the file's reader failed:
  // a worker killed, dead, out of time or memory, or backing off after that; the message says
  // which file and what limit, for the answers' detail. A file that is not ELF, or unreadable,
  // is a reply with `error` set.
  virtual Result<SymbolizeReply> Symbolize(const SymbolizeRequest& request, int fd) = 0;
  virtual ParserStats Stats() = 0;
};

class InProcessParser : public Parser {
 public:
  explicit InProcessParser(native::ModuleCache::Options options) : modules_(std::move(options)) {}
  Result<SymbolizeReply> Symbolize(const SymbolizeRequest& request, int fd) override;
  ParserStats Stats() override { return {}; }

 private:
  native::ModuleCache modules_;
  StringIds ids_;
};

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_PARSER_H_
