// The persistent pid map (process_map.h).
#include "daemon/index/process_map.h"

#include <stdexcept>

namespace jitsym::index {

const ProcessMap::Incarnations* ProcessMap::Find(uint32_t pid) const {
  const Node* node = root_.get();
  for (int level = 0; node != nullptr && level < kLevels; ++level) {
    node = node->child[Slot(pid, level)].get();
  }
  return node != nullptr ? node->value.get() : nullptr;
}

const ProcessMap::Incarnations& ProcessMap::at(uint32_t pid) const {
  const Incarnations* found = Find(pid);
  if (found == nullptr) throw std::out_of_range("no process with this pid");
  return *found;
}

std::optional<std::pair<uint32_t, const ProcessMap::Incarnations*>> ProcessMap::LowerBound(
    uint32_t from) const {
  if (!root_) return std::nullopt;
  return First(*root_, 0, 0, from, true);
}

std::optional<std::pair<uint32_t, const ProcessMap::Incarnations*>> ProcessMap::First(
    const Node& node, int level, uint32_t prefix, uint32_t from, bool bounded) {
  if (level == kLevels) return std::make_pair(prefix, node.value.get());
  const int shift = 32 - kBits * (level + 1);
  for (uint32_t i = bounded ? Slot(from, level) : 0; i < kFanout; ++i) {
    if (!node.child[i]) continue;
    const bool tight = bounded && i == Slot(from, level);
    if (auto found = First(*node.child[i], level + 1, prefix | (i << shift), from, tight)) {
      return found;
    }
  }
  return std::nullopt;
}

std::shared_ptr<const ProcessMap::Node> ProcessMap::With(
    const Node* node, int level, uint32_t pid, std::shared_ptr<const Incarnations>& value) {
  if (level == kLevels) {
    if (!value) return nullptr;
    auto leaf = std::make_shared<Node>();
    leaf->value = value;
    leaf->pids = 1;
    leaf->incarnations = value->size();
    return leaf;
  }
  auto copy = std::make_shared<Node>();
  if (node != nullptr) *copy = *node;
  const uint32_t slot = Slot(pid, level);
  const std::shared_ptr<const Node> old = copy->child[slot];
  copy->child[slot] = With(old.get(), level + 1, pid, value);
  const Node* now = copy->child[slot].get();
  copy->pids = copy->pids - (old ? old->pids : 0) + (now != nullptr ? now->pids : 0);
  copy->incarnations =
      copy->incarnations - (old ? old->incarnations : 0) + (now != nullptr ? now->incarnations : 0);
  if (copy->pids == 0) return nullptr;
  return copy;
}

void ProcessMap::Set(uint32_t pid, Incarnations incarnations) {
  std::shared_ptr<const Incarnations> value;
  if (!incarnations.empty()) {
    value = std::make_shared<const Incarnations>(std::move(incarnations));
  }
  root_ = With(root_.get(), 0, pid, value);
}

void ProcessMap::Add(uint32_t pid, std::shared_ptr<const ProcessView> incarnation) {
  Incarnations incarnations;
  if (const Incarnations* found = Find(pid)) incarnations = *found;
  incarnations.push_back(std::move(incarnation));
  Set(pid, std::move(incarnations));
}

}  // namespace jitsym::index
