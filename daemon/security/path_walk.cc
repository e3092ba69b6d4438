// The component-by-component path resolution of path_walk.h.
#include "daemon/security/path_walk.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <vector>

#include "daemon/os/guarded_fs.h"

namespace jitsym::security {
namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel (ELOOP)
constexpr size_t kMaxComponents = 4096;

InodeFacts FactsOf(const struct stat& st) {
  return InodeFacts{static_cast<uint32_t>(st.st_uid), static_cast<uint32_t>(st.st_gid), st.st_mode};
}

// "/a/b" for the directories below / on the stack ("" for / itself).
template <typename Stack>
std::string Join(const Stack& stack) {
  std::string out;
  for (size_t k = 1; k < stack.size(); ++k) {
    out.push_back('/');
    out += stack[k].name;
  }
  return out;
}

// The device of /proc (0 when it cannot be looked at: then no directory matches it).
dev_t ProcDevice() {
  static const dev_t dev = [] {
    struct stat st {};
    return ::stat("/proc/self", &st) == 0 ? st.st_dev : dev_t{0};
  }();
  return dev;
}

}  // namespace

bool WalkPath(const std::string& path, WalkedPath* out) {
  *out = WalkedPath{};
  if (path.empty() || path[0] != '/' || path.size() > PATH_MAX) return false;
  // The directories from / down to where the walk is, with their names ("" for /) and stat.
  // Every lookup goes through os/guarded_fs.h: a FUSE mount on the way is asked by a worker
  // process, and one that does not answer ends the walk (out->unanswered) instead of the
  // thread.
  struct Dir {
    os::PathFd fd;
    std::string name;
    struct stat st;
  };
  std::vector<Dir> stack;
  auto open_root = [&]() {
    stack.clear();
    auto root = os::OpenRoot();
    if (!root) return false;
    auto st = os::StatOf(*root);
    if (!st) return false;
    stack.push_back({std::move(*root), std::string(), *st});
    return true;
  };
  if (!open_root()) return false;
  std::deque<std::string> todo;
  os::PushFrontComponents(path, &todo);
  int symlinks = 0;
  size_t steps = 0;
  while (!todo.empty()) {
    if (++steps > kMaxComponents) return false;
    std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == ".") continue;
    // Looking a name up in a directory needs search permission on it.
    out->facts.searched.push_back(FactsOf(stack.back().st));
    if (name == "..") {
      if (stack.size() > 1) stack.pop_back();
      continue;
    }
    auto found = os::LookUp(stack.back().fd, name);
    if (!found) {
      // Decided on what was seen before it (access_rules.h).
      out->unanswered = found.error().message;
      return true;
    }
    os::Entry& e = *found;
    if (e.error != 0) return true;  // does not exist (for them)
    const struct stat& st = e.st;
    if (S_ISLNK(st.st_mode)) {
      // /proc's links (a process's exe, cwd, root, fds, /proc/self) are not followed: reading
      // one takes the daemon's rights over another user's process, and what it names is that
      // process's view. As absent.
      if (stack.back().st.st_dev == ProcDevice()) return true;
      if (++symlinks > kMaxSymlinks) return false;
      if (e.link.empty()) return true;
      const std::string link = e.link;
      os::PushFrontComponents(link, &todo);
      if (link[0] == '/' && !open_root()) return false;
      continue;
    }
    bool last = true;
    for (const std::string& rest : todo) {
      if (rest != ".") {
        last = false;
        break;
      }
    }
    if (!last) {
      if (!S_ISDIR(st.st_mode)) return true;  // ENOTDIR: as absent
      stack.push_back({std::move(e.fd), std::move(name), st});
      continue;
    }
    out->facts.file = FactsOf(st);
    out->dev = st.st_dev;
    out->ino = st.st_ino;
    out->regular = S_ISREG(st.st_mode);
    out->directory = S_ISDIR(st.st_mode);
    out->resolved = Join(stack);
    out->resolved.push_back('/');
    out->resolved += name;
    return true;
  }
  // The path named a directory (or "/"): no file to read.
  const struct stat& st = stack.back().st;
  out->facts.file = FactsOf(st);
  out->dev = st.st_dev;
  out->ino = st.st_ino;
  out->resolved = Join(stack);
  if (out->resolved.empty()) out->resolved.push_back('/');
  return true;
}

}  // namespace jitsym::security
