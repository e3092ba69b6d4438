// The first resolver of a pid lookup: the JIT index (jitdumps, perf maps, mlpd files) of the
// incarnation of the pid (or of the process that had that thread id: ProcessFinder) alive at
// each address's time. An address of an incarnation the client may not see is set aside
// (LookupBatch::Hide) for ProcessDenials to decide.
#ifndef JITSYM_DAEMON_QUERY_INDEX_RESOLVER_H_
#define JITSYM_DAEMON_QUERY_INDEX_RESOLVER_H_

#include "daemon/query/resolver.h"

namespace jitsym::query {

class IndexResolver : public Resolver {
 public:
  std::optional<proto::ErrorResponse> Resolve(LookupBatch& batch) override;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_INDEX_RESOLVER_H_
