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

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

constexpr uint64_t kMulA = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kMulB = 0xc2b2ae3d27d4eb4fULL;

// A multiply-xorshift hash, inline, two independent lanes of 8-byte words and overlapping loads
// for the tail: a stack's names are hashed once per sample, as many small strings, where a
// library call (or a byte loop) per name would cost more than the hashing. Collisions cost a
// comparison, never a wrong answer.
uint64_t HashBytes(uint64_t seed, std::string_view bytes) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  uint64_t a = seed ^ n, b = seed * kMulB;
  if (n > 16) {
    for (; n > 16; p += 16, n -= 16) {
      a = (a ^ Load64(p)) * kMulA;
      b = (b ^ Load64(p + 8)) * kMulB;
      a ^= a >> 29;
      b ^= b >> 31;
    }
    a ^= Load64(p + n - 16);  // the last 16 bytes, overlapping what came before
    b ^= Load64(p + n - 8);
  } else if (n >= 8) {
    a ^= Load64(p);
    b ^= Load64(p + n - 8);
  } else if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    a ^= uint64_t{lo} | uint64_t{hi} << 32;
  } else if (n > 0) {
    a ^= uint64_t{static_cast<unsigned char>(p[0])} |
         uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 |
         uint64_t{static_cast<unsigned char>(p[n - 1])} << 16;
  }
  // Every input bit must reach the low bits, which index the tables: names often differ only
  // in their last bytes (file.js:12, file.js:13).
  return Mix(a * kMulA ^ b);
}

// Equality of short byte strings (names) without a library call.
bool SameBytes(const char* x, const char* y, size_t n) {
  if (n >= 8) {
    for (; n > 8; x += 8, y += 8, n -= 8) {
      if (Load64(x) != Load64(y)) return false;
    }
    return Load64(x + n - 8) == Load64(y + n - 8);
  }
  for (; n > 0; ++x, ++y, --n) {
    if (*x != *y) return false;
  }
  return true;
}

uint64_t HashName(std::string_view name) { return HashBytes(0x51ed270b27a4f9c3ULL, name); }

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
  name_slots_.resize(1024);
  node_slots_.resize(1024);
  stack_slots_.resize(1024);
  Node root;
  root.name_offset = InternName("all", HashName("all"));
  root.name_size = 3;
  root.parent = kNoNode;
  root.depth = 0;
  root.kind = FrameKind::kRoot;
  nodes_.push_back(root);
}

uint64_t FlameTree::InternName(std::string_view name, uint64_t hash) {
  const size_t mask = name_slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    NameSlot& slot = name_slots_[i];
    if (slot.size == UINT32_MAX) {
      slot.hash = hash;
      slot.offset = names_.size();
      slot.size = static_cast<uint32_t>(name.size());
      names_.insert(names_.end(), name.begin(), name.end());
      const uint64_t offset = slot.offset;
      if (++name_count_ * 2 > name_slots_.size()) GrowNames();
      return offset;
    }
    if (slot.hash == hash && slot.size == name.size() &&
        SameBytes(names_.data() + slot.offset, name.data(), name.size())) {
      return slot.offset;
    }
  }
}

void FlameTree::GrowNames() {
  std::vector<NameSlot> slots(name_slots_.size() * 2);
  const size_t mask = slots.size() - 1;
  for (const NameSlot& s : name_slots_) {
    if (s.size == UINT32_MAX) continue;
    size_t i = s.hash & mask;
    while (slots[i].size != UINT32_MAX) i = (i + 1) & mask;
    slots[i] = s;
  }
  name_slots_ = std::move(slots);
}

FlameTree::NodeId FlameTree::Child(NodeId parent, std::string_view name, uint64_t name_hash,
                                   uint64_t hash, FrameKind kind) {
  const size_t mask = node_slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    NodeSlot& slot = node_slots_[i];
    if (slot.node == kNoNode) {
      const auto id = static_cast<NodeId>(nodes_.size());
      Node n;
      n.name_offset = InternName(name, name_hash);
      n.name_size = static_cast<uint32_t>(name.size());
      n.parent = parent;
      n.kind = kind;
      n.depth = nodes_[parent].depth + 1;
      n.next_sibling = nodes_[parent].first_child;
      nodes_[parent].first_child = id;
      max_depth_ = std::max(max_depth_, n.depth);
      nodes_.push_back(n);
      NodeSlot& fresh = node_slots_[i];  // InternName does not move node_slots_
      fresh.hash = hash;
      fresh.name_offset = n.name_offset;
      fresh.name_size = n.name_size;
      fresh.parent = parent;
      fresh.kind = kind;
      fresh.node = id;
      if (nodes_.size() * 2 > node_slots_.size()) GrowNodes();
      return id;
    }
    if (slot.hash == hash && slot.parent == parent && slot.kind == kind &&
        slot.name_size == name.size() &&
        SameBytes(names_.data() + slot.name_offset, name.data(), name.size())) {
      return slot.node;
    }
  }
}

void FlameTree::GrowNodes() {
  std::vector<NodeSlot> slots(node_slots_.size() * 2);
  const size_t mask = slots.size() - 1;
  for (const NodeSlot& s : node_slots_) {
    if (s.node == kNoNode) continue;
    size_t i = s.hash & mask;
    while (slots[i].node != kNoNode) i = (i + 1) & mask;
    slots[i] = s;
  }
  node_slots_ = std::move(slots);
}

