// Debug files fetched from debuginfod servers (DEBUGINFOD_URLS, libdebuginfod) on a background
// thread, so that no query waits on the network: the first answers for a module without DWARF are
// symbol-table level, later ones (once the file is in debuginfod's cache) full.
#ifndef JITSYM_DAEMON_NATIVE_DEBUGINFOD_FETCHER_H_
#define JITSYM_DAEMON_NATIVE_DEBUGINFOD_FETCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

namespace jitsym::native {

class DebuginfodFetcher {
 public:
  // Whether DEBUGINFOD_URLS names a server.
  static bool Configured();
  DebuginfodFetcher();
  // Aborts a transfer in progress; a fetch that does not notice within two seconds (a slow
  // name lookup or connect) is left to finish on its own, so shutdown never waits on the network.
  ~DebuginfodFetcher();

  // The local path of the debug file fetched for this build-id (hex), once there is one.
  std::optional<std::string> Fetched(const std::string& build_id);
  // Asks for it in the background; repeated asks are free. A failed fetch is retried after
  // ten minutes.
  void Request(const std::string& build_id);

 private:
  struct Entry {
    std::string path;
    uint64_t tried_ns = 0;
    bool queued = false;
  };
  // Shared with the thread, which may outlive the fetcher.
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::string> queue;
    std::unordered_map<std::string, Entry> entries;
    bool stop = false;
    bool running = false;
  };
  static void Run(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_DEBUGINFOD_FETCHER_H_
