// Symbolizes a request's addresses in a module: what a parse worker does for the daemon, and
// what the daemon does itself when it runs without workers (tests, tools). One function, so
// both give the same answers.
#ifndef JITSYM_DAEMON_PARSE_WORKER_SERVE_H_
#define JITSYM_DAEMON_PARSE_WORKER_SERVE_H_

#include "daemon/native/module_cache.h"
#include "daemon/parse_worker/messages.h"

namespace jitsym::parse_worker {

// Opens (or finds) the module of request.path, which must still be the file request.st
// describes, and answers every address. Uses up to the process's thread budget.
SymbolizeReply ServeSymbolize(native::ModuleCache& modules, const SymbolizeRequest& request);

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_SERVE_H_
