// Which CU covers an address, and building CU tables lazily or in parallel (cu_index.h).
#include "daemon/native/cu_index.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>

#include <algorithm>
#include <system_error>
#include <thread>

#include "daemon/native/elf_file.h"
#include "daemon/native/split_units.h"
#include "daemon/util/log.h"

namespace jitsym::native {

CuIndex::~CuIndex() {
  for (size_t i = 0; i < count_; ++i) delete cus_[i].tables.load();
}

void CuIndex::Open(Dwarf* dwarf, int fd, std::string file, SplitUnits* split) {
  file_ = std::move(file);
  split_ = split;
  fd_ = fd;
  main_handle_.dwarf = dwarf;
  std::vector<uint64_t> offsets;
  Dwarf_CU* cu = nullptr;
  Dwarf_CU* next = nullptr;
  Dwarf_Half version;
  uint8_t unit_type;
  Dwarf_Die cudie;
  // No sub-DIE asked for: with one, libdw opens the split unit of every skeleton itself (a .dwo
  // named by the file, unchecked: a FIFO there blocks the thread forever, a file its owner
  // truncates while mapped raises SIGBUS). A skeleton's split unit is looked for when its
  // tables are built, from a checked copy (split_units.h).
  while (dwarf_get_units(dwarf, cu, &next, &version, &unit_type, &cudie, nullptr) == 0) {
    cu = next;
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial && unit_type != DW_UT_skeleton) {
      continue;
    }
    if (offsets.size() >= (1u << 24)) break;
    const uint32_t index = static_cast<uint32_t>(offsets.size());
    offsets.push_back(dwarf_dieoffset(&cudie));
    Dwarf_Addr base, start, end;
    ptrdiff_t off = 0;
    int guard = 0;
    while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0 && ++guard < (1 << 20)) {
      if (end > start) ranges_.push_back({start, end, index});
    }
  }
  count_ = offsets.size();
  unread_ = count_;
  cus_ = std::make_unique<Cu[]>(count_);
  for (size_t i = 0; i < count_; ++i) cus_[i].die_offset = offsets[i];
  std::sort(ranges_.begin(), ranges_.end(),
            [](const CuRange& a, const CuRange& b) { return a.lo < b.lo; });
  ranges_.shrink_to_fit();
}

const CuTables* CuIndex::TablesSlow(uint32_t cu) {
  Cu& c = cus_[cu];
  uint8_t expected = kUnread;
  if (c.state.compare_exchange_strong(expected, kBuilding, std::memory_order_acq_rel)) {
    return Build(cu, main_handle_);
  }
  // Built meanwhile, or being built by another thread: wait for it.
  std::unique_lock lock(built_mu_);
  built_cv_.wait(lock, [&] { return c.state.load(std::memory_order_acquire) == kBuilt; });
  return c.tables.load(std::memory_order_acquire);
}

const CuTables* CuIndex::Build(uint32_t cu, DwarfHandle& handle) {
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
    std::unique_ptr<CuTables> built;
    {
      std::lock_guard lock(handle.mu);
      built =
          BuildCuTables(handle.dwarf, c.die_offset, file_, split_, &handle.demangled, &strings_);
      if (demangle_budget_ && demangle_budget_->TakeExhaustedReport()) {
        JITSYM_LOG(kWarning, "native: ", file_, ": ", demangle_budget_->Describe(),
                   "; later names of this file stay mangled");
      }
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
  // One handle per extra thread, over the same file (the pages are shared), gone afterwards.
  struct ExtraHandle {
    Elf* elf = nullptr;
    MappingGuard guard;
    DwarfHandle handle;
    AltDwarf alt;  // ended after handle.dwarf
    ~ExtraHandle() {
      if (handle.dwarf != nullptr) dwarf_end(handle.dwarf);
      guard.Release();
      if (elf != nullptr) elf_end(elf);
    }
  };
  const size_t n = std::min<size_t>(extra_threads, todo.size() - 1);
  std::vector<std::unique_ptr<ExtraHandle>> extra;
  for (size_t i = 0; i < n; ++i) {
    auto h = std::make_unique<ExtraHandle>();
    h->elf = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
    h->guard = GuardMapping(h->elf, file_);
    if (h->guard.registered()) h->handle.dwarf = dwarf_begin_elf(h->elf, DWARF_C_READ, nullptr);
    if (h->handle.dwarf == nullptr) break;
    h->handle.demangled.budget = demangle_budget_;
    if (alt_ != nullptr) h->alt = alt_->Attach(h->handle.dwarf);
    extra.push_back(std::move(h));
  }
  if (extra.empty()) return;
  std::atomic<size_t> next{0};
  auto work = [&](DwarfHandle& handle) {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < todo.size();) {
      uint8_t expected = kUnread;
      if (cus_[todo[i]].state.compare_exchange_strong(expected, kBuilding,
                                                      std::memory_order_acq_rel)) {
        Build(todo[i], handle);
      }
    }
  };
  std::vector<std::thread> threads;
  for (auto& h : extra) {
    try {
      threads.emplace_back([&work, &h] {
        try {
          work(h->handle);
        } catch (...) {
          // Out of memory: this thread stops; what it did not claim is read lazily.
        }
      });
    } catch (const std::system_error&) {
      break;  // no thread: this one does it all
    }
  }
  try {
    work(main_handle_);
  } catch (...) {
    for (std::thread& t : threads) t.join();
    throw;
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace jitsym::native
