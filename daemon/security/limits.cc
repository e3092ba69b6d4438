// The limits ledger and the host-derived defaults of limits.h.
#include "daemon/security/limits.h"

#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "daemon/util/log.h"

namespace jitsym::security {

uint32_t LimitLedger::FreshPersonOf(uint32_t uid) const {
  return person_of_ ? person_of_(uid) : uid;
}

uint32_t LimitLedger::PersonOf(uint32_t uid) const {
  std::lock_guard lock(mu_);
  return HeldPersonOf(uid);
}

uint32_t LimitLedger::HeldPersonOf(uint32_t uid) const {
  auto it = uids_.find(uid);
  return it != uids_.end() ? it->second.person : FreshPersonOf(uid);
}

LimitLedger::Uid& LimitLedger::Charged(uint32_t uid) {
  auto [it, added] = uids_.try_emplace(uid);
  if (added) it->second.person = FreshPersonOf(uid);
  return it->second;
}

void LimitLedger::Forget(uint32_t uid) {
  auto it = uids_.find(uid);
  if (it == uids_.end() || it->second.held.files > 0 || it->second.held.bytes > 0) return;
  auto p = persons_.find(it->second.person);
  if (p != persons_.end() && p->second.files == 0 && p->second.bytes == 0) persons_.erase(p);
  uids_.erase(it);
}

std::string LimitLedger::ShareOf(uint64_t limit, uint32_t uid) const {
  const uint32_t person = HeldPersonOf(uid);
  if (person == uid) return log::Cat(limit, " for uid ", uid);
  return log::Cat(limit, " for uid ", person, " and its subordinate uids, counting uid ", uid);
}

Status LimitLedger::AdmitFile(uint32_t uid) {
  std::lock_guard lock(mu_);
  if (total_files_ >= limits_.total_files) {
    return MakeError(ErrorKind::kLimit, log::Cat("total files limit (", limits_.total_files, ")"));
  }
  const uint32_t person = HeldPersonOf(uid);
  auto p = persons_.find(person);
  if (p != persons_.end() && p->second.files >= limits_.user_files) {
    return MakeError(ErrorKind::kLimit,
                     log::Cat("per-user files limit (", ShareOf(limits_.user_files, uid), ")"));
  }
  Uid& u = Charged(uid);
  ++u.held.files;
  ++persons_[u.person].files;
  ++total_files_;
  return OkStatus();
}

bool LimitLedger::HasRoom(uint32_t uid) const {
  std::lock_guard lock(mu_);
  if (total_files_ >= limits_.total_files) return false;
  auto it = persons_.find(HeldPersonOf(uid));
  return it == persons_.end() || it->second.files < limits_.user_files;
}

uint64_t DefaultUserBytes(uint64_t ram_bytes) {
  return std::max<uint64_t>(ram_bytes / 4, 256ull << 20);
}

uint64_t DefaultTotalBytes(uint64_t ram_bytes) {
  return std::max<uint64_t>(ram_bytes / 2, 512ull << 20);
}

uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

void LimitLedger::ReleaseFile(uint32_t uid) {
  std::lock_guard lock(mu_);
  auto it = uids_.find(uid);
  if (it == uids_.end() || it->second.held.files == 0) return;
  --it->second.held.files;
  Held& p = persons_[it->second.person];
  if (p.files > 0) --p.files;
  if (total_files_ > 0) --total_files_;
  Forget(uid);
}

uint64_t LimitLedger::ByteAllowance(uint32_t uid, uint64_t file_bytes, std::string* which) const {
  std::lock_guard lock(mu_);
  auto left = [](uint64_t used, uint64_t limit) { return used >= limit ? 0 : limit - used; };
  uint64_t allowance = left(file_bytes, limits_.file_bytes);
  *which = log::Cat("per-file bytes limit (", limits_.file_bytes, ")");
  auto it = persons_.find(HeldPersonOf(uid));
  const uint64_t user = left(it == persons_.end() ? 0 : it->second.bytes, limits_.user_bytes);
  if (user < allowance) {
    allowance = user;
    *which = log::Cat("per-user bytes limit (", ShareOf(limits_.user_bytes, uid), ")");
  }
  const uint64_t total = left(total_bytes_, limits_.total_bytes);
  if (total < allowance) {
    allowance = total;
    *which = log::Cat("total bytes limit (", limits_.total_bytes, ")");
  }
  return allowance;
}

void LimitLedger::ChargeBytes(uint32_t uid, uint64_t n) {
  std::lock_guard lock(mu_);
  Uid& u = Charged(uid);
  u.held.bytes += n;
  persons_[u.person].bytes += n;
  total_bytes_ += n;
}

void LimitLedger::ReleaseBytes(uint32_t uid, uint64_t n) {
  std::lock_guard lock(mu_);
  auto it = uids_.find(uid);
  if (it == uids_.end()) return;
  n = std::min(n, it->second.held.bytes);
  it->second.held.bytes -= n;
  Held& p = persons_[it->second.person];
  p.bytes -= std::min(p.bytes, n);
  total_bytes_ -= std::min(total_bytes_, n);
  Forget(uid);
}

Status LimitLedger::CheckRanges(uint64_t ranges) const {
  if (ranges <= limits_.file_ranges) return OkStatus();
  return MakeError(ErrorKind::kLimit,
                   log::Cat("per-file ranges limit (", limits_.file_ranges, ")"));
}

}  // namespace jitsym::security
