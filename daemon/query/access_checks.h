// The access decisions of lookups, kept apart from the answering code: which image a client may
// name (before anything is opened), and what a client that may not see a pid is told. The rules
// themselves are daemon/security's (PeerAccess, access_rules.h); this applies them to requests
// and answers.
#ifndef JITSYM_DAEMON_QUERY_ACCESS_CHECKS_H_
#define JITSYM_DAEMON_QUERY_ACCESS_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/query/resolver.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::query {

// An "image" / "build_id" lookup: nullopt if it may go on, else the error to send. An image
// that contains a '/' is a path: a relative one is a bad request (it would be resolved against
// the daemon's working directory); an absolute one must be readable by the client
// (PeerAccess::CheckRead), else permission_denied, the same for a file that does not exist in
// a directory the client may not search as for an unreadable one, naming no path. `walked`
// receives the walk of an absolute path the client may read (then only that file is opened).
// With "image_fd", the client's own descriptor is that file instead (PeerAccess::
// CheckDescriptor): bad_request for a descriptor its process does not hold, permission_denied
// for one not open for reading; the path is not looked at, unless the daemon cannot look at
// the client's descriptors (another pid namespace, no right to its /proc).
std::optional<proto::ErrorResponse> CheckImageRequest(const proto::LookupRequest& request,
                                                      const security::PeerAccess& access,
                                                      std::optional<security::WalkedPath>* walked);

// The step of a pid lookup after the JIT index (before images and ELF mappings): makes what a
// client that may not see the pid is told the same whether or not the daemon indexed it
// (security::DecideProcess). If the pid is now a live process the client may not see, every
// address not answered from an incarnation it may see gets "permission denied"; otherwise
// addresses hidden for an incarnation it may not see (LookupBatch::Hide) are asked of the next
// resolvers (and may be answered from the client's own live process's mappings).
class ProcessDenials : public Resolver {
 public:
  std::optional<proto::ErrorResponse> Resolve(LookupBatch& batch) override;
};

// The `busy` answer when /proc cannot be read for `pid` (errno `error`: EMFILE, ENFILE, ENOMEM):
// who holds it now is unknown, and neither a denial nor an answer is given on a guess.
proto::ErrorResponse OwnerUnknown(uint32_t pid, int error);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_ACCESS_CHECKS_H_
