// Resolves an absolute path one component at a time (openat with O_PATH | O_NOFOLLOW), the way
// the kernel would for the client, and records what the access check needs: every directory
// searched (symlink targets and ".." included) and the file reached. Nothing is opened for
// reading. The check itself is DecideFileRead (access_rules.h).
#ifndef JITSYM_DAEMON_SECURITY_PATH_WALK_H_
#define JITSYM_DAEMON_SECURITY_PATH_WALK_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "daemon/security/access_rules.h"

namespace jitsym::security {

struct WalkedPath {
  PathFacts facts;
  std::string resolved;  // the path with every symlink, "." and ".." resolved (when found)
  dev_t dev = 0;         // of the file reached, to check that what is opened later is it
  ino_t ino = 0;
  bool regular = false;
  bool directory = false;  // the path names a directory (for saying so)
  // `resolved` is /proc/PID/fd/N, a client's own descriptor (PeerAccess::CheckDescriptor): the
  // link is followed when the file is opened, to the object the kernel holds for it.
  bool client_descriptor = false;
  // A filesystem on the way (FUSE) did not answer, or is not asked now: what and why. The walk
  // ended there; the facts are those seen before it.
  std::string unanswered;
};

// False for a path that is not absolute, too long, or loops through symlinks (an error, not an
// access decision). A symlink of /proc (/proc/self, a process's exe, cwd, root, fds) is not
// followed: it ends the walk as a component that does not exist. A component that does not exist
// ends the walk with facts.file unset, and so does one on a filesystem that did not answer (then
// `unanswered` says so).
bool WalkPath(const std::string& path, WalkedPath* out);

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_PATH_WALK_H_
