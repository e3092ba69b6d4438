#include "daemon/native/debuginfod_fetcher.h"

#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

constexpr uint64_t kRetryNs = 600ull * 1000000000ull;
constexpr size_t kMaxQueued = 1024;
constexpr size_t kMaxEntries = 65536;

}  // namespace

bool DebuginfodFetcher::Configured() {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && urls[0] != '\0';
}

DebuginfodFetcher::~DebuginfodFetcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<std::string> DebuginfodFetcher::Fetched(const std::string& build_id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(build_id);
  if (it == entries_.end() || it->second.path.empty()) return std::nullopt;
  return it->second.path;
}

void DebuginfodFetcher::Request(const std::string& build_id) {
  std::lock_guard lock(mu_);
  if (stop_) return;
  if (entries_.size() >= kMaxEntries && !entries_.contains(build_id)) return;
  Entry& e = entries_[build_id];
  const uint64_t now = MonotonicNowNs();
  if (!e.path.empty() || e.queued || (e.tried_ns != 0 && now - e.tried_ns < kRetryNs)) return;
  if (queue_.size() >= kMaxQueued) return;
  e.queued = true;
  queue_.push_back(build_id);
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  cv_.notify_one();
}

void DebuginfodFetcher::Run() {
  debuginfod_client* client = debuginfod_begin();
  if (client == nullptr) {
    JITSYM_LOG(kWarning, "debuginfod: cannot create a client; no downloads");
    return;
  }
  debuginfod_set_user_data(client, this);
  // Called during transfers: a non-zero return aborts, so shutdown does not wait on the network.
  debuginfod_set_progressfn(client, [](debuginfod_client* c, long, long) -> int {
    auto* self = static_cast<DebuginfodFetcher*>(debuginfod_get_user_data(c));
    std::lock_guard lock(self->mu_);
    return self->stop_ ? 1 : 0;
  });
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) break;
    const std::string id = queue_.front();
    queue_.pop_front();
    lock.unlock();
    char* path = nullptr;
    const uint64_t t0 = MonotonicNowNs();
    const int fd = debuginfod_find_debuginfo(
        client, reinterpret_cast<const unsigned char*>(id.c_str()), 0, &path);
    std::string found;
    if (fd >= 0) {
      ::close(fd);
      if (path) found = path;
      JITSYM_LOG(kInfo, "debuginfod: fetched ", id, " -> ", found, " in ",
                 (MonotonicNowNs() - t0) / 1000000, " ms");
    } else {
      JITSYM_LOG(kInfo, "debuginfod: no debug file for ", id, ": ", std::strerror(-fd));
    }
    std::free(path);
    lock.lock();
    Entry& e = entries_[id];
    e.queued = false;
    e.tried_ns = MonotonicNowNs();
    e.path = found;
  }
  lock.unlock();
  debuginfod_end(client);
}

}  // namespace jitsym::native
