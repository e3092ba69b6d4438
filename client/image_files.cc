#include "client/image_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

namespace jitsym::client {

ImageFiles::~ImageFiles() {
  for (const auto& [path, fd] : open_) {
    if (fd >= 0) ::close(fd);
  }
}

namespace {

// "\040" and the like, as mountinfo escapes a mount point's spaces, tabs and newlines.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && s.size() - i >= 4) {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Whether `path` (absolute) lies on a FUSE mount, by this process's mount table: opening it
// would ask that filesystem's server, which may never answer (the daemon is then given the
// path, and asks through its own guarded workers).
bool OnFuseMount(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, best_type;
  size_t best = 0;
  while (std::getline(in, line)) {
    // id parent major:minor root mount-point options... - fstype source super-options
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string type;
    tail >> type;
    const std::string mount = Unescape(point);
    const bool covers = mount == "/" || path == mount ||
                        (path.compare(0, mount.size(), mount) == 0 && path[mount.size()] == '/');
    if (covers && mount.size() >= best) {
      best = mount.size();
      best_type = type;
    }
  }
  return best_type == "fuse" || best_type == "fuseblk" || best_type.rfind("fuse.", 0) == 0;
}

}  // namespace

int ImageFiles::Open(const std::string& path) {
  if (path.find('/') == std::string::npos) return -1;  // an image name, not a file
  if (auto it = open_.find(path); it != open_.end()) return it->second;
  if (open_.size() >= kMaxOpen) return -1;
  int fd = -1;
  // /proc links (a process's exe, cwd, root) are the daemon's to refuse, not this process's to
  // follow; a FUSE file is not opened here (see OnFuseMount). Otherwise regular files only (a
  // device's open may do something); O_NONBLOCK: a FIFO put there meanwhile does not hold the
  // client up (the daemon refuses it).
  if (path[0] == '/' && path != "/proc" && path.rfind("/proc/", 0) != 0 &&
      !OnFuseMount(std::filesystem::path(path).lexically_normal().string())) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    }
  }
  open_.emplace(path, fd);  // once per path: the mount table is read once per file too
  return fd;
}

}  // namespace jitsym::client
