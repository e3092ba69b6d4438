// posix_spawnp with a stdout pipe; nothing else of our state leaks into the child (the pipe is
// close-on-exec on our side, the daemon connection is opened later or close-on-exec).
#include "client/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

extern char** environ;

namespace jitsym::client {

bool SpawnPiped(const std::vector<std::string>& argv, Child* child, std::string* error,
                bool* not_found) {
  *not_found = false;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);  // dup2 clears CLOEXEC
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    *not_found = rc == ENOENT;
    *error = argv[0] + ": " + std::strerror(rc);
    return false;
  }
  child->pid = pid;
  child->stdout_fd = fds[0];
  return true;
}

int WaitChild(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int RunCapture(const std::vector<std::string>& argv, std::string* out, std::string* error,
               bool* not_found) {
  Child child;
  if (!SpawnPiped(argv, &child, error, not_found)) return -1;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(child.stdout_fd, buf, sizeof(buf));
    if (n > 0) {
      if (out->size() < (64u << 20)) out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  close(child.stdout_fd);
  return WaitChild(child.pid);
}

}  // namespace jitsym::client
