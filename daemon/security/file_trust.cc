#include "daemon/security/file_trust.h"

#include <pwd.h>

#include <vector>

namespace jitsym::security {

FileVerdict JudgeProcessFile(uint32_t file_uid, std::optional<uint32_t> process_uid) {
  if (file_uid == 0) return FileVerdict::kTrusted;
  if (!process_uid) return FileVerdict::kPending;
  return *process_uid == file_uid ? FileVerdict::kTrusted : FileVerdict::kUntrusted;
}

std::string DescribeUid(uint32_t uid) {
  std::string out = "uid " + std::to_string(uid);
  std::vector<char> buf(4096);
  passwd pw{};
  passwd* result = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &result) == 0 && result) {
    out += " (" + std::string(result->pw_name) + ")";
  }
  return out;
}

}  // namespace jitsym::security
