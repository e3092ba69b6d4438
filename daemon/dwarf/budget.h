// How much work reading one owner's DWARF may cost: bytes inflated from compressed sections and
// DIEs decoded. The caller makes one Budget from the owner's quota and hands it to every read of
// that owner's files; a read that would pass a limit stops with kLimit, naming the limit, and
// whatever was spent stays spent (a second attempt does not get the budget again).
//
// Every other cost of the reader is bounded by the input's size (docs/dwarf.md): the budget is
// for what is not, inflation, and for what the caller wants smaller than the input allows.
//
// Thread-safe: counters are atomic, so threads reading units of one module may share one.
#ifndef JITSYM_DAEMON_DWARF_BUDGET_H_
#define JITSYM_DAEMON_DWARF_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "daemon/util/result.h"

namespace jitsym::dwarf {

struct BudgetLimits {
  uint64_t inflated_bytes = uint64_t{1} << 30;  // decompressed section bytes, all files
  uint64_t dies = uint64_t{1} << 32;            // DIEs decoded (walked or looked up)
};

class Budget {
 public:
  Budget() = default;
  explicit Budget(BudgetLimits limits) : limits_(limits) {}
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

  static BudgetLimits Unlimited() {
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    return BudgetLimits{kMax, kMax};
  }

  const BudgetLimits& limits() const { return limits_; }
  uint64_t inflated() const { return inflated_.load(std::memory_order_relaxed); }
  uint64_t dies() const { return dies_.load(std::memory_order_relaxed); }
  uint64_t inflated_left() const {
    const uint64_t used = inflated();
    return used >= limits_.inflated_bytes ? 0 : limits_.inflated_bytes - used;
  }

  // Spends n bytes of inflation (before they are allocated), or refuses without spending.
  Status ChargeInflated(uint64_t n) {
    return Charge(inflated_, limits_.inflated_bytes, n, "bytes inflated from compressed sections");
  }
  // Spends n DIEs decoded; the walk charges them in batches.
  Status ChargeDies(uint64_t n) { return Charge(dies_, limits_.dies, n, "DIEs decoded"); }

 private:
  static Status Charge(std::atomic<uint64_t>& used, uint64_t limit, uint64_t n, const char* what) {
    uint64_t now = used.load(std::memory_order_relaxed);
    do {
      if (n > limit || now > limit - n) {
        return MakeError(ErrorKind::kLimit, "DWARF budget: " + std::to_string(now) + " + " +
                                                std::to_string(n) + " " + what + " is over " +
                                                std::to_string(limit));
      }
    } while (!used.compare_exchange_weak(now, now + n, std::memory_order_relaxed));
    return OkStatus();
  }

  BudgetLimits limits_;
  std::atomic<uint64_t> inflated_{0};
  std::atomic<uint64_t> dies_{0};
};

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_BUDGET_H_
