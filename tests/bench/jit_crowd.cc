// A crowd of live JIT processes for scale benchmarks: jit_crowd DIR N RANGES
// Forks N processes; each writes DIR/jit-<its pid>.dump with RANGES code loads and maps the file
// as a runtime maps its jitdump marker (the daemon believes a jitdump only of the process that
// maps it), then sleeps. Prints "ready" once all have, and kills them all when standard input
// ends (or when this process dies: each child has a parent-death signal).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/unit/testing/jitdump_builder.h"

namespace {

[[noreturn]] void Child(const std::string& dir, size_t ranges, int ready) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const uint32_t pid = static_cast<uint32_t>(::getpid());
  jitsym::testing::JitdumpBuilder b(false, 40, pid);
  const uint64_t base = 0x7f0000000000 + (uint64_t{pid} << 20);
  for (size_t i = 0; i < ranges; ++i) {
    b.Load(1000 + i, base + i * 64, 32,
           "JS:*crowd_" + std::to_string(pid) + "_" + std::to_string(i), i);
  }
  const std::string path = dir + "/jit-" + std::to_string(pid) + ".dump";
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, b.bytes().data(), b.size()) != static_cast<ssize_t>(b.size()) ||
      ::mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
    std::perror(path.c_str());
    ::_exit(1);
  }
  ::close(fd);
  char c = 1;
  if (::write(ready, &c, 1) != 1) ::_exit(1);
  ::close(ready);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: jit_crowd DIR N RANGES\n");
    return 2;
  }
  const std::string dir = argv[1];
  const size_t n = std::strtoull(argv[2], nullptr, 10);
  const size_t ranges = std::strtoull(argv[3], nullptr, 10);
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return 1;
  std::vector<pid_t> children;
  children.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      break;
    }
    if (pid == 0) {
      ::close(ready[0]);
      Child(dir, ranges, ready[1]);
    }
    children.push_back(pid);
  }
  ::close(ready[1]);
  size_t got = 0;
  char buf[4096];
  while (got < children.size()) {
    const ssize_t r = ::read(ready[0], buf, sizeof(buf));
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  std::printf("%s %zu\n", got == n ? "ready" : "short", got);
  std::fflush(stdout);
  while (::read(STDIN_FILENO, buf, sizeof(buf)) > 0) {
  }
  for (pid_t pid : children) ::kill(pid, SIGKILL);
  for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
  return got == n ? 0 : 1;
}
