// Running a helper program (perf) from the client: its stdout piped to us, its stderr passed
// through to ours so that its own messages reach the user.
#ifndef JITSYM_CLIENT_SUBPROCESS_H_
#define JITSYM_CLIENT_SUBPROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace jitsym::client {

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // read end of its stdout; ours to close
};

// Starts argv[0] (searched on PATH) with stdout on a pipe. False with *error on failure;
// *not_found tells a missing program from other failures.
bool SpawnPiped(const std::vector<std::string>& argv, Child* child, std::string* error,
                bool* not_found);

// Waits for the child; its exit status, or 128 + signal.
int WaitChild(pid_t pid);

// Runs argv to completion and collects its stdout in *out. The exit status, or -1 when it could
// not be started (*error, *not_found as above).
int RunCapture(const std::vector<std::string>& argv, std::string* out, std::string* error,
               bool* not_found);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_SUBPROCESS_H_
