// The component-by-component path resolution of path_walk.h.
#include "daemon/security/path_walk.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <vector>

namespace jitsym::security {
namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel (ELOOP)
constexpr size_t kMaxComponents = 4096;

InodeFacts FactsOf(const struct stat& st) {
  return InodeFacts{static_cast<uint32_t>(st.st_uid), static_cast<uint32_t>(st.st_gid), st.st_mode};
}

void Split(const std::string& path, std::deque<std::string>* front) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    const size_t slash = path.find('/', i);
    const size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > i) parts.push_back(path.substr(i, end - i));
    if (slash == std::string::npos) break;
    i = slash + 1;
  }
  front->insert(front->begin(), parts.begin(), parts.end());
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// "/a/b" for the directories below / on the stack ("" for / itself).
template <typename Stack>
std::string Join(const Stack& stack) {
  std::string out;
  for (size_t k = 1; k < stack.size(); ++k) {
    out.push_back('/');
    out += stack[k].second;
  }
  return out;
}

}  // namespace

bool WalkPath(const std::string& path, WalkedPath* out) {
  *out = WalkedPath{};
  if (path.empty() || path[0] != '/' || path.size() > PATH_MAX) return false;
  // The directories from / down to where the walk is, with their names ("" for /).
  std::vector<std::pair<Fd, std::string>> stack;
  auto open_root = [&]() {
    stack.clear();
    stack.emplace_back(Fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)), std::string());
    return stack.back().first.get() >= 0;
  };
  if (!open_root()) return false;
  std::deque<std::string> todo;
  Split(path, &todo);
  int symlinks = 0;
  size_t steps = 0;
  while (!todo.empty()) {
    if (++steps > kMaxComponents) return false;
    std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == ".") continue;
    // Looking a name up in a directory needs search permission on it.
    struct stat dir {};
    if (::fstat(stack.back().first.get(), &dir) != 0) return false;
    out->facts.searched.push_back(FactsOf(dir));
    if (name == "..") {
      if (stack.size() > 1) stack.pop_back();
      continue;
    }
    Fd fd(::openat(stack.back().first.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) return true;  // does not exist (for them)
    if (S_ISLNK(st.st_mode)) {
      if (++symlinks > kMaxSymlinks) return false;
      char target[PATH_MAX + 1];
      const ssize_t n = ::readlinkat(fd.get(), "", target, PATH_MAX);
      if (n <= 0) return true;
      const std::string link(target, static_cast<size_t>(n));
      Split(link, &todo);
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
      stack.emplace_back(std::move(fd), std::move(name));
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
  struct stat st {};
  if (::fstat(stack.back().first.get(), &st) != 0) return false;
  out->facts.file = FactsOf(st);
  out->dev = st.st_dev;
  out->ino = st.st_ino;
  out->resolved = Join(stack);
  if (out->resolved.empty()) out->resolved.push_back('/');
  return true;
}

}  // namespace jitsym::security
