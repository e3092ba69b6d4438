// The compilation units of one module's DWARF, and when their tables are built. Open() reads only
// the CU DIEs' address ranges; a CU's tables (cu_tables.h) are built the first time an address
// falls in it, or ahead of time by Prefetch() on several threads at once, each with a libdw handle
// of its own (a Dwarf is not thread-safe).
//
// Thread safety: after Open(), every member is safe to call from several threads. A CU is claimed
// through an atomic state (unread -> building -> built), built under the mutex of the libdw handle
// used, and published through an atomic pointer: lookups in CUs already built never wait, and one
// CU is never built twice.
#ifndef JITSYM_DAEMON_NATIVE_CU_INDEX_H_
#define JITSYM_DAEMON_NATIVE_CU_INDEX_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/native/alt_file.h"
#include "daemon/native/cu_tables.h"
#include "daemon/native/string_pool.h"

typedef struct Dwarf Dwarf;

namespace jitsym::native {

class SplitUnits;

class CuIndex {
 public:
  CuIndex() = default;
  ~CuIndex();
  CuIndex(const CuIndex&) = delete;
  CuIndex& operator=(const CuIndex&) = delete;

  // Indexes the CUs of `dwarf`, which reads the file `fd` (named `file` in messages); both must
  // outlive this object. Called once, before any other member but UseAltFile.
  // `split`: where the skeletons' split units come from (split_units.h), or null (then none is
  // read); it too must outlive this object.
  void Open(Dwarf* dwarf, int fd, std::string file, SplitUnits* split = nullptr);
  // The dwz file the handles Prefetch makes read alt references from (alt_file.h); it must
  // outlive this object.
  void UseAltFile(AltFile* alt) { alt_ = alt; }
  // The module's demangling budget (demangle.h), charged by every handle; it must outlive this
  // object.
  void UseDemangleBudget(DemangleBudget* budget) {
    demangle_budget_ = budget;
    main_handle_.demangled.budget = budget;
  }

  // The CU whose ranges cover addr, or -1. On the lookup path of every native frame: inline.
  int64_t CuOf(uint64_t addr) const {
    if (ranges_.empty()) return -1;
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                               [](uint64_t a, const CuRange& r) { return a < r.lo; });
    // CU ranges may nest or overlap (rarely): look back a little for one that covers addr.
    for (int k = 0; k < 8 && it != ranges_.begin(); ++k) {
      --it;
      if (addr < it->hi) return it->cu;
    }
    return -1;
  }

  // The tables of a CU, built now if nobody has yet (waiting if another thread is building
  // them); nullptr when libdw cannot read the CU.
  const CuTables* Tables(uint32_t cu) {
    const Cu& c = cus_[cu];
    if (c.state.load(std::memory_order_acquire) == kBuilt) {
      return c.tables.load(std::memory_order_acquire);
    }
    return TablesSlow(cu);
  }

  // Builds the tables of the unread CUs that `addrs` fall in, on this thread and up to
  // `extra_threads` more, each with a libdw handle over the file opened for the occasion and
  // closed after (the tables own their strings). Returns when they are built.
  void Prefetch(const std::vector<uint64_t>& addrs, unsigned extra_threads);

  // CUs not read yet (nor being read).
  size_t unread() const { return unread_.load(std::memory_order_relaxed); }
  // Bytes of the index itself, and of the tables built so far.
  size_t IndexBytes() const { return ranges_.capacity() * sizeof(CuRange) + count_ * sizeof(Cu); }
  size_t TablesBytes() const {
    return tables_bytes_.load(std::memory_order_relaxed) + strings_.Bytes();
  }

 private:
  struct CuRange {
    uint64_t lo, hi;
    uint32_t cu;
  };
  enum CuState : uint8_t { kUnread, kBuilding, kBuilt };
  struct Cu {
    uint64_t die_offset;  // of the CU DIE
    std::atomic<uint8_t> state{kUnread};
    std::atomic<const CuTables*> tables{nullptr};  // null when built and unreadable
  };
  // A libdw handle and what building tables with it caches. Only one thread uses it at a time.
  struct DwarfHandle {
    Dwarf* dwarf = nullptr;
    std::mutex mu;
    DemangledNames demangled;
  };

  const CuTables* TablesSlow(uint32_t cu);
  // Builds a CU this thread has claimed (kUnread -> kBuilding) and publishes it.
  const CuTables* Build(uint32_t cu, DwarfHandle& handle);

  std::string file_;
  SplitUnits* split_ = nullptr;
  AltFile* alt_ = nullptr;
  DemangleBudget* demangle_budget_ = nullptr;
  int fd_ = -1;  // the file main_handle_ reads, for Prefetch's handles
  std::unique_ptr<Cu[]> cus_;
  size_t count_ = 0;
  std::vector<CuRange> ranges_;  // sorted by lo
  DwarfHandle main_handle_;
  std::mutex built_mu_;  // with built_cv_: waiting for a CU another thread builds
  std::condition_variable built_cv_;
  std::atomic<size_t> unread_{0};
  std::atomic<bool> told_missing_{false};  // a missing split part was logged (once per module)
  std::atomic<size_t> tables_bytes_{0};
  StringPool strings_;  // every CU's names and paths, each text once
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_CU_INDEX_H_
