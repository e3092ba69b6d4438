// The compilation units of one module's DWARF, and when their tables are built. Open() reads
// only the units' address ranges (from .debug_aranges, or from the unit DIEs); a unit's tables
// (cu_tables.h) are built the first time an address falls in it, or ahead of time by Prefetch() on
// several threads at once (the reader's Context is safe to share).
//
// Thread safety: after Open(), every member is safe to call from several threads. A CU is claimed
// through an atomic state (unread -> building -> built) and published through an atomic pointer:
// lookups in CUs already built never wait, and one CU is never built twice.
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

#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/context.h"
#include "daemon/native/cu_tables.h"
#include "daemon/native/string_pool.h"

namespace jitsym::native {

class SplitUnits;

class CuIndex {
 public:
  CuIndex() = default;
  ~CuIndex();
  CuIndex(const CuIndex&) = delete;
  CuIndex& operator=(const CuIndex&) = delete;

  // Where the units' address ranges come from: .debug_aranges for the units it lists (and
  // their unit DIEs for the others), or every unit's DIE (what the first is checked against).
  enum class UnitRangesFrom { kArangesWhereListed, kUnitDies };

  // Indexes the units of `context` (the file named `file` in messages), read within `budget`;
  // both must outlive this object. Called once, before any other member but
  // UseDemangleBudget and UseSplitUnits.
  void Open(const dwarf::Context* context, dwarf::Budget* budget, std::string file,
            UnitRangesFrom from = UnitRangesFrom::kArangesWhereListed);
  // Whether a unit is a skeleton (split DWARF: a DWARF 5 skeleton unit, or a DWARF 4 compile
  // unit naming a dwo id).
  bool has_skeletons() const { return has_skeletons_; }
  // Where the skeletons' split units come from (split_units.h); without it, none is read. Set
  // after Open and before any lookup; it must outlive this object.
  void UseSplitUnits(SplitUnits* split) { split_ = split; }
  // The module's demangling budget (demangle.h), charged by every build; it must outlive this
  // object.
  void UseDemangleBudget(DemangleBudget* budget) {
    demangle_budget_ = budget;
    main_names_.budget = budget;
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
  // them); nullptr when the CU cannot be read.
  const CuTables* Tables(uint32_t cu) {
    const Cu& c = cus_[cu];
    if (c.state.load(std::memory_order_acquire) == kBuilt) {
      return c.tables.load(std::memory_order_acquire);
    }
    return TablesSlow(cu);
  }

  // Builds the tables of the unread CUs that `addrs` fall in, on this thread and up to
  // `extra_threads` more. Returns when they are built.
  void Prefetch(const std::vector<uint64_t>& addrs, unsigned extra_threads);

  // The offset of a CU's unit in its section (for messages and tests).
  uint64_t UnitOffset(uint32_t cu) const { return context_->units()[cus_[cu].header].offset; }
  // Units whose ranges came from .debug_aranges (the others' from their unit DIEs).
  size_t units_from_aranges() const { return units_from_aranges_; }

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
    uint32_t header;  // index into the context's units()
    std::atomic<uint8_t> state{kUnread};
    std::atomic<const CuTables*> tables{nullptr};  // null when built and unreadable
  };

  const CuTables* TablesSlow(uint32_t cu);
  // Builds a CU this thread has claimed (kUnread -> kBuilding) and publishes it; `names`: the
  // demangled names this thread keeps.
  const CuTables* Build(uint32_t cu, DemangledNames& names);
  std::unique_ptr<CuTables> Read(uint32_t cu, DemangledNames& names);

  std::string file_;
  const dwarf::Context* context_ = nullptr;
  dwarf::Budget* budget_ = nullptr;
  SplitUnits* split_ = nullptr;
  bool has_skeletons_ = false;
  size_t units_from_aranges_ = 0;
  DemangleBudget* demangle_budget_ = nullptr;
  std::unique_ptr<Cu[]> cus_;
  size_t count_ = 0;
  std::vector<CuRange> ranges_;  // sorted by lo
  std::mutex main_mu_;           // lazy builds, one at a time, share main_names_
  DemangledNames main_names_;
  std::mutex built_mu_;  // with built_cv_: waiting for a CU another thread builds
  std::condition_variable built_cv_;
  std::atomic<size_t> unread_{0};
  std::atomic<bool> told_missing_{false};  // a missing split part was logged (once per module)
  std::atomic<bool> told_problem_{false};  // a unit read with gaps or not at all was logged
  std::atomic<size_t> tables_bytes_{0};
  StringPool strings_;  // every CU's names and paths, each text once
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_CU_INDEX_H_
