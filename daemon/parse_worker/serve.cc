#include "daemon/parse_worker/serve.h"

#include <unistd.h>

#include <algorithm>
#include <system_error>
#include <thread>

#include "daemon/util/thread_budget.h"

namespace jitsym::parse_worker {
namespace {

// Below this many distinct addresses a request is symbolized on one thread: starting another
// costs more than it saves.
constexpr size_t kMinParallelAddresses = 2048;

// Where a string's probe starts in a table of mask + 1 slots: by its bytes' address and size.
size_t FirstSlot(std::string_view s, size_t mask) {
  const uint64_t key = reinterpret_cast<uintptr_t>(s.data()) ^ (uint64_t{s.size()} << 48);
  return (key * 0x9e3779b97f4a7c15ull) >> 32 & mask;
}

}  // namespace

uint32_t StringIds::Table::Of(std::string_view s) {
  if (s.empty()) return 0;
  if (slots_.size() < 2 * by_id.size()) Grow();
  const size_t mask = slots_.size() - 1;
  for (size_t at = FirstSlot(s, mask);; at = (at + 1) & mask) {
    const uint32_t id = slots_[at];
    if (id == 0) {
      slots_[at] = static_cast<uint32_t>(by_id.size());
      by_id.push_back(s);
      return slots_[at];
    }
    if (by_id[id].data() == s.data() && by_id[id].size() == s.size()) return id;
  }
}

void StringIds::Table::Grow() {
  std::vector<uint32_t> slots(std::max<size_t>(1024, slots_.size() * 2));
  const size_t mask = slots.size() - 1;
  for (uint32_t id = 1; id < by_id.size(); ++id) {
    size_t at = FirstSlot(by_id[id], mask);
    while (slots[at] != 0) at = (at + 1) & mask;
    slots[at] = id;
  }
  slots_ = std::move(slots);
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

namespace {

// One distinct address's answer as a symbolizing thread leaves it: views into the module, its
// frames in that thread's list.
struct Found {
  bool found = false;
  std::string_view name, clone, missing;
  uint64_t start = 0, size = 0;
  uint32_t first_frame = 0, frame_count = 0;
};

}  // namespace

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
  // The addresses by virtual address: the tables are walked forward, and repeated addresses
  // (samples of one hot spot) are symbolized once.
  std::vector<std::pair<uint64_t, uint32_t>> order;  // (vaddr, position in the request)
  order.reserve(request.addrs.size());
  for (size_t i = 0; i < request.addrs.size(); ++i) {
    const std::optional<uint64_t> vaddr = request.file_offsets
                                              ? m->FileOffsetToAddress(request.addrs[i])
                                              : std::optional<uint64_t>(request.addrs[i]);
    if (vaddr) order.emplace_back(*vaddr, static_cast<uint32_t>(i));
  }
  std::sort(order.begin(), order.end());
  std::vector<uint64_t> vaddrs;
  vaddrs.reserve(order.size());
  for (const auto& [vaddr, i] : order) {
    if (vaddrs.empty() || vaddrs.back() != vaddr) vaddrs.push_back(vaddr);
  }
  ThreadBudget& threads = ThreadBudget::Process();
  if (threads.allowance() > 0 && m->unread_cus() >= 2 && vaddrs.size() >= 2) {
    // A first request over a large binary reads most of its units: together, on spare cores.
    const ThreadBudget::Grant extra = threads.Take(threads.allowance());
    m->Prefetch(vaddrs, extra.count());
  }
  std::vector<Found> found(vaddrs.size());
  std::vector<native::NativeFrame> frames[2];  // each half's
  auto symbolize = [&](size_t begin, size_t end, std::vector<native::NativeFrame>* out) {
    native::NativeAnswer n;
    for (size_t k = begin; k < end; ++k) {
      m->Symbolize(vaddrs[k], &n);
      if (!n.found) continue;
      const size_t count =
          request.all_frames ? n.frames.size() : std::min<size_t>(1, n.frames.size());
      found[k] = {true,
                  n.name,
                  n.clone,
                  n.missing,
                  n.start,
                  n.size,
                  static_cast<uint32_t>(out->size()),
                  static_cast<uint32_t>(count)};
      out->insert(out->end(), n.frames.begin(), n.frames.begin() + static_cast<ptrdiff_t>(count));
    }
  };
  // Warm, symbolizing is most of the work, and the module's tables are read-only once built:
  // two halves on two cores, when there are two.
  std::thread other;
  size_t mid = vaddrs.size();
  const ThreadBudget::Grant extra =
      vaddrs.size() >= kMinParallelAddresses ? threads.Take(1) : ThreadBudget::Grant();
  if (extra.count() > 0) {
    try {
      other = std::thread(symbolize, vaddrs.size() / 2, vaddrs.size(), &frames[1]);
      mid = vaddrs.size() / 2;
    } catch (const std::system_error&) {
      // No thread to be had: this one does it all.
    }
  }
  symbolize(0, mid, &frames[0]);
  if (other.joinable()) other.join();
  // Numbered once per distinct address; each answer then copies its address's.
  {
    std::lock_guard lock(ids.mu);
    StringIds::Table& strings = ids.For(native::FileVersionKey(request.st), m);
    // The daemon has ids below `known` of this very numbering: the rest are sent.
    const uint32_t known = request.strings_token == strings.token
                               ? std::clamp<uint32_t>(request.strings_known, 1,
                                                      static_cast<uint32_t>(strings.by_id.size()))
                               : 1;
    reply.frames.reserve(frames[0].size() + frames[1].size());
    std::vector<AddressAnswer> distinct(vaddrs.size());
    for (size_t k = 0; k < vaddrs.size(); ++k) {
      const Found& f = found[k];
      AddressAnswer& a = distinct[k];
      a.vaddr = vaddrs[k];
      a.state = f.found ? AddressAnswer::kFound : AddressAnswer::kMiss;
      if (!f.found) continue;
      a.name = strings.Of(f.name);
      a.clone = strings.Of(f.clone);
      a.missing = strings.Of(f.missing);
      a.start = f.start;
      a.size = f.size;
      a.first_frame = static_cast<uint32_t>(reply.frames.size());
      a.frame_count = f.frame_count;
      const native::NativeFrame* from = frames[k < mid ? 0 : 1].data() + f.first_frame;
      for (uint32_t j = 0; j < f.frame_count; ++j) {
        reply.frames.push_back(
            {strings.Of(from[j].name), strings.Of(from[j].file), from[j].line, from[j].column});
      }
    }
    size_t k = 0;
    for (const auto& [vaddr, i] : order) {
      if (vaddrs[k] != vaddr) ++k;
      reply.answers[i] = distinct[k];
    }
    reply.strings_token = strings.token;
    reply.strings_base = known;
    reply.strings.assign(strings.by_id.begin() + known, strings.by_id.end());
  }
  modules.Trim();
  return reply;
}

}  // namespace jitsym::parse_worker
