// The call tree behind a flame graph: stacks of named frames, each with a sample count, merged
// by their path from the root. Also what reads folded stacks written by other tools
// ("comm;outer;...;leaf COUNT", as flamegraph.pl's stackcollapse scripts, inferno and
// `jitsym annotate --folded` write them) and guesses the kind of a frame from its name.
//
// FlameTree::Add sits on the per-sample path of `jitsym flamegraph`, which must cost no more than
// `jitsym annotate --folded` (a std::string key per sample, hashed into an unordered_map, and the
// distinct keys sorted at the end). So Add only counts whole stacks: one inline hash over the
// names, one probe of a flat table of distinct stacks, one comparison with that stack's stored
// frames; no string is built, and a new stack is one append of its frames. The tree is built
// when first read: the distinct stacks sorted (as --folded sorts its lines), then one pass that
// shares each stack's prefix with the one before, with no lookups at all.
#ifndef JITSYM_CLIENT_FLAME_GRAPH_H_
#define JITSYM_CLIENT_FLAME_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/wire_enums.h"

namespace jitsym::client {

// Where a frame's code comes from: decides its colour in the SVG (and its mapping in pprof).
enum class FrameKind : uint8_t {
  kUnknown,  // nobody could name it ([unknown])
  kRoot,     // the "all" frame at the bottom
  kComm,     // the command (thread name) a sample's stack starts with
  kKernel,
  kNative,   // ELF code, named by perf or jitsymd
  kJitdump,  // JIT code named from a perf jitdump
  kPerfmap,  // ... from a perf map
  kR2rmap,   // ... from a .NET ReadyToRun map
  kMlpd,     // ... from a Mono log profiler file
};
inline constexpr size_t kFrameKindCount = 9;

// "unknown", "root", "comm", "kernel", "native", "jitdump", "perfmap", "r2rmap", "mlpd".
std::string_view FrameKindName(FrameKind kind);
// The kind of a frame jitsymd named, by the origin of its answer (kElf is native).
FrameKind FrameKindOf(proto::Origin origin);

struct FlameFrame {
  std::string_view name;
  FrameKind kind = FrameKind::kUnknown;
};

class FlameTree {
 public:
  using NodeId = uint32_t;
  static constexpr NodeId kRootNode = 0;
  static constexpr NodeId kNoNode = UINT32_MAX;
  // Sample totals stay exact as JavaScript numbers (the SVG's script adds them up).
  static constexpr uint64_t kMaxTotal = (uint64_t{1} << 53) - 1;
  // Nodes beyond this are not made: the rest of such a stack counts as its last frame's own.
  static constexpr size_t kMaxNodes = size_t{1} << 30;

  FlameTree();
  FlameTree(const FlameTree&) = delete;
  FlameTree& operator=(const FlameTree&) = delete;
  FlameTree(FlameTree&&) = default;
  FlameTree& operator=(FlameTree&&) = default;

  // Adds `count` samples of the stack `root_first` (outermost frame first; it may be empty: the
  // samples count as the root's own). Frames are keyed by (name, kind) under their parent; names
  // are copied. False, and nothing added, when the total would pass kMaxTotal.
  bool Add(std::span<const FlameFrame> root_first, uint64_t count);

  uint64_t total_samples() const { return total_; }

  // The tree. The first read after an Add builds it from the distinct stacks (O(n log n)); not
  // safe to read from several threads at once before that.
  size_t node_count() const { return Built().size(); }
  // The deepest node's depth (the root's is 0).
  uint32_t max_depth() const {
    Built();
    return max_depth_;
  }
  // True when kMaxNodes cut stacks short.
  bool truncated() const {
    Built();
    return truncated_;
  }
  std::string_view name(NodeId id) const {
    const Node& n = Built()[id];
    return n.name == nullptr ? std::string_view("all") : std::string_view(n.name, n.name_size);
  }
  FrameKind kind(NodeId id) const { return Built()[id].kind; }
  NodeId parent(NodeId id) const { return Built()[id].parent; }
  uint32_t depth(NodeId id) const { return Built()[id].depth; }
  // Samples in this frame or below it, and in it alone.
  uint64_t total(NodeId id) const { return Built()[id].total; }
  uint64_t self(NodeId id) const { return Built()[id].self; }
  // Children in no particular order: first_child, then next_sibling until kNoNode. A child's id
  // is larger than its parent's.
  NodeId first_child(NodeId id) const { return Built()[id].first_child; }
  NodeId next_sibling(NodeId id) const { return Built()[id].next_sibling; }
  // The children of `id` sorted by name (bytes), then kind: the left-to-right order of a graph.
  std::vector<NodeId> SortedChildren(NodeId id) const;

