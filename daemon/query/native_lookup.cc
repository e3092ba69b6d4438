#include "daemon/query/native_lookup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "daemon/os/guarded_fs.h"
#include "daemon/os/mounts.h"
#include "daemon/os/process_maps.h"
#include "daemon/query/native_files.h"
#include "daemon/util/log.h"
#include "daemon/util/thread_budget.h"

namespace jitsym::query {
namespace {

native::ModuleCache::Options CacheOptions(const NativeOptions& o) {
  native::ModuleCache::Options c;
  c.debug_dirs = o.debug_dirs;
  c.budget_bytes = o.cache_bytes;
  return c;
}

// The answer for one address. `addr` is the address asked for and `vaddr` the ELF virtual
// address it stands for: start is reported in the caller's address space. Name, file and
// frames are borrowed from the module and `image` is borrowed too (the response keeps both
// alive).
Answer FromModule(const native::NativeModule& m, const native::NativeAnswer& a,
                  std::string_view image, uint64_t addr, uint64_t vaddr) {
  static constexpr std::string_view kUnknown = "??";
  Answer r;
  r.name = a.name.empty() ? kUnknown : a.name;
  r.start = addr - (vaddr - a.start);
  r.size = a.size;
  r.origin = proto::Origin::kElf;
  r.image = image;
  r.build_id = m.build_id();
  r.frames = a.frames;
  r.clone = a.clone;
  if (!a.missing.empty()) {
    r.reason = proto::Reason::kNoDebugInfo;
    r.detail = a.missing;
  }
  if (!a.frames.empty() && !a.frames.front().file.empty()) {
    r.file = a.frames.front().file;
    r.line = a.frames.front().line;
    r.column = a.frames.front().column;
  }
  return r;
}

// Why a module answers nothing for an address: a stripped file has only its dynamic symbols
// (if any), so most of its code has no name to give.
proto::Reason MissReasonOf(const native::NativeModule& m) {
  return m.stripped() ? proto::Reason::kNoDebugInfo : proto::Reason::kNoSymbol;
}

// Where a miss was, for its detail: the file, and why its DWARF was not read if it was not.
std::string WhereOf(const native::NativeModule& m, const std::string& path) {
  return m.dwarf_refusal().empty() ? path : path + " (" + m.dwarf_refusal() + ")";
}

// A first batch over a large binary reads most of its CUs, and a big batch is symbolized in
// halves: on extra threads when the process-wide budget has some left (each extra thread
// reads units of its own while it runs), on the request's own thread otherwise.
ThreadBudget::Grant ExtraThreads(size_t wanted) { return ThreadBudget::Process().Take(wanted); }

// Below this many addresses a batch is symbolized on one thread: starting another costs more
// than it saves.
constexpr size_t kMinParallelAddresses = 2048;

// Whether a batch should collect its addresses for Prefetch: not once the module is read (the
// common case, which then costs nothing), nor without a core to spare.
bool WorthPrefetching(const native::NativeModule& m) {
  return ThreadBudget::Process().allowance() > 0 && m.unread_cus() >= 2;
}

}  // namespace

NativeLookup::NativeLookup(NativeOptions options, ProcessSnapshots& processes)
    : modules_(CacheOptions(options)), processes_(processes) {
  // native/ opens what mappings and debug links name: never on a query thread when it lies
  // on a FUSE mount (a worker copies it).
  InstallGuardedNativeFiles();
}

bool NativeLookup::IsNativeImageRequest(const proto::LookupRequest& request,
                                        const security::WalkedPath* walked) {
  if (request.build_id) return true;
  if (walked == nullptr || !walked->regular) return false;
  auto opened = os::OpenForReading(walked->resolved,
                                   O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
  if (!opened || opened->error != 0) return false;
  const struct stat& st = opened->st;
  int fd = opened->fd.get();
  if (opened->mirror) {
    // On a FUSE mount: its first bytes, copied by a worker.
    if (!opened->mirror->Copy(0, 0, 4).ok()) return false;
    fd = opened->mirror->fd();
  }
  char magic[4] = {};
  return S_ISREG(st.st_mode) && st.st_dev == walked->dev && st.st_ino == walked->ino &&
         ::pread(fd, magic, 4, 0) == 4 && std::memcmp(magic, "\177ELF", 4) == 0;
}

std::optional<proto::ErrorResponse> NativeLookup::LookupImage(LookupBatch& batch,
                                                              const security::WalkedPath* walked) {
  if (!batch.AllowsOrigin(proto::Origin::kElf)) return std::nullopt;
  const proto::LookupRequest& request = batch.request();
  std::string error;
  std::shared_ptr<native::NativeModule> m;
  std::string id = request.build_id.value_or("");
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (walked != nullptr) {
    // A path the peer may read (checked by the caller): that very file, found by the walk,
    // and maybe the build id it must have.
    m = modules_.GetByPath(walked->resolved, &error, native::FileId{walked->dev, walked->ino});
    if (m && request.build_id && m->build_id() != id) {
      return proto::ErrorResponse{std::string(proto::kErrNotFound),
                                  *request.image + " does not have build id " + id};
    }
  } else {
    // Only files the peer could read itself are candidates; one it may not read is answered
    // exactly as a build id no file has, and no path is named.
    m = modules_.GetByBuildId(id, batch.access().uid(), &error, [&](const std::string& path) {
      return batch.access().MayRead(path);
    });
  }
  if (!m) return proto::ErrorResponse{std::string(proto::kErrNotFound), error};
  batch.Keep(m);
  // Borrowed by every answer: kept with the response, since the request may not outlive it.
  auto image = std::make_shared<const std::string>(request.image ? *request.image : m->path());
  batch.Keep(image);
  // Symbolized in address order: consecutive lookups then walk the tables forward (and stay in
  // cache), and repeated addresses (samples of one hot spot) are symbolized once.
  std::vector<std::pair<uint64_t, size_t>> order;  // (virtual address, index)
  order.reserve(batch.pending().size());
  for (size_t i : batch.pending()) {
    std::optional<uint64_t> vaddr = batch.addr(i);
    if (request.file_offset) vaddr = m->FileOffsetToAddress(batch.addr(i));
    if (vaddr) order.emplace_back(*vaddr, i);
  }
  std::sort(order.begin(), order.end());
  if (WorthPrefetching(*m) && order.size() >= 2) {
    std::vector<uint64_t> vaddrs(order.size());
    for (size_t k = 0; k < order.size(); ++k) vaddrs[k] = order[k].first;
    const ThreadBudget::Grant extra = ExtraThreads(ThreadBudget::Process().allowance());
    m->Prefetch(vaddrs, extra.count());
  }
  // Symbolizes order[begin, end); misses are noted after the threads are done (NoteMiss is not
  // thread-safe, Answer is for different addresses).
  auto symbolize = [&](size_t begin, size_t end, std::vector<size_t>* misses) {
    native::NativeAnswer answer;
    for (size_t k = begin; k < end; ++k) {
      const auto [vaddr, i] = order[k];
      if (k == begin || vaddr != order[k - 1].first) m->Symbolize(vaddr, &answer);
      if (answer.found) {
        batch.Answer(i, FromModule(*m, answer, *image, batch.addr(i), vaddr));
      } else {
        misses->push_back(i);
      }
    }
  };
  // A warm batch: symbolization is most of the daemon's work for it, and the module's tables
  // are read-only once built. Two halves on two cores, when there are two.
  std::vector<size_t> misses, more_misses;
  std::thread other;
  size_t mid = order.size();
  const ThreadBudget::Grant extra =
      order.size() >= kMinParallelAddresses ? ExtraThreads(1) : ThreadBudget::Grant();
  if (extra.count() > 0) {
    try {
      other = std::thread(symbolize, order.size() / 2, order.size(), &more_misses);
      mid = order.size() / 2;
    } catch (const std::system_error&) {
      // No thread to be had (a pids limit): this one does it all.
    }
  }
  symbolize(0, mid, &misses);
  if (other.joinable()) other.join();
  for (const auto* list : {&misses, &more_misses}) {
    for (size_t i : *list) batch.NoteMiss(i, MissReasonOf(*m), WhereOf(*m, *image));
  }
  modules_.Trim();
  return std::nullopt;
}

std::shared_ptr<native::NativeModule> NativeLookup::ModuleFor(uint32_t pid, const ExecMapping& m,
                                                              std::string* error, bool* gone) {
  *gone = false;
  const std::string path = os::MappedFilePath(pid, m.path, m.dev, m.inode, m.start, m.end);
  if (path.empty()) {
    *gone = true;
    *error = m.path +
             " no longer names the file the process mapped there (replaced or deleted "
             "since): not read";
    return nullptr;
  }
  return modules_.GetByPath(path, error);
}

std::optional<proto::ErrorResponse> NativeLookup::Resolve(LookupBatch& batch) {
  if (!batch.AllowsOrigin(proto::Origin::kElf)) return std::nullopt;
  const security::PeerAccess& access = batch.access();
  const uint32_t pid = batch.processes().LivePid();  // a thread's process
  std::vector<size_t> todo = batch.pending();
  if (todo.empty()) return std::nullopt;
  bool fresh = false;
  std::shared_ptr<const ProcessSnapshot> table = processes_.Current(pid, &fresh);
  if (!table || !access.MaySeeProcess(table->identity.uid)) return std::nullopt;
  batch.Keep(table);  // answers borrow the mapped files' paths
  std::unordered_map<const ExecMapping*, std::shared_ptr<native::NativeModule>> modules;
  // Why a module of a file on a FUSE mount could not be had (it is said in the answer).
  std::unordered_map<const ExecMapping*, std::string> unreadable;
  native::NativeAnswer answer;
  for (int pass = 0; pass < 2 && !todo.empty(); ++pass) {
    std::vector<size_t> misses;
    // In address order, as for images: the tables are walked forward.
    std::sort(todo.begin(), todo.end(),
              [&](size_t a, size_t b) { return batch.addr(a) < batch.addr(b); });
    // Each address to its module and virtual address first, so that each module's CUs not read
    // yet can be read together (Prefetch), then symbolized.
    struct Resolved {
      size_t i;
      native::NativeModule* module;
      const ExecMapping* map;
      uint64_t vaddr;
    };
    std::vector<Resolved> resolved;
    std::unordered_map<native::NativeModule*, std::vector<uint64_t>> vaddrs;
    for (size_t i : todo) {
      const uint64_t addr = batch.addr(i);
      auto next = std::upper_bound(table->exec.begin(), table->exec.end(), addr,
                                   [](uint64_t a, const ExecMapping& m) { return a < m.start; });
      if (next == table->exec.begin() || addr >= std::prev(next)->end) {
        misses.push_back(i);
        continue;
      }
      const ExecMapping& map = *std::prev(next);
      auto [it, inserted] = modules.try_emplace(&map);
      if (inserted) {
        std::string error;
        TakeUnanswered();
        bool gone = false;
        it->second = ModuleFor(pid, map, &error, &gone);
        if (it->second) {
          batch.Keep(it->second);
        } else if (std::string why = TakeUnanswered(); !why.empty()) {
          unreadable[&map] = map.path + ": not read: " + why;
        } else if (std::shared_ptr<const os::Mount> fs = os::MountOfDevice(map.dev, pid);
                   !fs || fs->guarded()) {
          // A guarded mount is not asked what it holds: whether the path still names the
          // mapped file is not known either.
          const os::Mount& m = fs ? *fs : os::UnlistedMount();
          unreadable[&map] = (gone ? map.path + ": not read" : error) + " (on " + m.Describe() +
                             ", " + m.guard_reason + ")";
        } else if (gone) {
          unreadable[&map] = error;
        }
      }
      if (!it->second) {
        if (auto u = unreadable.find(&map); u != unreadable.end()) {
          batch.NoteMiss(i, proto::Reason::kImageUnreadable, u->second);
        }
        continue;
      }
      const std::optional<uint64_t> vaddr =
          it->second->FileOffsetToAddress(addr - map.start + map.offset);
      if (!vaddr) continue;
      resolved.push_back({i, it->second.get(), &map, *vaddr});
      if (WorthPrefetching(*it->second)) vaddrs[it->second.get()].push_back(*vaddr);
    }
    for (const auto& [module, list] : vaddrs) {
      const ThreadBudget::Grant extra = ExtraThreads(ThreadBudget::Process().allowance());
      module->Prefetch(list, extra.count());
    }
    for (const Resolved& r : resolved) {
      r.module->Symbolize(r.vaddr, &answer);
      if (answer.found) {
        batch.Answer(r.i, FromModule(*r.module, answer, r.map->path, batch.addr(r.i), r.vaddr));
      } else {
        batch.NoteMiss(r.i, MissReasonOf(*r.module), WhereOf(*r.module, r.map->path));
      }
    }
    // Outside every executable mapping known: the process may have mapped more since.
    if (misses.empty() || fresh) break;
    std::shared_ptr<const ProcessSnapshot> again = processes_.Refreshed(pid, &fresh);
    if (!fresh || !again || !access.MaySeeProcess(again->identity.uid)) break;
    if (again->identity.start_ticks != table->identity.start_ticks) break;  // pid reused
    modules.clear();
    table = again;
    batch.Keep(table);
    todo.swap(misses);
  }
  modules_.Trim();
  return std::nullopt;
}

}  // namespace jitsym::query
