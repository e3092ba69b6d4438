// The one rule for files the daemon may trust not to change under it (file_trust.h).
#include "daemon/native/file_trust.h"

#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "daemon/native/file_ops.h"

namespace jitsym::native {
namespace {

bool Facts(const struct stat& st, const struct statfs& fs, FileFacts* out) {
  out->uid = st.st_uid;
  out->mode = st.st_mode;
  out->fs_type = static_cast<int64_t>(fs.f_type);
  return true;
}

}  // namespace

bool OwnerCannotChange(const FileFacts& f, std::string* why) {
  std::string reason;
  if (f.uid != 0) {
    reason = "owned by uid " + std::to_string(f.uid);
  } else if (!S_ISLNK(f.mode) && (f.mode & (S_IWGRP | S_IWOTH)) != 0) {  // a link's bits: unused
    reason = "writable by group or others";
  } else if (f.fs_type == FUSE_SUPER_MAGIC) {
    reason = "on a FUSE file system";
  }
  if (reason.empty()) return true;
  if (why != nullptr) *why = std::move(reason);
  return false;
}

bool FdOwnerCannotChange(int fd) {
  struct stat st;
  struct statfs fs;
  FileFacts f;
  return fd >= 0 && ::fstat(fd, &st) == 0 && ::fstatfs(fd, &fs) == 0 && Facts(st, fs, &f) &&
         OwnerCannotChange(f);
}

bool PathOwnerCannotChange(const std::string& path, std::string* why) {
  std::string resolved;
  if (!Files().resolve(path, &resolved)) {
    *why = path + ": " + std::strerror(errno);
    return false;
  }
  // "/", then each prefix up to the file itself, of the path as given (its links and "..", which
  // whoever opens it follows again) and as resolved now: each must be root's alone (a directory
  // a user can write to, or a link he owns, lets him swap the file).
  std::vector<std::string> names = {"/"};
  for (const std::string* p : {&path, static_cast<const std::string*>(&resolved)}) {
    for (size_t slash = p->find('/', 1); slash != std::string::npos;
         slash = p->find('/', slash + 1)) {
      names.push_back(p->substr(0, slash));
    }
    if (*p != "/") names.push_back(*p);
  }
  for (const std::string& name : names) {
    struct stat st;
    FileFacts f;
    std::string reason;
    bool served = false;
    // Not statfs(2): on a FUSE mount it asks the server, which may never answer.
    if (!Files().stat(name, /*follow=*/false, &st, &served)) {
      *why = name + ": " + std::strerror(errno);
      return false;
    }
    struct statfs fs {};
    fs.f_type = served ? FUSE_SUPER_MAGIC : 0;
    Facts(st, fs, &f);
    if (!OwnerCannotChange(f, &reason)) {
      *why = name + ": " + reason;
      return false;
    }
  }
  return true;
}

}  // namespace jitsym::native
