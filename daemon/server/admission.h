// Who may take which of the daemon's shared resources: connection slots and the memory that
// requests being received and answered hold. Both are policy, so both are pure (a function of
// counts, and a counter with no I/O) and tested without a socket; the Session and the Server
// only ask.
//
// Any local user may connect, so each resource has a per-user share below the total: one user
// filling their share leaves room for everyone else. A share is a person's (security/accounts.h):
// callers key them by the person a uid counts as, so a user's subordinate uids share his. Root (uid
// 0) has no per-user share and may use a reserve of connection slots nobody else may, so `jitsym
// ping` as root answers even when every other slot is taken.
#ifndef JITSYM_DAEMON_SERVER_ADMISSION_H_
#define JITSYM_DAEMON_SERVER_ADMISSION_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace jitsym::server {

// Uids that are never refused for a per-user share.
inline bool IsPrivilegedUid(unsigned uid) { return uid == 0; }

struct ConnectionLimits {
  size_t total = 1024;    // connections open at once, everyone together
  size_t per_user = 64;   // connections one (unprivileged) uid may hold
  size_t privileged = 0;  // of `total`, kept for privileged uids only
};

enum class Admission {
  kAdmit,
  kUserFull,   // the uid holds per_user connections already
  kTotalFull,  // all the slots it may use are taken
};

// Pure: whether a new connection of a uid holding `open_by_user` of `open_total` may stay.
Admission AdmitConnection(const ConnectionLimits& limits, bool privileged, size_t open_total,
                          size_t open_by_user);

// The message of the busy error sent instead of the connection, to uid counted as `person`.
std::string ConnectionBusyMessage(Admission why, const ConnectionLimits& limits, unsigned uid,
                                  unsigned person);

// Bytes held by requests being received (long lines) and decoded requests being answered,
// summed over all connections and per uid. Thread-safe.
class MemoryBudget {
 public:
  enum class Result { kOk, kUserFull, kTotalFull };

  MemoryBudget(uint64_t total, uint64_t per_user) : total_(total), per_user_(per_user) {}

  // Charges `bytes` to `uid` unless that would exceed its share or the total.
  Result TryCharge(unsigned uid, uint64_t bytes);
  void Release(unsigned uid, uint64_t bytes);

  uint64_t total() const { return total_; }
  uint64_t per_user() const { return per_user_; }
  uint64_t used() const;
  uint64_t used_by(unsigned uid) const;

 private:
  const uint64_t total_;
  const uint64_t per_user_;
  mutable std::mutex mutex_;
  uint64_t used_ = 0;                             // guarded by mutex_
  std::unordered_map<unsigned, uint64_t> users_;  // guarded by mutex_; no zero entries
};

// The message of the busy error for a request the budget refused.
std::string MemoryBusyMessage(MemoryBudget::Result why, const MemoryBudget& budget, unsigned uid,
                              unsigned person);

// Query threads answering one person's requests at once. A request may make its thread wait
// (a native file's parse worker, up to its deadline; a FUSE file, up to its timeout), and the
// thread is the daemon's to share: one person holds at most `per_person` of them (fewer than
// there are), and his further requests wait, holding no thread, until one of his is done.
// Privileged uids have no share. Thread-safe.
class ThreadShare {
 public:
  explicit ThreadShare(size_t per_person) : per_person_(per_person) {}
  // Whether `person` may have one more request answered now (then it is counted until
  // Release).
  bool TryTake(unsigned person, bool privileged);
  void Release(unsigned person, bool privileged);
  size_t per_person() const { return per_person_; }

 private:
  const size_t per_person_;  // 0: no share
  std::mutex mutex_;
  std::unordered_map<unsigned, size_t> running_;  // guarded by mutex_; no zero entries
};

// An upper bound of the memory DecodeRequest may allocate for a request line: the addresses
// vector (at most one entry per ',' in the line, at most proto::kMaxBatch, grown by doubling)
// plus the line's own bytes for the strings it may copy. Known before decoding, so the charge
// is taken before the allocation, not after.
uint64_t DecodedRequestBound(std::string_view line);

}  // namespace jitsym::server

#endif  // JITSYM_DAEMON_SERVER_ADMISSION_H_
