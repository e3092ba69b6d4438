// Pure access rules: see access_rules.h.
#include "daemon/security/access_rules.h"

#include <fcntl.h>

#include <algorithm>

namespace jitsym::security {

bool ModeAllows(const PeerFacts& peer, const InodeFacts& inode, unsigned bits) {
  if (peer.trusted) return true;
  unsigned granted;
  if (inode.uid == peer.uid) {
    granted = (inode.mode >> 6) & 7;
  } else if (inode.gid == peer.gid ||
             std::binary_search(peer.groups.begin(), peer.groups.end(), inode.gid)) {
    granted = (inode.mode >> 3) & 7;
  } else {
    granted = inode.mode & 7;
  }
  return (granted & bits) == bits;
}

FileAccess DecideFileRead(const PeerFacts& peer, const PathFacts& path) {
  for (const InodeFacts& dir : path.searched) {
    if (!ModeAllows(peer, dir, 1)) return FileAccess::kDenied;
  }
  if (!path.file) return FileAccess::kNotFound;
  return ModeAllows(peer, *path.file, 4) ? FileAccess::kAllowed : FileAccess::kDenied;
}

DescriptorAccess DecideDescriptor(const PeerFacts& peer, const DescriptorFacts& d) {
  if (d.holder_uid != peer.uid) return DescriptorAccess::kNotTheClients;
  if (peer.trusted) return DescriptorAccess::kAllowed;  // reads every image as root
  const uint64_t mode = d.flags & O_ACCMODE;
  if ((d.flags & O_PATH) != 0 || (mode != O_RDONLY && mode != O_RDWR)) {
    return DescriptorAccess::kNotOpenForReading;
  }
  return DescriptorAccess::kAllowed;
}

ProcessAccess DecideProcess(const PeerFacts& peer, std::optional<uint32_t> owner,
                            std::optional<uint32_t> live_owner) {
  if (peer.trusted || (owner && *owner == peer.uid)) return ProcessAccess::kAllowed;
  if (live_owner && *live_owner != peer.uid) return ProcessAccess::kDenied;
  return ProcessAccess::kUnknown;
}

bool BelieveImageMap(bool from_operator_dir, std::optional<uint32_t> map_owner, uint32_t for_uid,
                     uint32_t daemon_uid) {
  if (from_operator_dir) return true;
  if (!map_owner) return false;  // can no longer be examined
  return *map_owner == 0 || *map_owner == daemon_uid || *map_owner == for_uid;
}

int ImageMapRank(bool from_operator_dir, std::optional<uint32_t> map_owner, uint32_t daemon_uid) {
  if (from_operator_dir) return 0;
  if (map_owner && (*map_owner == 0 || *map_owner == daemon_uid)) return 1;
  return 2;
}

}  // namespace jitsym::security
