// Limits on what the files in shared directories may make the daemon hold: per file, per owner
// (uid of the files) and in total. What exceeds a limit is refused with a log line and counted
// in `stats` (files_over_limit); nothing grows without bound. All are configurable
// (jitsymd --limit-*); docs/operations.md lists them.
//
// Bytes are what the daemon had to process: bytes read, plus what a compressed file inflated
// to. Files are descriptors held for a user: followed files (an idle one gives its descriptor
// back) and the pidfds of the live processes they belong to.
#ifndef JITSYM_DAEMON_SECURITY_LIMITS_H_
#define JITSYM_DAEMON_SECURITY_LIMITS_H_

#include <cstdint>
#include <string>
#include <unordered_map>

#include "proto/result.h"

namespace jitsym::security {

struct Limits {
  uint64_t file_bytes = 8ull << 30;    // bytes read (or seeked over, or inflated) in one file
  uint64_t file_ranges = 64ull << 20;  // code ranges indexed from one file
  uint64_t user_bytes = 4ull << 30;    // bytes from all the files one uid owns (see below)
  uint64_t user_files = 1024;          // files one uid owns followed at once
  uint64_t total_bytes = 8ull << 30;   // bytes from all files (see below)
  uint64_t total_files = 8192;         // files followed at once
  // Names are cut at index::NameTable::kMaxNameLength (16 KiB); not configurable.
};

// Default byte limits for a host with `ram_bytes` of physical memory: an index is at most about
// as large as the bytes it was built from, so one user may make the daemon process a quarter of
// RAM and all users together half of it (at least 256 MiB and 512 MiB). The jitsymd settings
// limit-user-bytes and limit-total-bytes default to these (0 in the config file).
uint64_t DefaultUserBytes(uint64_t ram_bytes);
uint64_t DefaultTotalBytes(uint64_t ram_bytes);
// Physical memory (sysconf), 0 if unknown.
uint64_t PhysicalMemoryBytes();

// What has been charged against the limits. Used by the ingester's thread only.
class LimitLedger {
 public:
  explicit LimitLedger(Limits limits = {}) : limits_(limits) {}

  const Limits& limits() const { return limits_; }

  // A new file owned by `uid` would be followed: ok if admitted (and counted), otherwise a
  // kLimit error naming the limit that refuses it ("per-user files limit (1024 for uid 7)").
  Status AdmitFile(uint32_t uid);
  // A followed file was closed.
  void ReleaseFile(uint32_t uid);
  // Whether AdmitFile would admit a file owned by `uid` now.
  bool HasRoom(uint32_t uid) const;

  // How many more bytes a file owned by `uid` that has read `file_bytes` may read now, and which
  // limit is the tightest (for the log line when it reaches 0).
  uint64_t ByteAllowance(uint32_t uid, uint64_t file_bytes, std::string* which) const;
  void ChargeBytes(uint32_t uid, uint64_t n);
  // What a file read was dropped from the index (its process evicted).
  void ReleaseBytes(uint32_t uid, uint64_t n);

  // A file with `ranges` code ranges: ok if within the limit, else a kLimit error naming it.
  Status CheckRanges(uint64_t ranges) const;

 private:
  struct User {
    uint64_t bytes = 0;
    uint64_t files = 0;
  };
  Limits limits_;
  std::unordered_map<uint32_t, User> users_;
  uint64_t total_bytes_ = 0;
  uint64_t total_files_ = 0;
};

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_LIMITS_H_
