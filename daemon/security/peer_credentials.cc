// Reads a Unix socket peer's credentials from the kernel (see peer_credentials.h).
#include "daemon/security/peer_credentials.h"

#include <errno.h>
#include <sys/socket.h>

namespace jitsym::security {
namespace {

// The peer's supplementary groups as they were when it connected (Linux 4.13+).
void ReadPeerGroups(int fd, std::vector<unsigned>* groups) {
#ifdef SO_PEERGROUPS
  std::vector<gid_t> buf(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    socklen_t len = static_cast<socklen_t>(buf.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, buf.data(), &len) == 0) {
      groups->assign(buf.begin(), buf.begin() + len / sizeof(gid_t));
      return;
    }
    if (errno != ERANGE) return;
    buf.resize(len / sizeof(gid_t) + 1);
  }
#endif
}

}  // namespace

std::optional<PeerCredentials> ReadPeerCredentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
    return std::nullopt;
  }
  PeerCredentials peer;
  peer.pid = cred.pid;
  peer.uid = cred.uid;
  peer.person = cred.uid;
  peer.gid = cred.gid;
  ReadPeerGroups(fd, &peer.groups);
  return peer;
}

}  // namespace jitsym::security
