#include "proto/daemon_socket.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace jitsym::proto {
namespace {

// getpwuid_r/getgrgid_r want a buffer; entries with long member lists need more than the
// sysconf hint, so grow on ERANGE up to a bound.
constexpr size_t kMaxEntryBuffer = 1 << 20;

std::string UserName(uid_t uid, gid_t* primary_gid) {
  std::vector<char> buf(4096);
  passwd pw{};
  passwd* found = nullptr;
  while (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == ERANGE &&
         buf.size() < kMaxEntryBuffer) {
    buf.resize(buf.size() * 2);
  }
  if (found == nullptr) return std::to_string(uid);
  *primary_gid = pw.pw_gid;
  return pw.pw_name;
}

std::string GroupName(gid_t gid) {
  std::vector<char> buf(4096);
  group gr{};
  group* found = nullptr;
  while (getgrgid_r(gid, &gr, buf.data(), buf.size(), &found) == ERANGE &&
         buf.size() < kMaxEntryBuffer) {
    buf.resize(buf.size() * 2);
  }
  return found == nullptr ? std::string() : std::string(gr.gr_name);
}

bool ProcessHasGroup(gid_t gid) {
  if (getegid() == gid) return true;
  const int n = getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  const int got = getgroups(n, groups.data());
  return got > 0 && std::find(groups.begin(), groups.begin() + got, gid) != groups.begin() + got;
}

bool DatabaseListsUser(const std::string& user, gid_t primary, gid_t gid) {
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (getgrouplist(user.c_str(), primary, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    if (getgrouplist(user.c_str(), primary, groups.data(), &n) < 0) return false;
  }
  return std::find(groups.begin(), groups.begin() + n, gid) != groups.begin() + n;
}

}  // namespace

std::string DaemonSocketPathFor(uint32_t euid, std::string_view runtime_dir) {
  if (euid == 0) return std::string(kSystemSocketPath);
  if (!runtime_dir.empty()) return std::string(runtime_dir) + "/jitsymd.sock";
  return "/tmp/jitsymd-" + std::to_string(euid) + ".sock";
}

std::vector<std::string> ClientSocketCandidates(uint32_t euid, std::string_view runtime_dir) {
  std::vector<std::string> out{DaemonSocketPathFor(euid, runtime_dir)};
  if (out.front() != kSystemSocketPath) out.emplace_back(kSystemSocketPath);
  return out;
}

bool NobodyListens(int err) { return err == ENOENT || err == ENOTDIR || err == ECONNREFUSED; }

std::string PermissionHint(const SocketPermissionFacts& facts) {
  if (facts.group.empty()) return " (no permission on the socket or its directory)";
  if (facts.process_in_group) {
    // The socket's mode admits this process: what refuses it is a directory on the way.
    return " (" + facts.user + " is in the socket's group " + facts.group +
           ": a directory on the path refuses it)";
  }
  if (facts.group_lists_user) {
    return " (the socket admits members of the group " + facts.group + "; " + facts.user +
           " was added to it after this login: log in again, or run `newgrp " + facts.group + "`)";
  }
  return " (the socket admits members of the group " + facts.group + ": as root, `usermod -aG " +
         facts.group + " " + facts.user + "`, then log in again)";
}

SocketPermissionFacts ObserveSocketPermission(const std::string& path) {
  SocketPermissionFacts facts;
  gid_t primary = getegid();
  facts.user = UserName(geteuid(), &primary);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || (st.st_mode & S_IWGRP) == 0) {
    return facts;
  }
  facts.group = GroupName(st.st_gid);
  if (facts.group.empty()) return facts;
  facts.process_in_group = ProcessHasGroup(st.st_gid);
  facts.group_lists_user = DatabaseListsUser(facts.user, primary, st.st_gid);
  return facts;
}

}  // namespace jitsym::proto
