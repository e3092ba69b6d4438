// The processes of an IndexView by pid: an immutable map whose versions share what did not
// change. Each publication of the index changes a few processes (a LOAD appended, an exit);
// copying a std::map of every process for it made each publication cost in proportion to the
// number of processes, 10,000 of them turning a write-to-answerable of 0.1 ms into 10 ms.
//
// A trie over the 32 bits of the pid, 4 bits a level: Set copies the 8 nodes on the pid's path
// (16 pointers each) and shares every other node with the version it came from, so a version
// costs in proportion to the pids that changed. Readers (query threads) see immutable nodes.
#ifndef JITSYM_DAEMON_INDEX_PROCESS_MAP_H_
#define JITSYM_DAEMON_INDEX_PROCESS_MAP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace jitsym::index {

struct ProcessView;

class ProcessMap {
 public:
  // Incarnations of one pid, oldest first; never empty in a map.
  using Incarnations = std::vector<std::shared_ptr<const ProcessView>>;

  // The pid's incarnations, or nullptr.
  const Incarnations* Find(uint32_t pid) const;
  // The pid's incarnations; std::out_of_range if it has none.
  const Incarnations& at(uint32_t pid) const;
  // The first pid >= `from` and its incarnations; nullopt past the last.
  std::optional<std::pair<uint32_t, const Incarnations*>> LowerBound(uint32_t from) const;
  // Pids, and incarnations of all of them.
  size_t size() const { return root_ ? root_->pids : 0; }
  size_t incarnations() const { return root_ ? root_->incarnations : 0; }
  bool empty() const { return size() == 0; }

  // Every pid in increasing order: f(pid, const Incarnations&).
  template <class F>
  void ForEach(F&& f) const {
    if (root_) Visit(*root_, 0, 0, f);
  }

  // This map with pid's incarnations replaced (empty: the pid removed). Nodes off the pid's
  // path stay shared with the maps this one was copied from.
  void Set(uint32_t pid, Incarnations incarnations);
  // Appends an incarnation to pid's (a Set of one more).
  void Add(uint32_t pid, std::shared_ptr<const ProcessView> incarnation);

 private:
  static constexpr int kBits = 4;
  static constexpr int kLevels = 32 / kBits;
  static constexpr uint32_t kFanout = 1u << kBits;

  struct Node {
    std::array<std::shared_ptr<const Node>, kFanout> child;
    std::shared_ptr<const Incarnations> value;  // at the last level only
    size_t pids = 0;
    size_t incarnations = 0;
  };

  static uint32_t Slot(uint32_t pid, int level) {
    return (pid >> (32 - kBits * (level + 1))) & (kFanout - 1);
  }
  static std::shared_ptr<const Node> With(const Node* node, int level, uint32_t pid,
                                          std::shared_ptr<const Incarnations>& value);
  // The first pid of the subtree at `node` (whose pids start with `prefix`) that is >= `from`,
  // where `bounded` says the subtree's prefix is from's (else every pid in it is greater).
  static std::optional<std::pair<uint32_t, const Incarnations*>> First(const Node& node, int level,
                                                                       uint32_t prefix,
                                                                       uint32_t from, bool bounded);

  template <class F>
  static void Visit(const Node& node, int level, uint32_t prefix, F& f) {
    if (level == kLevels) {
      f(prefix, *node.value);
      return;
    }
    for (uint32_t i = 0; i < kFanout; ++i) {
      if (node.child[i])
        Visit(*node.child[i], level + 1, prefix | (i << (32 - kBits * (level + 1))), f);
    }
  }

  std::shared_ptr<const Node> root_;
};

}  // namespace jitsym::index

#endif  // JITSYM_DAEMON_INDEX_PROCESS_MAP_H_
