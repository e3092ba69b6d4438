// The two threads of a streaming client command (lookup, annotate): one writes requests as it
// reads its input, the other reads responses and prints, so several batches are in flight.
#ifndef JITSYM_CLIENT_PIPELINE_H_
#define JITSYM_CLIENT_PIPELINE_H_

#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "client/command.h"

namespace jitsym::client {

// Runs `write` on a thread of its own and `read` (which returns an exit status and may set its
// error) on this one. When `read` fails, `unblock` wakes the writer wherever it waits (for a free
// batch, on the socket, on stdin) before it is joined. Reports on stderr the reader's error
// (an error response, a closed connection: the useful one; the writer's failure to send is then
// a consequence), else `*writer_error`, read once the writer has stopped.
inline int RunPipeline(const std::function<void()>& write,
                       const std::function<int(std::string*)>& read,
                       const std::function<void()>& unblock, const std::string* writer_error) {
  std::thread writer(write);
  std::string reader_error;
  const int status = read(&reader_error);
  if (status != kExitOk) unblock();
  writer.join();
  if (status != kExitOk) {
    if (!reader_error.empty()) std::fprintf(stderr, "jitsym: %s\n", reader_error.c_str());
    return status;
  }
  if (!writer_error->empty()) {
    std::fprintf(stderr, "jitsym: %s\n", writer_error->c_str());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_PIPELINE_H_
