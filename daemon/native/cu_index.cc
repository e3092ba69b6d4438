// Which CU covers an address, and building CU tables lazily or in parallel (cu_index.h).
#include "daemon/native/cu_index.h"

#include <algorithm>
#include <optional>
#include <system_error>
#include <thread>

#include "daemon/dwarf/aranges.h"
#include "daemon/dwarf/constants.h"
#include "daemon/dwarf/unit.h"
#include "daemon/dwarf/unit_symbols.h"
#include "daemon/native/split_units.h"
#include "daemon/util/log.h"

namespace jitsym::native {

CuIndex::~CuIndex() {
  for (size_t i = 0; i < count_; ++i) delete cus_[i].tables.load();
}

void CuIndex::Open(const dwarf::Context* context, dwarf::Budget* budget, std::string file,
                   UnitRangesFrom from) {
  file_ = std::move(file);
  context_ = context;
  budget_ = budget;
  // The units' ranges from .debug_aranges where a set lists them: no unit DIE, no abbreviation
  // table read (most of an open of a large module otherwise). A DWARF 4 unit may be a GNU
  // skeleton, known only from its DIE: when the file has .debug_addr (which such skeletons'
  // split units need), DWARF 4 units are read from their DIEs.
  dwarf::Aranges aranges;
  std::vector<const dwarf::ArangeSet*> sets;  // sorted by info_offset
  if (from == UnitRangesFrom::kArangesWhereListed) {
    aranges = dwarf::ReadAranges(context->section(dwarf::SectionId::kAranges), context->order());
    if (aranges.first_error) {
      JITSYM_LOG(kWarning, file_, ": ", aranges.first_error->message, " (", aranges.bad_sets,
                 " set(s) not read); those units' ranges are read from their DIEs");
    }
    for (const dwarf::ArangeSet& set : aranges.sets) sets.push_back(&set);
    std::stable_sort(sets.begin(), sets.end(),
                     [](const auto* a, const auto* b) { return a->info_offset < b->info_offset; });
  }
  const bool v4_may_be_skeletons = !context->section(dwarf::SectionId::kAddr).empty();
  auto listed = [&](const dwarf::UnitHeader& h) -> std::pair<size_t, size_t> {
    if (sets.empty() || h.in_types || h.unit_type != dwarf::DW_UT_compile ||
        (h.version < 5 && v4_may_be_skeletons)) {
      return {0, 0};
    }
    auto lo = std::lower_bound(sets.begin(), sets.end(), h.offset,
                               [](const auto* s, uint64_t o) { return s->info_offset < o; });
    auto hi = lo;
    while (hi != sets.end() && (*hi)->info_offset == h.offset &&
           (*hi)->address_size == h.address_size) {
      ++hi;
    }
    // A set of another address size than its unit's is not believed: the DIE says.
    if (hi != sets.end() && (*hi)->info_offset == h.offset) return {0, 0};
    return {static_cast<size_t>(lo - sets.begin()), static_cast<size_t>(hi - sets.begin())};
  };

  std::vector<uint32_t> headers;
  size_t unreadable = 0;
  std::string first_error;
  const std::vector<dwarf::UnitHeader>& units = context->units();
  for (size_t i = 0; i < units.size() && headers.size() < (1u << 24); ++i) {
    const dwarf::UnitHeader& h = units[i];
    if (h.unit_type != dwarf::DW_UT_compile && h.unit_type != dwarf::DW_UT_partial &&
        h.unit_type != dwarf::DW_UT_skeleton) {
      continue;
    }
    const uint32_t index = static_cast<uint32_t>(headers.size());
    if (auto [first, last] = listed(h); first != last) {
      headers.push_back(static_cast<uint32_t>(i));
      ++units_from_aranges_;
      for (size_t k = first; k < last; ++k) {
        for (uint32_t j = 0; j < sets[k]->count; ++j) {
          const dwarf::AddressRange& r = aranges.ranges[sets[k]->first + j];
          ranges_.push_back({r.lo, r.hi, index});
        }
      }
      continue;
    }
    // The unit DIE alone: its ranges say which addresses the unit covers. A skeleton's split
    // unit is looked for when its tables are built.
    Result<dwarf::Unit> unit = dwarf::Unit::Open(*context, h, *budget, nullptr, true);
    if (!unit) {
      if (unreadable++ == 0) first_error = unit.error().message;
      continue;
    }
    has_skeletons_ = has_skeletons_ || unit->unit_type() == dwarf::DW_UT_skeleton;
    headers.push_back(static_cast<uint32_t>(i));
    for (const dwarf::AddressRange& r : unit->unit_ranges()) {
      if (r.hi > r.lo) ranges_.push_back({r.lo, r.hi, index});
    }
  }
  for (const Error& e : context->list_errors()) {
    JITSYM_LOG(kWarning, file_, ": ", e.message, "; the units after it are not read");
  }
  if (const Error* e = context->index_error()) {
    JITSYM_LOG(kWarning, file_, ": ", e->message, "; the package's units are not read");
  }
  if (unreadable != 0) {
    JITSYM_LOG(kWarning, file_, ": ", unreadable,
               " compilation unit(s) not read (the first: ", first_error, ")");
  }
  count_ = headers.size();
  unread_ = count_;
  cus_ = std::make_unique<Cu[]>(count_);
  for (size_t i = 0; i < count_; ++i) cus_[i].header = headers[i];
  std::sort(ranges_.begin(), ranges_.end(),
            [](const CuRange& a, const CuRange& b) { return a.lo < b.lo; });
  ranges_.shrink_to_fit();
}

const CuTables* CuIndex::TablesSlow(uint32_t cu) {
  Cu& c = cus_[cu];
  uint8_t expected = kUnread;
  if (c.state.compare_exchange_strong(expected, kBuilding, std::memory_order_acq_rel)) {
    std::lock_guard lock(main_mu_);
    return Build(cu, main_names_);
  }
  // Built meanwhile, or being built by another thread: wait for it.
  std::unique_lock lock(built_mu_);
  built_cv_.wait(lock, [&] { return c.state.load(std::memory_order_acquire) == kBuilt; });
  return c.tables.load(std::memory_order_acquire);
}

std::unique_ptr<CuTables> CuIndex::Read(uint32_t cu, DemangledNames& names) {
  const dwarf::UnitHeader& h = context_->units()[cus_[cu].header];
  Result<dwarf::Unit> unit = dwarf::Unit::Open(*context_, h, *budget_);
  if (!unit) {
    JITSYM_LOG(kWarning, file_, ": CU at offset ", h.offset, ": ", unit.error().message);
    return nullptr;
  }
  // A skeleton's DIEs are its split unit's; its line table (and, through the skeleton, its
  // addresses) are the skeleton's. Without the split unit, the skeleton's line table still
  // places addresses, and the symbol table names their functions.
  std::optional<dwarf::Unit> split;
  std::string missing;
  if (unit->unit_type() == dwarf::DW_UT_skeleton) {
    if (split_ != nullptr) {
      SplitUnit s = split_->Find(*unit);
      if (s.unit) {
        split = std::move(*s.unit);
      } else {
        missing = std::move(s.missing);
      }
    } else {
      missing = file_ + ": split units not read (see the log)";
    }
  }
  Result<dwarf::UnitSymbols> symbols = dwarf::ReadUnitSymbols(split ? *split : *unit, *budget_);
  if (!symbols) {
    JITSYM_LOG(kWarning, file_, ": CU at offset ", h.offset, ": ", symbols.error().message);
    return nullptr;
  }
  if (symbols->problems != 0 && !symbols->notes.empty() && !told_problem_.exchange(true)) {
    JITSYM_LOG(kWarning, file_, ": CU at offset ", h.offset, ": ", symbols->problems,
               " part(s) not read (the first: ", symbols->notes.front().message,
               "); later ones in this module are not logged");
  }
  return BuildCuTables(*symbols, unit->comp_dir(), std::move(missing), &names, &strings_);
}

const CuTables* CuIndex::Build(uint32_t cu, DemangledNames& names) {
  unread_.fetch_sub(1, std::memory_order_relaxed);
  Cu& c = cus_[cu];
  const CuTables* t = nullptr;
  auto publish = [&] {
    c.tables.store(t, std::memory_order_release);
    {
      std::lock_guard lock(built_mu_);
      c.state.store(kBuilt, std::memory_order_release);
    }
    built_cv_.notify_all();
  };
  try {
    std::unique_ptr<CuTables> built = Read(cu, names);
    if (demangle_budget_ && demangle_budget_->TakeExhaustedReport()) {
      JITSYM_LOG(kWarning, "native: ", file_, ": ", demangle_budget_->Describe(),
                 "; later names of this file stay mangled");
    }
    if (built && !built->missing.empty() && !told_missing_.exchange(true)) {
      JITSYM_LOG(kWarning, file_, ": split DWARF missing: ", built->missing,
                 "; no inlined frames there (further missing parts of this module are not "
                 "logged)");
    }
    if (built) {
      tables_bytes_.fetch_add(built->Bytes(), std::memory_order_relaxed);
      t = built.release();
    }
  } catch (...) {
    publish();  // as unreadable: nobody may wait for it forever
    throw;
  }
  publish();
  return t;
}

void CuIndex::Prefetch(const std::vector<uint64_t>& addrs, unsigned extra_threads) {
  if (extra_threads == 0 || unread() < 2) return;
  std::vector<uint32_t> todo;
  std::vector<bool> seen(count_);
  for (uint64_t addr : addrs) {
    const int64_t cu = CuOf(addr);
    if (cu < 0 || seen[cu]) continue;
    seen[cu] = true;
    if (cus_[cu].state.load(std::memory_order_acquire) == kUnread) {
      todo.push_back(static_cast<uint32_t>(cu));
    }
  }
  if (todo.size() < 2) return;
  const size_t n = std::min<size_t>(extra_threads, todo.size() - 1);
  std::atomic<size_t> next{0};
  auto work = [&](DemangledNames& names) {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < todo.size();) {
      uint8_t expected = kUnread;
      if (cus_[todo[i]].state.compare_exchange_strong(expected, kBuilding,
                                                      std::memory_order_acq_rel)) {
        Build(todo[i], names);
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    try {
      threads.emplace_back([&work, this] {
        try {
          DemangledNames names;
          names.budget = demangle_budget_;
          work(names);
        } catch (...) {
          // Out of memory: this thread stops; what it did not claim is read lazily.
        }
      });
    } catch (const std::system_error&) {
      break;  // no thread: this one does it all
    }
  }
  try {
    DemangledNames names;
    names.budget = demangle_budget_;
    work(names);
  } catch (...) {
    for (std::thread& t : threads) t.join();
    throw;
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace jitsym::native
