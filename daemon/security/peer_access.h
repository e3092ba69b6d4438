// Who may ask about what, for one connected client: gathers the facts (the peer's credentials,
// /proc, a path walk) and decides with the pure rules of access_rules.h. Every query path
// (lookup, symbols; pprof and annotate are lookups) asks here before it opens anything.
// A client may query a process only if it could inspect that process itself: root, the
// process's owner, or a member of the configured trusted group (operators); it may name a file
// only if it could read that file itself. docs/operations.md ("Security model").
#ifndef JITSYM_DAEMON_SECURITY_PEER_ACCESS_H_
#define JITSYM_DAEMON_SECURITY_PEER_ACCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/security/access_rules.h"
#include "daemon/security/path_walk.h"
#include "daemon/security/peer_credentials.h"

namespace jitsym::security {

struct AccessPolicy {
  // Members of this group (primary or supplementary, as the peer was when it connected) may
  // query every process and read every image: `jitsymd --trusted-group NAME`.
  std::optional<uint32_t> trusted_gid;
};

// The gid of a group name (or a decimal gid); nullopt if there is no such group.
std::optional<uint32_t> ResolveGroup(const std::string& name);

// The supplementary groups of `uid` from the group database (getgrouplist), including `gid`.
// Used when the kernel did not report the peer's groups.
std::vector<uint32_t> GroupsOfUser(uint32_t uid, uint32_t gid);

// The rights of one connected client, decided once per request.
class PeerAccess {
 public:
  PeerAccess(const PeerCredentials& peer, const AccessPolicy& policy);

  bool root() const { return uid_ == 0; }
  bool trusted() const { return trusted_; }  // root or a trusted-group member
  uint32_t uid() const { return uid_; }
  bool InGroup(uint32_t gid) const;

  // A process owned by `owner`; an unknown owner (a process never seen alive whose files were
  // root's) is visible to root and the trusted group only.
  bool MaySeeProcess(std::optional<uint32_t> owner) const;
  // What to answer about one incarnation of `pid` whose recorded owner is `owner`
  // (DecideProcess): reads who holds the pid now only when the owner alone does not allow.
  ProcessAccess ForProcess(std::optional<uint32_t> owner, uint32_t pid) const;

  // Whether the peer could open `path` (absolute) for reading itself: the path is resolved
  // component by component (symlinks included) and every directory searched must be
  // searchable, the file readable, by the owner/group/other mode bits (no ACLs). `walked`
  // receives the resolved path and the file's identity, to open and verify that file only.
  FileAccess CheckRead(const std::string& path, WalkedPath* walked) const;
  bool MayRead(const std::string& path) const;
  // Whether the peer's own descriptor `fd` (a lookup's "image_fd") may be read for it
  // (DecideDescriptor): its process (the one that connected, by SO_PEERCRED's pid) must be the
  // peer's, the same before and after, and hold `fd` open for reading. `walked` then receives
  // /proc/PID/fd/FD, to open following that link, and the identity (device, inode) of the file
  // the link led to when checked: what is opened later must be it. Nothing of the file's
  // filesystem is asked (a FUSE server may never answer): the kernel's fdinfo and mount tables
  // say where it lies, fstat only on an ordinary mount. Otherwise *why says why (kNotFound: no
  // such descriptor; kDenied: the rest), for the peer, whose descriptor it is. nullopt when the
  // daemon cannot look at the peer's descriptors at all (a pid namespace it does not see, a
  // /proc it may not read: a daemon without privileges): the path is then checked instead.
  std::optional<FileAccess> CheckDescriptor(int32_t fd, WalkedPath* walked, std::string* why) const;

  const PeerFacts& facts() const { return facts_; }

 private:
  uint32_t uid_ = 0;
  uint32_t gid_ = 0;
  int pid_ = 0;  // the process that connected, as SO_PEERCRED said (0: not in our pid namespace)
  std::vector<uint32_t> groups_;  // supplementary, sorted
  bool trusted_ = false;
  PeerFacts facts_;
};

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_PEER_ACCESS_H_
