#include "daemon/index/index_view.h"

namespace jitsym::index {

const ProcessView* IndexView::FindProcess(uint32_t pid, std::optional<uint64_t> time) const {
  const ProcessMap::Incarnations* found = processes.Find(pid);
  if (found == nullptr || found->empty()) return nullptr;
  const auto& incarnations = *found;
  if (!time) return incarnations.back().get();
  // The latest incarnation that had started by `time`; before the first, the first.
  for (auto p = incarnations.rbegin(); p != incarnations.rend(); ++p) {
    if ((*p)->start_time && *(*p)->start_time <= *time) return p->get();
  }
  return incarnations.front().get();
}

}  // namespace jitsym::index
