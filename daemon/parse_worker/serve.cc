#include "daemon/parse_worker/serve.h"

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

// The reply's string table: names and files repeat across answers, and each is a view into
// the module's tables, so the view's address identifies it.
class Strings {
 public:
  explicit Strings(std::vector<std::string>* table) : table_(table) {}
  uint32_t Of(std::string_view s) {
    if (s.empty()) return 0;
    auto [it, inserted] = index_.try_emplace(Key{s.data(), s.size()}, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(table_->size());
      table_->emplace_back(s);
    }
    return it->second;
  }

 private:
  struct Key {
    const char* data;
    size_t size;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.data) ^ (k.size * 0x9e3779b97f4a7c15ull);
    }
  };
  std::vector<std::string>* table_;
  std::unordered_map<Key, uint32_t, Hash> index_;
};

}  // namespace

SymbolizeReply ServeSymbolize(native::ModuleCache& modules, const SymbolizeRequest& request) {
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
  Strings strings(&reply.strings);
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
  modules.Trim();
  return reply;
}

}  // namespace jitsym::parse_worker
