// The threads a request may add to the one it runs on, shared by the whole process. Query
// threads read a large binary's CUs and symbolize big batches on extra threads; each request
// used to size its own, so two query threads on two big batches started 2 x 3 more, however
// many cores there were. A request now takes what is left of one process-wide allowance
// (cores the process may run on, at most 4, minus one) and gives it back when done; a
// request that gets none does its work on its own thread.
#ifndef JITSYM_DAEMON_UTIL_THREAD_BUDGET_H_
#define JITSYM_DAEMON_UTIL_THREAD_BUDGET_H_

#include <atomic>
#include <cstddef>

namespace jitsym {

class ThreadBudget {
 public:
  explicit ThreadBudget(size_t allowance) : left_(allowance), allowance_(allowance) {}
  ThreadBudget(const ThreadBudget&) = delete;
  ThreadBudget& operator=(const ThreadBudget&) = delete;

  // Extra threads taken from the budget, given back when it goes.
  class Grant {
   public:
    Grant() = default;
    Grant(Grant&& other) noexcept : budget_(other.budget_), count_(other.count_) {
      other.count_ = 0;
    }
    Grant& operator=(Grant&&) = delete;
    ~Grant() {
      if (count_ > 0) budget_->left_.fetch_add(count_, std::memory_order_acq_rel);
    }
    size_t count() const { return count_; }

   private:
    friend class ThreadBudget;
    Grant(ThreadBudget* budget, size_t count) : budget_(budget), count_(count) {}
    ThreadBudget* budget_ = nullptr;
    size_t count_ = 0;
  };

  // Up to `wanted` extra threads: as many as are left, maybe none.
  Grant Take(size_t wanted) {
    size_t left = left_.load(std::memory_order_acquire);
    while (left > 0 && wanted > 0) {
      const size_t take = left < wanted ? left : wanted;
      if (left_.compare_exchange_weak(left, left - take, std::memory_order_acq_rel)) {
        return Grant(this, take);
      }
    }
    return Grant();
  }
  size_t allowance() const { return allowance_; }
  size_t left() const { return left_.load(std::memory_order_acquire); }

  // The process's: cores it may run on (its affinity), at most 4, minus one.
  static ThreadBudget& Process();

 private:
  std::atomic<size_t> left_;
  const size_t allowance_;
};

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_THREAD_BUDGET_H_
