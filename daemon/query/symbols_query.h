// The "symbols" operation: every range the daemon knows for a process as of now, as a perf map
// of it would hold them (what `jitsym perfmap` writes). Sources in precedence order (jitdump,
// mlpd, perf map), each contributing what no earlier source covers, then the process's
// ReadyToRun images with their bases applied, where no JIT source has code.
#ifndef JITSYM_DAEMON_QUERY_SYMBOLS_QUERY_H_
#define JITSYM_DAEMON_QUERY_SYMBOLS_QUERY_H_

#include <cstdint>
#include <optional>

#include "daemon/index/index_view.h"
#include "daemon/query/image_lookup.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::query {

// Answers a symbols request: for root, the trusted group and the process's owner only (the list
// reveals where the process's code is). not_found for an unknown pid.
proto::Response ListSymbols(const index::IndexView& view, const proto::SymbolsRequest& request,
                            const security::PeerAccess& access, ImageLookup& images);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_SYMBOLS_QUERY_H_
