// Connection and memory admission (admission.h).
#include "daemon/server/admission.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>

#include "proto/protocol.h"

namespace jitsym::server {

Admission AdmitConnection(const ConnectionLimits& limits, bool privileged, size_t open_total,
                          size_t open_by_user) {
  if (privileged) return open_total < limits.total ? Admission::kAdmit : Admission::kTotalFull;
  if (open_by_user >= limits.per_user) return Admission::kUserFull;
  const size_t usable = limits.total - std::min(limits.privileged, limits.total);
  return open_total < usable ? Admission::kAdmit : Admission::kTotalFull;
}

namespace {

// "uid 1001" or "uid 1001 (with its subordinate uids; this is uid 100007)".
std::string Holder(unsigned uid, unsigned person) {
  std::string out = "uid " + std::to_string(person);
  if (uid != person) {
    out += " (with its subordinate uids; this is uid " + std::to_string(uid) + ")";
  }
  return out;
}

}  // namespace

std::string ConnectionBusyMessage(Admission why, const ConnectionLimits& limits, unsigned uid,
                                  unsigned person) {
  if (why == Admission::kUserFull) {
    return Holder(uid, person) + " already has " + std::to_string(limits.per_user) +
           " connections open to jitsymd (the per-user connection limit)";
  }
  return "jitsymd has all its " + std::to_string(limits.total) +
         " connections in use (the total connection limit)";
}

MemoryBudget::Result MemoryBudget::TryCharge(unsigned uid, uint64_t bytes) {
  if (bytes == 0) return Result::kOk;
  std::lock_guard lock(mutex_);
  uint64_t& mine = users_[uid];
  if (!IsPrivilegedUid(uid) && mine + bytes > per_user_) {
    if (mine == 0) users_.erase(uid);
    return Result::kUserFull;
  }
  if (used_ + bytes > total_) {
    if (mine == 0) users_.erase(uid);
    return Result::kTotalFull;
  }
  mine += bytes;
  used_ += bytes;
  return Result::kOk;
}

void MemoryBudget::Release(unsigned uid, uint64_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  auto it = users_.find(uid);
  if (it == users_.end()) return;  // never charged: a caller bug, but not worth a crash
  const uint64_t n = std::min(bytes, it->second);
  it->second -= n;
  used_ -= std::min(n, used_);
  if (it->second == 0) users_.erase(it);
}

uint64_t MemoryBudget::used() const {
  std::lock_guard lock(mutex_);
  return used_;
}

uint64_t MemoryBudget::used_by(unsigned uid) const {
  std::lock_guard lock(mutex_);
  auto it = users_.find(uid);
  return it == users_.end() ? 0 : it->second;
}

std::string MemoryBusyMessage(MemoryBudget::Result why, const MemoryBudget& budget, unsigned uid,
                              unsigned person) {
  if (why == MemoryBudget::Result::kUserFull) {
    return Holder(uid, person) + " already has " + std::to_string(budget.per_user() >> 20) +
           " MiB of requests in flight (the per-user request memory limit)";
  }
  return "jitsymd has " + std::to_string(budget.total() >> 20) +
         " MiB of requests in flight (the total request memory limit)";
}

uint64_t DecodedRequestBound(std::string_view line) {
  uint64_t entries = 1;
  for (const char *p = line.data(), *end = line.data() + line.size();
       (p = static_cast<const char*>(std::memchr(p, ',', static_cast<size_t>(end - p)))); ++p) {
    if (++entries > proto::kMaxBatch) break;
  }
  entries = std::bit_ceil(std::min<uint64_t>(entries, proto::kMaxBatch));
  return entries * sizeof(proto::AddressQuery) + line.size();
}

bool ThreadShare::TryTake(unsigned person, bool privileged) {
  if (per_person_ == 0 || privileged) return true;
  std::lock_guard lock(mutex_);
  size_t& n = running_[person];
  if (n >= per_person_) return false;
  ++n;
  return true;
}

void ThreadShare::Release(unsigned person, bool privileged) {
  if (per_person_ == 0 || privileged) return;
  std::lock_guard lock(mutex_);
  auto it = running_.find(person);
  if (it != running_.end() && --it->second == 0) running_.erase(it);
}

}  // namespace jitsym::server
