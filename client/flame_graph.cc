// The flame graph's call tree and the folded-stack reader (see flame_graph.h).
#include "client/flame_graph.h"

#include <algorithm>
#include <charconv>
#include <chrono>
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
  stack_slots_.resize(1024);
  // A seed of this run's own: stacks from a hostile file cannot be made to collide in advance
  // (which would turn the table's probes quadratic). The tree does not depend on it.
  seed_ = Mix(reinterpret_cast<uintptr_t>(this) ^
              static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
}

bool FlameTree::SameStack(const StackSlot& slot, std::span<const FlameFrame> root_first) const {
  if (slot.frames != root_first.size()) return false;
  const char* p = slot.key;
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
    if (s.frames == kEmptySlot) continue;
    size_t i = s.hash & mask;
    while (slots[i].frames != kEmptySlot) i = (i + 1) & mask;
    slots[i] = s;
  }
  stack_slots_ = std::move(slots);
}

bool FlameTree::Add(std::span<const FlameFrame> root_first, uint64_t count) {
  if (count > kMaxTotal - total_) return false;
  // A name longer than 4 GiB would not fit the stored key; no line is that long.
  if (root_first.size() >= kEmptySlot) return false;
  uint64_t hash = seed_ ^ root_first.size();
  uint64_t key_size = 0;
  size_t longest = 0;
  for (const FlameFrame& f : root_first) {
    hash = HashBytes(hash + static_cast<uint8_t>(f.kind), f.name);
    key_size += 5 + f.name.size();
    longest = std::max(longest, f.name.size());
  }
  if (longest > UINT32_MAX) return false;
  hash = Mix(hash);
  total_ += count;
  built_ = false;
  const size_t mask = stack_slots_.size() - 1;
  size_t i = hash & mask;
  for (;; i = (i + 1) & mask) {
    StackSlot& slot = stack_slots_[i];
    if (slot.frames == kEmptySlot) break;
    if (slot.hash == hash && slot.key_size == key_size && SameStack(slot, root_first)) {
      slot.count += count;
      return true;
    }
  }
  StackSlot& slot = stack_slots_[i];
  slot.hash = hash;
  if (block_left_ < key_size) {
    constexpr size_t kBlock = size_t{4} << 20;
    const size_t size = std::max<size_t>(kBlock, key_size);
    key_blocks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    block_free_ = key_blocks_.back().get();
    block_left_ = size;
  }
  slot.key = block_free_;
  block_free_ += key_size;
  block_left_ -= key_size;
  slot.key_size = key_size;
  slot.count = count;
  slot.frames = static_cast<uint32_t>(root_first.size());
  char* p = const_cast<char*>(slot.key);
  for (const FlameFrame& f : root_first) {
    const auto size = static_cast<uint32_t>(f.name.size());
    std::memcpy(p, &size, sizeof(size));
    p[4] = static_cast<char>(f.kind);
    if (size > 0) std::memcpy(p + 5, f.name.data(), size);
    p += 5 + size;
  }
  if (++stack_count_ * 2 > stack_slots_.size()) GrowStacks();
  return true;
}

namespace {

// One frame of a stored stack key.
struct KeyFrame {
  std::string_view name;
  FrameKind kind;
};

KeyFrame ReadKeyFrame(const char* p) {
  uint32_t size;
  std::memcpy(&size, p, sizeof(size));
  return {std::string_view(p + 5, size), static_cast<FrameKind>(p[4])};
}

}  // namespace

