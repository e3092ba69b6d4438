// The file trust rules of file_trust.h: pure functions of the facts they are given.
#include "daemon/security/file_trust.h"

#include <pwd.h>

#include <vector>

namespace jitsym::security {

FileVerdict JudgeProcessFile(uint32_t file_uid, std::optional<uint32_t> process_uid) {
  if (file_uid == 0) return FileVerdict::kTrusted;
  if (!process_uid) return FileVerdict::kPending;
  return *process_uid == file_uid ? FileVerdict::kTrusted : FileVerdict::kUntrusted;
}

Admission JudgeAdmission(const FileFacts& file, const std::optional<ProcessFacts>& process,
                         uint64_t daemon_start_ns) {
  if (file.uid == 0 && file.nlink > 1 && !(process && process->uid == 0)) {
    return Admission::kRootLink;
  }
  if (process && file.ctime_ns + kStartToleranceNs < process->start_ns) {
    // Not the live process's file. Found at start-up it is what an earlier process of this pid
    // left behind while the daemon was not running; later, nothing explains it but a file
    // kept aside and planted (a rename or link would have updated its ctime).
    return file.found_at_startup && file.ctime_ns < daemon_start_ns ? Admission::kExited
                                                                    : Admission::kPredates;
  }
  if (!process && file.found_at_startup && file.ctime_ns < daemon_start_ns) {
    return Admission::kExited;
  }
  switch (
      JudgeProcessFile(file.uid, process ? std::optional<uint32_t>(process->uid) : std::nullopt)) {
    case FileVerdict::kTrusted:
      return Admission::kLive;
    case FileVerdict::kPending:
      return Admission::kPending;
    case FileVerdict::kUntrusted:
      break;
  }
  return Admission::kUntrusted;
}

std::string_view AdmissionName(Admission a) {
  switch (a) {
    case Admission::kLive:
      return "live";
    case Admission::kExited:
      return "exited";
    case Admission::kPending:
      return "pending";
    case Admission::kUntrusted:
      return "untrusted";
    case Admission::kRootLink:
      return "root-link";
    case Admission::kPredates:
      return "predates";
  }
  return "unknown";
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
