#include "daemon/native/module_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "daemon/native/file_ops.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

constexpr uint64_t kRetryNs = 1000000000ull;
constexpr size_t kMaxSlots = 4096;

}  // namespace

std::string FileVersionKey(const struct stat& st) {
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec);
}

ModuleCache::ModuleCache(Options options) : options_(std::move(options)) {
  debuginfod_ = options_.debuginfod;
  if (!debuginfod_ && DebuginfodFetcher::Configured()) {
    fetcher_ = std::make_unique<DebuginfodFetcher>();
    debuginfod_ = [f = fetcher_.get()](const std::string& id) {
      std::optional<std::string> path = f->Fetched(id);
      if (!path) f->Request(id);
      return path;
    };
  }
}

std::shared_ptr<ModuleCache::Slot> ModuleCache::SlotFor(const std::string& key) {
  std::lock_guard lock(mu_);
  auto& slot = slots_[key];
  if (!slot) slot = std::make_shared<Slot>();
  return slot;
}

std::shared_ptr<NativeModule> ModuleCache::GetByPath(const std::string& path, std::string* error,
                                                     std::optional<FileId> expect) {
  struct stat st {};
  bool served = false;
  if (!Files().stat(path, true, &st, &served)) {
    *error = path + ": " + std::strerror(errno);
    return nullptr;
  }
  if (expect && (st.st_dev != expect->dev || st.st_ino != expect->ino)) {
    *error = path + ": replaced while being opened";
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    return nullptr;
  }
  std::shared_ptr<Slot> slot = SlotFor(FileVersionKey(st));
  std::lock_guard lock(slot->mu);  // only the queries needing this very file wait for its load
  slot->last_used.store(++clock_, std::memory_order_relaxed);
  if (slot->module && slot->module->damaged()) {
    // One of its files shrank under its mapping (that fault was logged): what it reads now is
    // zeros, so it is opened again, and says what it cannot read any more.
    JITSYM_LOG(kWarning, "native: ", path, ": opened again: a file it maps shrank");
    if (!Load(path, slot.get())) {
      *error = slot->error;
      return nullptr;
    }
  }
  if (slot->module) {
    // A debug file debuginfod fetched since the module was opened without DWARF: reopen.
    const NativeModule& m = *slot->module;
    if (debuginfod_ && !m.has_dwarf() && !m.build_id().empty()) {
      std::optional<std::string> fetched = debuginfod_(m.build_id());
      if (fetched && *fetched != slot->fetched) {
        auto old = slot->module;
        if (!Load(path, slot.get())) slot->module = old;
      }
    }
    return slot->module;
  }
  const uint64_t now = MonotonicNowNs();
  if (!slot->error.empty() && now - slot->checked_ns < kRetryNs) {
    *error = slot->error;
    return nullptr;
  }
  slot->checked_ns = now;
  if (!Load(path, slot.get())) {
    *error = slot->error;
    return nullptr;
  }
  return slot->module;
}

bool ModuleCache::Load(const std::string& path, Slot* slot) {
  DebugSearch search;
  search.debug_dirs = options_.debug_dirs;
  search.inflate_bytes = options_.inflate_bytes;
  if (debuginfod_ && !slot->fetched.empty()) search.extra_files.push_back(slot->fetched);
  const uint64_t t0 = MonotonicNowNs();
  slot->module = NativeModule::Open(path, search, &slot->error);
  if (!slot->module) {
    JITSYM_LOG(kInfo, "native: ", slot->error);
    return false;
  }
  if (debuginfod_ && !slot->module->has_dwarf() && !slot->module->build_id().empty()) {
    const std::string& id = slot->module->build_id();
    if (std::optional<std::string> fetched = debuginfod_(id)) {
      slot->fetched = *fetched;
      search.extra_files = {*fetched};
      if (auto m = NativeModule::Open(path, search, &slot->error)) slot->module = std::move(m);
    }
  }
  slot->error.clear();
  const NativeModule& m = *slot->module;
  JITSYM_LOG(kInfo, "native: opened ", path, " (build-id ",
             m.build_id().empty() ? "none" : m.build_id(), ", ", m.symbol_count(), " symbols, ",
             m.has_dwarf() ? "DWARF from " + m.debug_file() : std::string("no DWARF"),
             m.dwp_file().empty() ? std::string() : ", split units from " + m.dwp_file(), ") in ",
             (MonotonicNowNs() - t0) / 1000000, " ms");
  return true;
}

size_t ModuleCache::Bytes() {
  std::lock_guard lock(mu_);
  std::set<const NativeModule*> seen;
  size_t total = 0;
  for (const auto& [key, slot] : slots_) {
    // A slot's lock is held while its module loads (and that load takes mu_): never wait for it.
    std::unique_lock slot_lock(slot->mu, std::try_to_lock);
    if (slot_lock.owns_lock() && slot->module && seen.insert(slot->module.get()).second)
      total += slot->module->Bytes();
  }
  return total;
}

size_t ModuleCache::Modules() {
  std::lock_guard lock(mu_);
  return slots_.size();
}

void ModuleCache::Trim() {
  std::vector<std::pair<uint64_t, std::string>> order;
  size_t total = 0;
  std::lock_guard lock(mu_);
  for (const auto& [key, slot] : slots_) {
    std::unique_lock slot_lock(slot->mu, std::try_to_lock);
    if (!slot_lock.owns_lock()) continue;  // loading: not a candidate now
    if (slot->module) total += slot->module->Bytes();
    order.emplace_back(slot->last_used.load(std::memory_order_relaxed), key);
  }
  if (total <= options_.budget_bytes && slots_.size() <= kMaxSlots) return;
  std::sort(order.begin(), order.end());
  for (const auto& [used, key] : order) {
    if (total <= options_.budget_bytes && slots_.size() <= kMaxSlots) break;
    auto it = slots_.find(key);
    if (it == slots_.end()) continue;
    size_t bytes = 0;
    {
      std::unique_lock slot_lock(it->second->mu, std::try_to_lock);
      if (!slot_lock.owns_lock()) continue;
      if (it->second->module) bytes = it->second->module->Bytes();
    }
    JITSYM_LOG(kDebug, "native: dropping module ", key, " (", bytes, " bytes) over budget");
    slots_.erase(it);
    total -= std::min(total, bytes);
  }
}

}  // namespace jitsym::native
