// The access rules of the query side as pure functions of facts (uids, gids, mode bits, who
// owns a process), so that every path (lookup, symbols, pprof and annotate through lookup)
// decides the same way and the rules can be tested with made-up facts. PeerAccess
// (peer_access.h) gathers the facts and calls these; nothing else may decide.
// docs/operations.md ("Security model") states the rules.
#ifndef JITSYM_DAEMON_SECURITY_ACCESS_RULES_H_
#define JITSYM_DAEMON_SECURITY_ACCESS_RULES_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace jitsym::security {

// Who asks, as the kernel would see it.
struct PeerFacts {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary, sorted
  bool trusted = false;          // root or a member of the trusted group: reads as root
};

// What the permission check of one inode needs (from stat).
struct InodeFacts {
  uint32_t uid = 0;
  uint32_t gid = 0;
  mode_t mode = 0;
};

// Whether the owner/group/other class that applies to the peer grants `bits` (S_IROTH-style:
// 4 read, 1 search). Exactly one class applies, as in the kernel: an owner without the owner
// bit is refused even if "other" would allow. ACLs are not consulted.
bool ModeAllows(const PeerFacts& peer, const InodeFacts& inode, unsigned bits);

// What resolving a path found: every directory the resolution searched (in the order the
// kernel would search them, symlink targets included), and then either the file it ended on or
// the fact that a component did not exist.
struct PathFacts {
  std::vector<InodeFacts> searched;
  std::optional<InodeFacts> file;  // nullopt: a component does not exist (or is not a directory)
};

enum class FileAccess {
  kAllowed,
  kDenied,      // the peer could not open it for reading itself
  kNotFound,    // it does not exist, and the peer could have found that out itself
  kUnanswered,  // a filesystem on its path did not answer, and the peer could have got there
};

// A descriptor a client names as its own (a lookup's "image_fd"), as /proc shows it: whose is
// the process that holds it (the owner of /proc/PID, as for every process), and the flags it was
// opened with (fdinfo).
struct DescriptorFacts {
  uint32_t holder_uid = 0;
  uint64_t flags = 0;
};

enum class DescriptorAccess {
  kAllowed,
  kNotTheClients,      // the process that holds it is not the client's (any more)
  kNotOpenForReading,  // O_PATH or write-only: the client may not have been able to read it
};

// A file is read for a client through a descriptor only when the client's own process holds it
// open for reading: what the client could read itself, whatever the file's path or mode now.
DescriptorAccess DecideDescriptor(const PeerFacts& peer, const DescriptorFacts& d);

// Whether the peer may read a file: search permission on every directory searched, read
// permission on the file. A missing file is "not found" only if the peer could search every
// directory up to where the path ended; otherwise it is "denied", exactly like an existing
// file the peer may not read, so that the answer tells nothing the peer could not learn.
FileAccess DecideFileRead(const PeerFacts& peer, const PathFacts& path);

enum class ProcessAccess {
  kAllowed,
  kDenied,   // "permission denied": the pid is a live process of someone else (ps shows it)
  kUnknown,  // answered as if the daemon knew nothing of that pid
};

// Whether the peer may see one incarnation of a process. `owner`: the uid recorded while that
// incarnation lived (nullopt: never seen alive, only root's files describe it). `live_owner`:
// the owner of whatever process holds the pid now (nullopt: none). A peer who may not see the
// incarnation is told "permission denied" only when the pid is now a live process that is not
// its own (which /proc tells anyone); otherwise it gets the answer for a pid the daemon never
// indexed, so that it cannot learn which dead pids were indexed.
ProcessAccess DecideProcess(const PeerFacts& peer, std::optional<uint32_t> owner,
                            std::optional<uint32_t> live_owner);

// Whether an image map (r2rmap; it names an image, not a process) is believed when answering
// for `for_uid` (the process's owner, or the client of an "image" lookup). Maps from the
// operator's --r2rmap-dir directories are; a map in a watched directory is if its owner is root,
// the daemon's own user, or `for_uid` (another user's map there may be planted).
bool BelieveImageMap(bool from_operator_dir, std::optional<uint32_t> map_owner, uint32_t for_uid,
                     uint32_t daemon_uid);

// Precedence among the maps of one image name (lower first): --r2rmap-dir maps, then watched
// maps of root or the daemon's user, then the others (believed only for their owner). A map of
// a later rank never hides one of an earlier rank.
int ImageMapRank(bool from_operator_dir, std::optional<uint32_t> map_owner, uint32_t daemon_uid);

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_ACCESS_RULES_H_
