// The process-wide thread budget (thread_budget.h).
#include "daemon/util/thread_budget.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace jitsym {
namespace {

// The cores this process may run on, not the machine's: pinned to one core (taskset, a
// cgroup's cpuset), extra threads would only take turns with the first.
size_t UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  size_t cores = std::max(std::thread::hardware_concurrency(), 1u);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    cores = std::max(static_cast<size_t>(CPU_COUNT(&set)), size_t{1});
  }
  return cores;
}

}  // namespace

ThreadBudget& ThreadBudget::Process() {
  static ThreadBudget budget(std::min(UsableCores(), size_t{4}) - 1);
  return budget;
}

}  // namespace jitsym
