// The limits ledger and the host-derived defaults of limits.h.
#include "daemon/security/limits.h"

#include <unistd.h>

#include <algorithm>

#include "daemon/util/log.h"

namespace jitsym::security {

Status LimitLedger::AdmitFile(uint32_t uid) {
  if (total_files_ >= limits_.total_files) {
    return MakeError(ErrorKind::kLimit, log::Cat("total files limit (", limits_.total_files, ")"));
  }
  User& u = users_[uid];
  if (u.files >= limits_.user_files) {
    return MakeError(ErrorKind::kLimit,
                     log::Cat("per-user files limit (", limits_.user_files, " for uid ", uid, ")"));
  }
  ++u.files;
  ++total_files_;
  return OkStatus();
}

bool LimitLedger::HasRoom(uint32_t uid) const {
  if (total_files_ >= limits_.total_files) return false;
  auto it = users_.find(uid);
  return it == users_.end() || it->second.files < limits_.user_files;
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
  User& u = users_[uid];
  if (u.files > 0) --u.files;
  if (total_files_ > 0) --total_files_;
}

uint64_t LimitLedger::ByteAllowance(uint32_t uid, uint64_t file_bytes, std::string* which) const {
  auto left = [](uint64_t used, uint64_t limit) { return used >= limit ? 0 : limit - used; };
  uint64_t allowance = left(file_bytes, limits_.file_bytes);
  *which = log::Cat("per-file bytes limit (", limits_.file_bytes, ")");
  auto it = users_.find(uid);
  const uint64_t user = left(it == users_.end() ? 0 : it->second.bytes, limits_.user_bytes);
  if (user < allowance) {
    allowance = user;
    *which = log::Cat("per-user bytes limit (", limits_.user_bytes, " for uid ", uid, ")");
  }
  const uint64_t total = left(total_bytes_, limits_.total_bytes);
  if (total < allowance) {
    allowance = total;
    *which = log::Cat("total bytes limit (", limits_.total_bytes, ")");
  }
  return allowance;
}

void LimitLedger::ChargeBytes(uint32_t uid, uint64_t n) {
  users_[uid].bytes += n;
  total_bytes_ += n;
}

void LimitLedger::ReleaseBytes(uint32_t uid, uint64_t n) {
  User& u = users_[uid];
  u.bytes -= std::min(u.bytes, n);
  total_bytes_ -= std::min(total_bytes_, n);
}

Status LimitLedger::CheckRanges(uint64_t ranges) const {
  if (ranges <= limits_.file_ranges) return OkStatus();
  return MakeError(ErrorKind::kLimit,
                   log::Cat("per-file ranges limit (", limits_.file_ranges, ")"));
}

}  // namespace jitsym::security
