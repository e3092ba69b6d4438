// Who is connecting: the credentials the kernel gives for the peer of a Unix socket. They are
// the facts every access decision starts from (peer_access.h), so they live with the rules; the
// server reads them at accept time and hands them to its request handler.
#ifndef JITSYM_DAEMON_SECURITY_PEER_CREDENTIALS_H_
#define JITSYM_DAEMON_SECURITY_PEER_CREDENTIALS_H_

#include <optional>
#include <vector>

namespace jitsym::security {

// The connecting process, from SO_PEERCRED at accept time. The defaults are nobody's ids, never
// root's: a PeerCredentials nobody filled in has no rights.
struct PeerCredentials {
  static constexpr unsigned kUnknownId = static_cast<unsigned>(-1);
  int pid = 0;
  unsigned uid = kUnknownId;
  unsigned gid = kUnknownId;
  // The person whose per-user shares (connections, request memory) the peer uses: uid, or the
  // owner of the subordinate uid range that holds it (accounts.h). Set by the server at accept.
  unsigned person = kUnknownId;
  // Supplementary groups at connect time (SO_PEERGROUPS); empty when the kernel cannot tell.
  std::vector<unsigned> groups;
};

// The peer of a connected Unix socket (SO_PEERCRED, SO_PEERGROUPS); nullopt when the kernel
// does not say. The server refuses such a connection rather than guess who it is.
std::optional<PeerCredentials> ReadPeerCredentials(int fd);

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_PEER_CREDENTIALS_H_
