// The "explain" operation: the report behind one answer, for a person finding out why an address
// answers what it does (or nothing). It lists the process's incarnations with their lifetimes,
// their source files with what was made of them, every definition that ever covered the address
// with the interval of times it answered, the files naming the process that answer nothing, and
// the answer of the normal lookup for the same (pid or image, address, time) with the rule that
// picked it. The lookup itself is run by the caller through the same resolver chain as `lookup`
// (so both always agree); this builds the rest from the index view.
//
// Access: only incarnations the client may see (PeerAccess::MaySeeProcess) are described. A
// client that may see none gets the lookup's answer and nothing else: no path, owner or
// definition of someone else's process.
#ifndef JITSYM_DAEMON_QUERY_EXPLAIN_H_
#define JITSYM_DAEMON_QUERY_EXPLAIN_H_

#include <cstddef>

#include "daemon/index/index_view.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::query {

// Definitions listed per explain, at most (the newest are kept): an address reused by a JIT a
// million times must not make a million-line answer.
inline constexpr size_t kMaxExplainDefinitions = 1000;

// The lookup request that answers the same question as `request` (one address).
proto::LookupRequest ExplainLookup(const proto::ExplainRequest& request);

// The report for `request`. `answer` is what the lookup chain answered for ExplainLookup(request)
// (one result; the response keeps what it points into alive and is moved into the report).
// `process_pid` is the pid the request's number names (it may be a thread id): the incarnations
// described are that pid's.
proto::ExplainResponse BuildExplain(const index::IndexView& view,
                                    const proto::ExplainRequest& request,
                                    const security::PeerAccess& access, uint32_t process_pid,
                                    proto::LookupResponse answer);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_EXPLAIN_H_
