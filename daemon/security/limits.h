// Limits on what the files in shared directories may make the daemon hold: per file, per owner
// (uid of the files) and in total. What exceeds a limit is refused with a log line and counted
// in `stats` (files_over_limit); nothing grows without bound. All are configurable
// (jitsymd --limit-*); docs/operations.md lists them.
//
// Bytes are what the daemon had to process: bytes read, plus what a compressed file inflated
// to. Files are descriptors held for a user: followed files (an idle one gives its descriptor
// back) and the pidfds of the live processes they belong to.
//
// "Per user" is per person (accounts.h): the subordinate uids /etc/subuid gives a user share his
// quota, so that his containers' uids are not thousands of users.
#ifndef JITSYM_DAEMON_SECURITY_LIMITS_H_
#define JITSYM_DAEMON_SECURITY_LIMITS_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "daemon/util/result.h"

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

// What has been charged against the limits: by the ingester (followed files) and by the query
// threads (files read for a request, such as perfinfo maps). Thread-safe.
class LimitLedger {
 public:
  // person_of: the person a uid counts as (Accounts::PersonOf); none: every uid on its own.
  explicit LimitLedger(Limits limits = {}, std::function<uint32_t(uint32_t)> person_of = {})
      : limits_(limits), person_of_(std::move(person_of)) {}

  const Limits& limits() const { return limits_; }
  // The person whose per-user shares a file owned by uid counts against. Stable while the uid
  // holds files or bytes here, even if /etc/subuid changes meanwhile.
  uint32_t PersonOf(uint32_t uid) const;

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
  struct Held {
    uint64_t bytes = 0;
    uint64_t files = 0;
  };
  // What a uid holds, and the person it was charged to: released to the same person.
  struct Uid {
    Held held;
    uint32_t person = 0;
  };
  // With mu_ held:
  uint32_t HeldPersonOf(uint32_t uid) const;
  Uid& Charged(uint32_t uid);
  void Forget(uint32_t uid);  // once it holds nothing
  uint32_t FreshPersonOf(uint32_t uid) const;
  // "1024 for uid 7" or "1024 for uid 1001 (bob), counting uid 100007".
  std::string ShareOf(uint64_t limit, uint32_t uid) const;

  const Limits limits_;
  const std::function<uint32_t(uint32_t)> person_of_;
  mutable std::mutex mu_;
  std::unordered_map<uint32_t, Uid> uids_;
  std::unordered_map<uint32_t, Held> persons_;
  uint64_t total_bytes_ = 0;
  uint64_t total_files_ = 0;
};

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_LIMITS_H_
