#include "daemon/native/debuginfod_fetcher.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

constexpr uint64_t kRetryNs = 600ull * 1000000000ull;
constexpr size_t kMaxQueued = 1024;
constexpr size_t kMaxEntries = 65536;

// libdebuginfod, loaded when the first download is asked for: linked, it and what it links
// (libcurl, GnuTLS, Kerberos, LDAP: some forty libraries) were loaded by every start of the
// daemon and of each parse worker, which run the same binary and never download.
struct Debuginfod {
  decltype(&debuginfod_begin) begin;
  decltype(&debuginfod_end) end;
  decltype(&debuginfod_set_user_data) set_user_data;
  decltype(&debuginfod_get_user_data) get_user_data;
  decltype(&debuginfod_set_progressfn) set_progressfn;
  decltype(&debuginfod_find_debuginfo) find_debuginfo;
};

// The library's functions, or nullopt (logged) when it cannot be loaded. Never unloaded.
std::optional<Debuginfod> LoadDebuginfod() {
  void* lib = ::dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    JITSYM_LOG(kWarning, "debuginfod: ", ::dlerror(), "; no downloads");
    return std::nullopt;
  }
  Debuginfod d{};
  bool all = true;
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
    all = all && fn != nullptr;
  };
  get(d.begin, "debuginfod_begin");
  get(d.end, "debuginfod_end");
  get(d.set_user_data, "debuginfod_set_user_data");
  get(d.get_user_data, "debuginfod_get_user_data");
  get(d.set_progressfn, "debuginfod_set_progressfn");
  get(d.find_debuginfo, "debuginfod_find_debuginfo");
  if (!all) {
    JITSYM_LOG(kWarning, "debuginfod: libdebuginfod.so.1 lacks a function we call; no downloads");
    return std::nullopt;
  }
  return d;
}

}  // namespace

bool DebuginfodFetcher::Configured() {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && urls[0] != '\0';
}

DebuginfodFetcher::DebuginfodFetcher() : state_(std::make_shared<State>()) {}

DebuginfodFetcher::~DebuginfodFetcher() {
  std::unique_lock lock(state_->mu);
  state_->stop = true;
  state_->cv.notify_all();
  const bool done =
      state_->cv.wait_for(lock, std::chrono::seconds(2), [this] { return !state_->running; });
  lock.unlock();
  if (!thread_.joinable()) return;
  if (done) {
    thread_.join();
  } else {
    JITSYM_LOG(kWarning, "debuginfod: a download is still in progress; not waiting for it");
    thread_.detach();  // it owns its share of the state
  }
}

std::optional<std::string> DebuginfodFetcher::Fetched(const std::string& build_id) {
  std::lock_guard lock(state_->mu);
  auto it = state_->entries.find(build_id);
  if (it == state_->entries.end() || it->second.path.empty()) return std::nullopt;
  return it->second.path;
}

void DebuginfodFetcher::Request(const std::string& build_id) {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  if (s.stop) return;
  if (s.entries.size() >= kMaxEntries && !s.entries.contains(build_id)) return;
  Entry& e = s.entries[build_id];
  const uint64_t now = MonotonicNowNs();
  if (!e.path.empty() || e.queued || (e.tried_ns != 0 && now - e.tried_ns < kRetryNs)) return;
  if (s.queue.size() >= kMaxQueued) return;
  e.queued = true;
  s.queue.push_back(build_id);
  if (!thread_.joinable()) {
    s.running = true;
    thread_ = std::thread(Run, state_);
  }
  s.cv.notify_all();
}

void DebuginfodFetcher::Run(std::shared_ptr<State> state) {
  State& s = *state;
  static const std::optional<Debuginfod> lib = LoadDebuginfod();
  debuginfod_client* client = lib ? lib->begin() : nullptr;
  if (lib && client == nullptr) {
    JITSYM_LOG(kWarning, "debuginfod: cannot create a client; no downloads");
  } else if (client != nullptr) {
    lib->set_user_data(client, &s);
    // Called during transfers: a non-zero return aborts, so shutdown does not wait on them.
    lib->set_progressfn(client, [](debuginfod_client* c, long, long) -> int {
      auto* st = static_cast<State*>(lib->get_user_data(c));
      std::lock_guard lock(st->mu);
      return st->stop ? 1 : 0;
    });
  }
  std::unique_lock lock(s.mu);
  while (client != nullptr) {
    s.cv.wait(lock, [&s] { return s.stop || !s.queue.empty(); });
    if (s.stop) break;
    const std::string id = s.queue.front();
    s.queue.pop_front();
    lock.unlock();
    char* path = nullptr;
    const uint64_t t0 = MonotonicNowNs();
    const int fd =
        lib->find_debuginfo(client, reinterpret_cast<const unsigned char*>(id.c_str()), 0, &path);
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
    Entry& e = s.entries[id];
    e.queued = false;
    e.tried_ns = MonotonicNowNs();
    e.path = found;
  }
  if (lock.owns_lock()) lock.unlock();
  if (client != nullptr) lib->end(client);
  lock.lock();
  s.running = false;
  s.cv.notify_all();
}

}  // namespace jitsym::native
