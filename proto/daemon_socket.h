// Where jitsymd listens by default, where the client looks for it, and what the client tells a
// user whom a socket's permissions refuse.
//
//   jitsymd, no --socket:     root: /run/jitsymd/jitsymd.sock (the packaged jitsymd.socket's)
//                             others: $XDG_RUNTIME_DIR/jitsymd.sock, else /tmp/jitsymd-<uid>.sock
//   jitsym, no --socket and no JITSYM_SOCKET:
//                             the path above for the same user, then (not root) the system
//                             socket, so that a user's own daemon wins and the packaged
//                             service answers everyone else
//
// A daemon's default never depends on what else listens; only the client searches. A socket
// named by --socket or JITSYM_SOCKET is the only one tried.
#ifndef JITSYM_PROTO_DAEMON_SOCKET_H_
#define JITSYM_PROTO_DAEMON_SOCKET_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::proto {

// The packaged service's socket (systemd/jitsymd.socket), root's default.
inline constexpr std::string_view kSystemSocketPath = "/run/jitsymd/jitsymd.sock";

// The socket a daemon started by `euid` listens on without --socket. `runtime_dir` is
// $XDG_RUNTIME_DIR (empty when unset).
std::string DaemonSocketPathFor(uint32_t euid, std::string_view runtime_dir);

// Where the client looks, in order, when neither --socket nor JITSYM_SOCKET names a socket:
// the user's own daemon's socket, then (for anyone but root, whose own is the system socket)
// kSystemSocketPath.
std::vector<std::string> ClientSocketCandidates(uint32_t euid, std::string_view runtime_dir);

// Whether a connect() that failed with `err` found nobody listening at the path, so that the
// next candidate may be tried: no such file (or a path component that is not a directory), or
// a socket file left behind by a daemon that is gone (ECONNREFUSED). Any other failure
// (permission, a daemon too busy to accept) is about a daemon that is there: reported, not
// skipped.
bool NobodyListens(int err);

// What a user refused by a socket's permissions (EACCES/EPERM) can do about it.
struct SocketPermissionFacts {
  std::string user;   // the caller's user name (its uid when it has none)
  std::string group;  // the socket's group, if the socket's mode lets that group connect
  bool process_in_group = false;  // the calling process has that group now
  bool group_lists_user = false;  // the group database names the user in it (since the login?)
};
// " (the socket admits members of the group jitsym: as root, `usermod -aG jitsym alice`, then
// log in again)" and the like; starts with a blank, in parentheses.
std::string PermissionHint(const SocketPermissionFacts& facts);
// The facts for the calling process and the socket at `path` (stat, group and user databases).
SocketPermissionFacts ObserveSocketPermission(const std::string& path);

}  // namespace jitsym::proto

#endif  // JITSYM_PROTO_DAEMON_SOCKET_H_