 private:
  struct Node {
    const char* name;  // in a stored stack key; nullptr for the root
    uint32_t name_size;
    NodeId parent;
    NodeId first_child = kNoNode;
    NodeId next_sibling = kNoNode;
    uint32_t depth;
    FrameKind kind;
    uint64_t total = 0;
    uint64_t self = 0;
  };
  struct StackSlot {  // a distinct stack; frames == kEmptySlot: empty
    uint64_t hash;
    const char* key;  // per frame: u32 name size, u8 kind, the name
    uint64_t key_size;
    uint64_t count;
    uint32_t frames = kEmptySlot;
  };
  static constexpr uint32_t kEmptySlot = UINT32_MAX;

  bool SameStack(const StackSlot& slot, std::span<const FlameFrame> root_first) const;
  void GrowStacks();
  const std::vector<Node>& Built() const {
    if (!built_) Build();
    return nodes_;
  }
  void Build() const;

  uint64_t total_ = 0;
  uint64_t seed_ = 0;
  std::vector<StackSlot> stack_slots_;  // size a power of two, at most half full
  size_t stack_count_ = 0;
  // The stacks' keys, in blocks that never move (a growing vector would copy them all again).
  std::vector<std::unique_ptr<char[]>> key_blocks_;
  char* block_free_ = nullptr;
  size_t block_left_ = 0;
  // The tree, built from the stacks when first read (mutable: Build is logically const).
  mutable std::vector<Node> nodes_;
  mutable bool built_ = false;
  mutable uint32_t max_depth_ = 0;
  mutable bool truncated_ = false;
};

// Reads one folded-stack line: "comm;outer;...;leaf COUNT". The count is the last
// space-separated field, a decimal integer, which may be followed by spaces or a CR; names keep
// their spaces; a trailing "+0xHEX" offset is taken off each name. Frames are views into `line`.
// False when the line is not one (no count, a count that is not an integer or overflows).
bool ParseFoldedLine(std::string_view line, std::vector<std::string_view>* frames, uint64_t* count);

// The kind of a frame of folded input from other tools, by its name:
//   NAME_[k]                 kernel  (stackcollapse-perf.pl --kernel / --all)
//   NAME_[j]                 perfmap (stackcollapse-perf.pl --jit: code from /tmp/perf-PID.map)
//   NAME_[i], NAME_[w]       native  (inlined frames; waker stacks)
//   [unknown], empty         unknown
//   [kernel.kallsyms]...     kernel  (a kernel frame perf could not name by symbol)
//   JS:, LazyCompile:, InterpretedFunction:, Function:, Builtin:, BytecodeHandler:, Script:,
//   Eval:, RegExp:, Stub:    perfmap (V8's names in perf maps: node --perf-basic-prof)
//   anything else            native
// Folded stacks do not say which JIT format named a frame; V8 and _[j] frames are shown as
// perf map frames.
FrameKind GuessKind(std::string_view name);
// The name without a `_[k]`/`_[j]`/`_[i]`/`_[w]` annotation (flamegraph.pl does not show them).
std::string_view StripKindAnnotation(std::string_view name);

// Whether input whose first lines are `lines` is folded stacks rather than `perf script` text:
// none of them starts with white space (perf script's callchain lines) or '#' (its header
// comments), and more of the non-blank ones read with ParseFoldedLine than not (one broken line
// among the first does not make the rest unreadable).
bool LooksFolded(std::span<const std::string_view> lines);
// The same for input whose first line is longer than what is read to decide (so it has no
// count yet): folded unless it starts as perf script's callchain lines and headers do
// (whitespace, '#'), and it holds a ';' between frames. A perf script line that long would
// have no reason to exist; a deep stack of long C++ names does.
bool LooksFoldedStart(std::string_view cut_line);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_FLAME_GRAPH_H_