// The frames of a new stack, node by node from the root (a prefix shared with the previous new
// stack is reused without lookups). name_hashes_ and path_hashes_ are the frames'. Returns the
// leaf.
FlameTree::NodeId FlameTree::Walk(std::span<const FlameFrame> root_first) {
  NodeId node = kRootNode;
  size_t i = 0;
  const size_t shared = std::min(root_first.size(), last_path_.size());
  for (; i < shared; ++i) {
    const NodeId c = last_path_[i];
    if (nodes_[c].kind != root_first[i].kind || name(c) != root_first[i].name) break;
    node = c;
  }
  last_path_.resize(i);
  // A node's slot is found by the hash of its path, known for every frame before the first
  // lookup: the cache misses of a deep new stack overlap instead of following each other.
  const size_t mask = node_slots_.size() - 1;
  for (size_t k = i; k < root_first.size(); ++k) {
    __builtin_prefetch(&node_slots_[path_hashes_[k] & mask]);
  }
  for (; i < root_first.size(); ++i) {
    if (nodes_.size() >= kMaxNodes) {
      truncated_ = true;
      break;
    }
    node = Child(node, root_first[i].name, name_hashes_[i], path_hashes_[i], root_first[i].kind);
    last_path_.push_back(node);
  }
  return node;
}

bool FlameTree::SameStack(const StackSlot& slot, std::span<const FlameFrame> root_first) const {
  if (slot.frames != root_first.size()) return false;
  const char* p = stack_keys_.data() + slot.key_offset;
  for (const FlameFrame& f : root_first) {
    uint32_t size;
    std::memcpy(&size, p, sizeof(size));
    if (size != f.name.size() || static_cast<FrameKind>(p[4]) != f.kind ||
        !SameBytes(p + 5, f.name.data(), size)) {
      return false;
    }
    p += 5 + size;
  }
  return true;
}

void FlameTree::GrowStacks() {
  std::vector<StackSlot> slots(stack_slots_.size() * 2);
  const size_t mask = slots.size() - 1;
  for (const StackSlot& s : stack_slots_) {
    if (s.leaf == kNoNode) continue;
    size_t i = s.hash & mask;
    while (slots[i].leaf != kNoNode) i = (i + 1) & mask;
    slots[i] = s;
  }
  stack_slots_ = std::move(slots);
}

bool FlameTree::Add(std::span<const FlameFrame> root_first, uint64_t count) {
  if (count > kMaxTotal - total_) return false;
  uint64_t hash = root_first.size();
  uint64_t key_size = 0;
  size_t longest = 0;
  name_hashes_.resize(root_first.size());
  path_hashes_.resize(root_first.size());
  uint64_t path = 0;
  for (size_t i = 0; i < root_first.size(); ++i) {
    const FlameFrame& f = root_first[i];
    name_hashes_[i] = HashName(f.name);
    path = (path ^ name_hashes_[i]) * kMulA + static_cast<uint8_t>(f.kind) + 1;
    path_hashes_[i] = Mix(path);
    key_size += 5 + f.name.size();
    longest = std::max(longest, f.name.size());
  }
  hash ^= path;
  // A name longer than 4 GiB would not fit the stored key; no line is that long.
  if (longest > UINT32_MAX) return false;
  hash = Mix(hash);
  total_ += count;
  settled_ = false;
  const size_t mask = stack_slots_.size() - 1;
  size_t i = hash & mask;
  for (;; i = (i + 1) & mask) {
    StackSlot& slot = stack_slots_[i];
    if (slot.leaf == kNoNode) break;
    if (slot.hash == hash && slot.key_size == key_size && SameStack(slot, root_first)) {
      slot.count += count;
      return true;
    }
  }
  // A stack not seen before.
  StackSlot slot;
  slot.hash = hash;
  slot.key_offset = stack_keys_.size();
  slot.key_size = key_size;
  slot.count = count;
  slot.frames = static_cast<uint32_t>(root_first.size());
  for (const FlameFrame& f : root_first) {
    const auto size = static_cast<uint32_t>(f.name.size());
    const char* p = reinterpret_cast<const char*>(&size);
    stack_keys_.insert(stack_keys_.end(), p, p + sizeof(size));
    stack_keys_.push_back(static_cast<char>(f.kind));
    stack_keys_.insert(stack_keys_.end(), f.name.begin(), f.name.end());
  }
  slot.leaf = Walk(root_first);
  stack_slots_[i] = slot;
  if (++stack_count_ * 2 > stack_slots_.size()) GrowStacks();
  return true;
}

void FlameTree::Settle() const {
  if (settled_) return;
  for (Node& n : nodes_) n.total = n.self = 0;
  for (const StackSlot& s : stack_slots_) {
    if (s.leaf != kNoNode) nodes_[s.leaf].self += s.count;
  }
  // A child is made after its parent: from the last node back, every child is complete before
  // it is added to its parent.
  for (size_t id = nodes_.size(); id-- > 0;) {
    Node& n = nodes_[id];
    n.total += n.self;
    if (id != kRootNode) nodes_[n.parent].total += n.total;
  }
  settled_ = true;
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
  size_t folded = 0, other = 0;
  for (std::string_view line : lines) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const char first = line.front();
    if (first == ' ' || first == '\t' || first == '#') return false;
    ++(ParseFoldedLine(line, &frames, &count) ? folded : other);
  }
  return folded > other;
}

}  // namespace jitsym::client
