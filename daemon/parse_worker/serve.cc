#include "daemon/parse_worker/serve.h"

#include <unistd.h>

#include <algorithm>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "daemon/util/thread_budget.h"

namespace jitsym::parse_worker {
namespace {

// Below this many distinct addresses a request is symbolized on one thread: starting another
// costs more than it saves.
constexpr size_t kMinParallelAddresses = 2048;

}  // namespace

uint32_t StringIds::Table::Of(std::string_view s) {
  if (s.empty()) return 0;
  auto [it, inserted] = index.try_emplace(Key{s.data(), s.size()}, 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(by_id.size());
    by_id.push_back(s);
  }
  return it->second;
}

StringIds::Table& StringIds::For(const std::string& key,
                                 const std::shared_ptr<native::NativeModule>& m) {
  Table& t = tables_[key];
  if (t.module.lock() != m || t.token == 0) {
    t = Table{};
    t.module = m;
    t.token = (static_cast<uint64_t>(::getpid()) << 32) | next_++;
  }
  if (tables_.size() > 1024) {
    for (auto it = tables_.begin(); it != tables_.end();) {
      it = it->second.module.expired() ? tables_.erase(it) : std::next(it);
    }
  }
  return t;
}

SymbolizeReply ServeSymbolize(native::ModuleCache& modules, StringIds& ids,
                              const SymbolizeRequest& request) {
  SymbolizeReply reply;
  std::string error;
  std::shared_ptr<native::NativeModule> m =
      modules.GetByPath(request.path, &error, native::FileId{request.st.st_dev, request.st.st_ino});
  if (!m) {
    reply.error = error.empty() ? request.path + ": not read" : error;
    return reply;
  }
  reply.build_id = m->build_id();
  reply.stripped = m->stripped();
  reply.dwarf_refusal = m->dwarf_refusal();
  reply.answers.resize(request.addrs.size());
  // Distinct virtual addresses in order: the tables are walked forward, and repeated addresses
  // (samples of one hot spot) are symbolized once.
  std::vector<uint64_t> vaddrs;
  vaddrs.reserve(request.addrs.size());
  for (size_t i = 0; i < request.addrs.size(); ++i) {
    AddressAnswer& a = reply.answers[i];
    const std::optional<uint64_t> vaddr = request.file_offsets
                                              ? m->FileOffsetToAddress(request.addrs[i])
                                              : std::optional<uint64_t>(request.addrs[i]);
    if (!vaddr) continue;
    a.state = AddressAnswer::kMiss;
    a.vaddr = *vaddr;
    vaddrs.push_back(*vaddr);
  }
  std::sort(vaddrs.begin(), vaddrs.end());
  vaddrs.erase(std::unique(vaddrs.begin(), vaddrs.end()), vaddrs.end());
  ThreadBudget& threads = ThreadBudget::Process();
  if (threads.allowance() > 0 && m->unread_cus() >= 2 && vaddrs.size() >= 2) {
    // A first request over a large binary reads most of its units: together, on spare cores.
    const ThreadBudget::Grant extra = threads.Take(threads.allowance());
    m->Prefetch(vaddrs, extra.count());
  }
  std::vector<native::NativeAnswer> found(vaddrs.size());
  auto symbolize = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) m->Symbolize(vaddrs[k], &found[k]);
  };
  // Warm, symbolizing is most of the work, and the module's tables are read-only once built:
  // two halves on two cores, when there are two.
  std::thread other;
  size_t mid = vaddrs.size();
  const ThreadBudget::Grant extra =
      vaddrs.size() >= kMinParallelAddresses ? threads.Take(1) : ThreadBudget::Grant();
  if (extra.count() > 0) {
    try {
      other = std::thread(symbolize, vaddrs.size() / 2, vaddrs.size());
      mid = vaddrs.size() / 2;
    } catch (const std::system_error&) {
      // No thread to be had: this one does it all.
    }
  }
  symbolize(0, mid);
  if (other.joinable()) other.join();
  StringIds::Table& strings = ids.For(native::FileVersionKey(request.st), m);
  // The daemon has ids below `known` of this very numbering: the rest are sent.
  const uint32_t known = request.strings_token == strings.token
                             ? std::clamp<uint32_t>(request.strings_known, 1,
                                                    static_cast<uint32_t>(strings.by_id.size()))
                             : 1;
  for (AddressAnswer& a : reply.answers) {
    if (a.state == AddressAnswer::kUnmapped) continue;
    const size_t k = std::lower_bound(vaddrs.begin(), vaddrs.end(), a.vaddr) - vaddrs.begin();
    const native::NativeAnswer& n = found[k];
    if (!n.found) continue;
    a.state = AddressAnswer::kFound;
    a.name = strings.Of(n.name);
    a.clone = strings.Of(n.clone);
    a.missing = strings.Of(n.missing);
    a.start = n.start;
    a.size = n.size;
    a.frames.reserve(n.frames.size());
    for (const native::NativeFrame& f : n.frames) {
      a.frames.push_back({strings.Of(f.name), strings.Of(f.file), f.line, f.column});
    }
  }
  reply.strings_token = strings.token;
  reply.strings_base = known;
  reply.strings.assign(strings.by_id.begin() + known, strings.by_id.end());
  modules.Trim();
  return reply;
}

}  // namespace jitsym::parse_worker
