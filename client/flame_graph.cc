// The flame graph's call tree and the folded-stack reader (see flame_graph.h).
#include "client/flame_graph.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>

#include "client/perf_script_parser.h"

namespace jitsym::client {
namespace {

constexpr std::string_view kKindNames[kFrameKindCount] = {
    "unknown", "root", "comm", "kernel", "native", "jitdump", "perfmap", "r2rmap", "mlpd",
};

// MurmurHash3's finaliser: spreads a packed (parent, name, kind) key over all bits.
uint64_t Mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

uint64_t NodeKeyHash(uint32_t parent, uint32_t name, FrameKind kind) {
  return Mix((uint64_t{parent} << 32 | name) ^ (uint64_t{static_cast<uint8_t>(kind)} << 56) ^
             (uint64_t{static_cast<uint8_t>(kind)} * 0x9e3779b97f4a7c15ULL));
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::string_view FrameKindName(FrameKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kFrameKindCount ? kKindNames[i] : kKindNames[0];
}

FrameKind FrameKindOf(proto::Origin origin) {
  switch (origin) {
    case proto::Origin::kJitdump:
      return FrameKind::kJitdump;
    case proto::Origin::kPerfmap:
      return FrameKind::kPerfmap;
    case proto::Origin::kMlpd:
      return FrameKind::kMlpd;
    case proto::Origin::kR2rmap:
      return FrameKind::kR2rmap;
    case proto::Origin::kElf:
      return FrameKind::kNative;
    case proto::Origin::kUnknown:
      break;
  }
  return FrameKind::kUnknown;
}

FlameTree::FlameTree() {
  Node root;
  root.parent = kNoNode;
  root.depth = 0;
  root.kind = FrameKind::kRoot;
  nodes_.push_back(root);
  name_slots_.resize(1024);
  node_slots_.resize(1024);
  nodes_[kRootNode].name = InternName("all");
}

uint32_t FlameTree::InternName(std::string_view name) {
  if (name.size() > UINT32_MAX) name = name.substr(0, UINT32_MAX);
  const uint64_t hash = std::hash<std::string_view>()(name);
  size_t mask = name_slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    NameSlot& slot = name_slots_[i];
    if (slot.id == UINT32_MAX) {
      const auto id = static_cast<uint32_t>(name_sizes_.size());
      slot.hash = hash;
      slot.id = id;
      name_offsets_.push_back(names_.size());
      name_sizes_.push_back(static_cast<uint32_t>(name.size()));
      names_.insert(names_.end(), name.begin(), name.end());
      if (name_sizes_.size() * 2 > name_slots_.size()) GrowNames();
      return id;
    }
    if (slot.hash == hash && name_sizes_[slot.id] == name.size() &&
        std::memcmp(names_.data() + name_offsets_[slot.id], name.data(), name.size()) == 0) {
      return slot.id;
    }
  }
}

void FlameTree::GrowNames() {
  std::vector<NameSlot> slots(name_slots_.size() * 2);
  const size_t mask = slots.size() - 1;
  for (const NameSlot& s : name_slots_) {
    if (s.id == UINT32_MAX) continue;
    size_t i = s.hash & mask;
    while (slots[i].id != UINT32_MAX) i = (i + 1) & mask;
    slots[i] = s;
  }
  name_slots_ = std::move(slots);
}

FlameTree::NodeId FlameTree::Child(NodeId parent, uint32_t name, FrameKind kind) {
  const size_t mask = node_slots_.size() - 1;
  for (size_t i = NodeKeyHash(parent, name, kind) & mask;; i = (i + 1) & mask) {
    NodeSlot& slot = node_slots_[i];
    if (slot.node == kNoNode) {
      const auto id = static_cast<NodeId>(nodes_.size());
      slot.parent = parent;
      slot.name = name;
      slot.kind = kind;
      slot.node = id;
      Node n;
      n.name = name;
      n.parent = parent;
      n.kind = kind;
      n.depth = nodes_[parent].depth + 1;
      n.next_sibling = nodes_[parent].first_child;
      nodes_[parent].first_child = id;
      max_depth_ = std::max(max_depth_, n.depth);
      nodes_.push_back(n);
      if (nodes_.size() * 2 > node_slots_.size()) GrowNodes();
      return id;
    }
    if (slot.parent == parent && slot.name == name && slot.kind == kind) return slot.node;
  }
}

void FlameTree::GrowNodes() {
  std::vector<NodeSlot> slots(node_slots_.size() * 2);
  const size_t mask = slots.size() - 1;
  for (const NodeSlot& s : node_slots_) {
    if (s.node == kNoNode) continue;
    size_t i = NodeKeyHash(s.parent, s.name, s.kind) & mask;
    while (slots[i].node != kNoNode) i = (i + 1) & mask;
    slots[i] = s;
  }
  node_slots_ = std::move(slots);
}

bool FlameTree::Add(std::span<const FlameFrame> root_first, uint64_t count) {
  if (count > kMaxTotal - nodes_[kRootNode].total) return false;
  nodes_[kRootNode].total += count;
  NodeId node = kRootNode;
  size_t i = 0;
  // Most samples repeat most of the previous one's stack: compare with it before hashing.
  const size_t shared = std::min(root_first.size(), last_path_.size());
  for (; i < shared; ++i) {
    const NodeId c = last_path_[i];
    if (nodes_[c].kind != root_first[i].kind || name(c) != root_first[i].name) break;
    nodes_[c].total += count;
    node = c;
  }
  last_path_.resize(i);
  for (; i < root_first.size(); ++i) {
    if (nodes_.size() >= kMaxNodes) {
      truncated_ = true;
      break;
    }
    const NodeId c = Child(node, InternName(root_first[i].name), root_first[i].kind);
    nodes_[c].total += count;
    last_path_.push_back(c);
    node = c;
  }
  nodes_[node].self += count;
  return true;
}

std::vector<FlameTree::NodeId> FlameTree::SortedChildren(NodeId id) const {
  std::vector<NodeId> children;
  for (NodeId c = first_child(id); c != kNoNode; c = next_sibling(c)) children.push_back(c);
  std::sort(children.begin(), children.end(), [this](NodeId a, NodeId b) {
    const int cmp = name(a).compare(name(b));
    return cmp != 0 ? cmp < 0 : kind(a) < kind(b);
  });
  return children;
}

bool ParseFoldedLine(std::string_view line, std::vector<std::string_view>* frames,
                     uint64_t* count) {
  frames->clear();
  size_t end = line.size();
  while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\r' || line[end - 1] == '\t')) {
    --end;
  }
  size_t start = end;
  while (start > 0 && line[start - 1] >= '0' && line[start - 1] <= '9') --start;
  // The count is its own field, after one space, and something comes before it.
  if (start == end || start < 2 || line[start - 1] != ' ') return false;
  uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(line.data() + start, line.data() + end, value);
  if (ec != std::errc() || ptr != line.data() + end) return false;
  const std::string_view stack = line.substr(0, start - 1);
  size_t begin = 0;
  for (;;) {
    const size_t semi = stack.find(';', begin);
    const std::string_view frame =
        stack.substr(begin, semi == std::string_view::npos ? std::string_view::npos : semi - begin);
    frames->push_back(StripSymbolOffset(frame));
    if (semi == std::string_view::npos) break;
    begin = semi + 1;
  }
  *count = value;
  return true;
}

std::string_view StripKindAnnotation(std::string_view name) {
  if (name.size() >= 4 && name.substr(name.size() - 4, 2) == "_[" && name.back() == ']') {
    const char c = name[name.size() - 2];
    if (c == 'k' || c == 'j' || c == 'i' || c == 'w') return name.substr(0, name.size() - 4);
  }
  return name;
}

FrameKind GuessKind(std::string_view name) {
  if (name.size() >= 4 && name.substr(name.size() - 4, 2) == "_[" && name.back() == ']') {
    switch (name[name.size() - 2]) {
      case 'k':
        return FrameKind::kKernel;
      case 'j':
        return FrameKind::kPerfmap;
      case 'i':
      case 'w':
        return FrameKind::kNative;
      default:
        break;
    }
  }
  if (name.empty() || name == "[unknown]") return FrameKind::kUnknown;
  if (StartsWith(name, "[kernel.kallsyms]")) return FrameKind::kKernel;
  // V8's code-kind prefixes in perf maps, "LazyCompile:*fib /app/x.js:3". A C++ scope
  // ("Function::call") is not one.
  static constexpr std::string_view kV8Prefixes[] = {
      "JS:",       "LazyCompile:", "InterpretedFunction:",
      "Function:", "Builtin:",     "BytecodeHandler:",
      "Script:",   "Eval:",        "RegExp:",
      "Stub:",
  };
  for (std::string_view prefix : kV8Prefixes) {
    if (StartsWith(name, prefix) && (name.size() == prefix.size() || name[prefix.size()] != ':')) {
      return FrameKind::kPerfmap;
    }
  }
  return FrameKind::kNative;
}

bool LooksFolded(std::span<const std::string_view> lines) {
  std::vector<std::string_view> frames;
  uint64_t count = 0;
  bool any = false;
  for (std::string_view line : lines) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const char first = line.front();
    if (first == ' ' || first == '\t' || first == '#') return false;
    if (!ParseFoldedLine(line, &frames, &count)) return false;
    any = true;
  }
  return any;
}

}  // namespace jitsym::client