void FlameTree::Build() const {
  struct Stack {
    const char* key;
    uint64_t size;
    uint32_t frames;
    uint64_t count;
  };
  std::vector<Stack> stacks;
  stacks.reserve(stack_count_);
  for (const StackSlot& s : stack_slots_) {
    if (s.frames != kEmptySlot) stacks.push_back({s.key, s.key_size, s.frames, s.count});
  }
  // By the bytes of their keys, as --folded sorts its lines: a stack sorts before the stacks it
  // is a prefix of, and stacks that share a prefix of frames are neighbours (a key frame is
  // self-delimiting), so one pass makes every node once. Siblings come out in key order, not by
  // name: SortedChildren sorts them.
  std::sort(stacks.begin(), stacks.end(), [](const Stack& a, const Stack& b) {
    const int c = std::memcmp(a.key, b.key, std::min(a.size, b.size));
    return c != 0 ? c < 0 : a.size < b.size;
  });

  nodes_.clear();
  // At most one node per stored frame: reserving (address space, touched as it is used) spares
  // the copies of a growing vector of millions of nodes.
  uint64_t frames = 1;
  for (const Stack& st : stacks) frames += st.frames;
  nodes_.reserve(std::min<uint64_t>(frames, kMaxNodes + 1));
  max_depth_ = 0;
  truncated_ = false;
  Node root;
  root.name = nullptr;
  root.name_size = 3;
  root.parent = kNoNode;
  root.depth = 0;
  root.kind = FrameKind::kRoot;
  nodes_.push_back(root);
  // path[d]: the node at depth d of the previous stack; path_keys[d]: where its frame is.
  std::vector<NodeId> path = {kRootNode};
  std::vector<const char*> path_keys = {nullptr};
  for (const Stack& s : stacks) {
    const char* p = s.key;
    uint32_t depth = 0;
    // The prefix shared with the previous stack.
    while (depth < s.frames && depth + 1 < path.size()) {
      const KeyFrame mine = ReadKeyFrame(p), theirs = ReadKeyFrame(path_keys[depth + 1]);
      if (mine.kind != theirs.kind || mine.name != theirs.name) break;
      p += 5 + mine.name.size();
      ++depth;
    }
    // The previous stack's node below the shared prefix is the last child made there so far.
    NodeId previous_sibling = depth + 1 < path.size() ? path[depth + 1] : kNoNode;
    path.resize(depth + 1);
    path_keys.resize(depth + 1);
    for (; depth < s.frames; ++depth) {
      if (nodes_.size() >= kMaxNodes) {
        truncated_ = true;
        break;
      }
      const KeyFrame f = ReadKeyFrame(p);
      const auto id = static_cast<NodeId>(nodes_.size());
      Node n;
      n.name = p + 5;
      n.name_size = static_cast<uint32_t>(f.name.size());
      n.parent = path.back();
      n.depth = depth + 1;
      n.kind = f.kind;
      if (previous_sibling != kNoNode) {
        nodes_[previous_sibling].next_sibling = id;
      } else {
        nodes_[n.parent].first_child = id;
      }
      previous_sibling = kNoNode;
      max_depth_ = std::max(max_depth_, n.depth);
      nodes_.push_back(n);
      path.push_back(id);
      path_keys.push_back(p);
      p += 5 + f.name.size();
    }
    nodes_[path.back()].self += s.count;
  }
  // Children come after their parent: from the last node back, each is complete when it is
  // added to its parent.
  for (size_t id = nodes_.size(); id-- > 0;) {
    Node& n = nodes_[id];
    n.total += n.self;
    if (id != kRootNode) nodes_[n.parent].total += n.total;
  }
  built_ = true;
}

std::vector<FlameTree::NodeId> FlameTree::SortedChildren(NodeId id) const {
  std::vector<NodeId> children;
  for (NodeId c = first_child(id); c != kNoNode; c = next_sibling(c)) children.push_back(c);
  std::sort(children.begin(), children.end(), [this](NodeId a, NodeId b) {
    const int c = name(a).compare(name(b));
    return c != 0 ? c < 0 : kind(a) < kind(b);
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

bool LooksFoldedStart(std::string_view cut_line) {
  if (cut_line.empty()) return false;
  const char first = cut_line.front();
  return first != ' ' && first != '\t' && first != '#' &&
         cut_line.find(';') != std::string_view::npos;
}

}  // namespace jitsym::client
