// FlameTree (counts against a brute-force oracle), the folded-stack reader, kind guessing, and
// the SVG: merging, reverse, escaping of hostile names.
#include "client/flame_graph.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "client/flame_svg.h"

namespace jitsym::client {
namespace {

using Stack = std::vector<FlameFrame>;

// The node reached by following names (kind any) from the root, or kNoNode.
FlameTree::NodeId Find(const FlameTree& tree, const std::vector<std::string>& path) {
  FlameTree::NodeId node = FlameTree::kRootNode;
  for (const std::string& name : path) {
    FlameTree::NodeId next = FlameTree::kNoNode;
    for (FlameTree::NodeId c = tree.first_child(node); c != FlameTree::kNoNode;
         c = tree.next_sibling(c)) {
      if (tree.name(c) == name) next = c;
    }
    if (next == FlameTree::kNoNode) return next;
    node = next;
  }
  return node;
}

TEST(FrameKindTest, NamesAndOrigins) {
  EXPECT_EQ(FrameKindName(FrameKind::kUnknown), "unknown");
  EXPECT_EQ(FrameKindName(FrameKind::kRoot), "root");
  EXPECT_EQ(FrameKindName(FrameKind::kComm), "comm");
  EXPECT_EQ(FrameKindName(FrameKind::kKernel), "kernel");
  EXPECT_EQ(FrameKindName(FrameKind::kNative), "native");
  EXPECT_EQ(FrameKindName(FrameKind::kJitdump), "jitdump");
  EXPECT_EQ(FrameKindName(FrameKind::kPerfmap), "perfmap");
  EXPECT_EQ(FrameKindName(FrameKind::kR2rmap), "r2rmap");
  EXPECT_EQ(FrameKindName(FrameKind::kMlpd), "mlpd");
  EXPECT_EQ(FrameKindOf(proto::Origin::kJitdump), FrameKind::kJitdump);
  EXPECT_EQ(FrameKindOf(proto::Origin::kPerfmap), FrameKind::kPerfmap);
  EXPECT_EQ(FrameKindOf(proto::Origin::kR2rmap), FrameKind::kR2rmap);
  EXPECT_EQ(FrameKindOf(proto::Origin::kMlpd), FrameKind::kMlpd);
  EXPECT_EQ(FrameKindOf(proto::Origin::kElf), FrameKind::kNative);
  EXPECT_EQ(FrameKindOf(proto::Origin::kUnknown), FrameKind::kUnknown);
}

TEST(FlameTreeTest, CountsTotalsAndSelf) {
  FlameTree tree;
  const Stack a = {
      {"node", FrameKind::kComm}, {"main", FrameKind::kNative}, {"work", FrameKind::kJitdump}};
  const Stack b = {{"node", FrameKind::kComm}, {"main", FrameKind::kNative}};
  ASSERT_TRUE(tree.Add(a, 5));
  ASSERT_TRUE(tree.Add(b, 2));
  ASSERT_TRUE(tree.Add(a, 1));
  ASSERT_TRUE(tree.Add({}, 4));  // no frames: the root's own
  EXPECT_EQ(tree.total_samples(), 12u);
  EXPECT_EQ(tree.total(FlameTree::kRootNode), 12u);
  EXPECT_EQ(tree.self(FlameTree::kRootNode), 4u);
  EXPECT_EQ(tree.name(FlameTree::kRootNode), "all");
  const auto main_node = Find(tree, {"node", "main"});
  ASSERT_NE(main_node, FlameTree::kNoNode);
  EXPECT_EQ(tree.total(main_node), 8u);
  EXPECT_EQ(tree.self(main_node), 2u);
  const auto work = Find(tree, {"node", "main", "work"});
  EXPECT_EQ(tree.total(work), 6u);
  EXPECT_EQ(tree.kind(work), FrameKind::kJitdump);
  EXPECT_EQ(tree.depth(work), 3u);
  EXPECT_EQ(tree.max_depth(), 3u);
  EXPECT_EQ(tree.node_count(), 4u);
}

TEST(FlameTreeTest, SameNameOtherKindIsAnotherFrame) {
  FlameTree tree;
  tree.Add(Stack{{"f", FrameKind::kNative}}, 1);
  tree.Add(Stack{{"f", FrameKind::kJitdump}}, 2);
  const auto children = tree.SortedChildren(FlameTree::kRootNode);
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(tree.kind(children[0]), FrameKind::kNative);
  EXPECT_EQ(tree.total(children[0]), 1u);
  EXPECT_EQ(tree.kind(children[1]), FrameKind::kJitdump);
  EXPECT_EQ(tree.total(children[1]), 2u);
}

TEST(FlameTreeTest, SortedChildrenByName) {
  FlameTree tree;
  for (const char* name : {"zeta", "alpha", "mu"}) tree.Add(Stack{{name, FrameKind::kNative}}, 1);
  const auto children = tree.SortedChildren(FlameTree::kRootNode);
  ASSERT_EQ(children.size(), 3u);
  EXPECT_EQ(tree.name(children[0]), "alpha");
  EXPECT_EQ(tree.name(children[1]), "mu");
  EXPECT_EQ(tree.name(children[2]), "zeta");
}

TEST(FlameTreeTest, TotalLimitRefusesWithoutChange) {
  FlameTree tree;
  ASSERT_TRUE(tree.Add(Stack{{"a", FrameKind::kNative}}, FlameTree::kMaxTotal - 1));
  EXPECT_FALSE(tree.Add(Stack{{"b", FrameKind::kNative}}, 2));
  EXPECT_TRUE(tree.Add(Stack{{"a", FrameKind::kNative}}, 1));
  EXPECT_EQ(tree.total_samples(), FlameTree::kMaxTotal);
  EXPECT_EQ(Find(tree, {"b"}), FlameTree::kNoNode);
}

TEST(FlameTreeTest, NamesAreCopied) {
  FlameTree tree;
  {
    std::string name = "temporary";
    tree.Add(Stack{{name, FrameKind::kNative}}, 1);
    name.assign("overwritten");
    tree.Add(Stack{{name, FrameKind::kNative}}, 1);
  }
  EXPECT_NE(Find(tree, {"temporary"}), FlameTree::kNoNode);
  EXPECT_NE(Find(tree, {"overwritten"}), FlameTree::kNoNode);
}

// Random stacks over a small alphabet (many shared prefixes, names that differ in their last
// byte only, empty names), in random order: every path's total and self against a map.
TEST(FlameTreeTest, MatchesBruteForce) {
  std::mt19937_64 rng(1);
  std::vector<std::string> names = {"", "a", "b", "ab", "main", "fn:12", "fn:13", "x"};
  for (int i = 0; i < 40; ++i)
    names.push_back("LazyCompile:*handler /srv/app.js:" + std::to_string(i));
  std::map<std::vector<std::string>, uint64_t> total, self;
  FlameTree tree;
  uint64_t all = 0;
  for (int s = 0; s < 20000; ++s) {
    const size_t depth = rng() % 12;
    std::vector<std::string> path;
    Stack stack;
    for (size_t d = 0; d < depth; ++d) path.push_back(names[rng() % (d < 3 ? 3 : names.size())]);
    for (const std::string& n : path) stack.push_back({n, FrameKind::kNative});
    const uint64_t count = 1 + rng() % 5;
    ASSERT_TRUE(tree.Add(stack, count));
    all += count;
    self[path] += count;
    for (size_t d = 0; d <= depth; ++d) {
      total[std::vector<std::string>(path.begin(), path.begin() + static_cast<long>(d))] += count;
    }
  }
  EXPECT_EQ(tree.total_samples(), all);
  EXPECT_EQ(tree.node_count(), total.size());
  for (const auto& [path, count] : total) {
    const auto node = Find(tree, path);
    ASSERT_NE(node, FlameTree::kNoNode);
    EXPECT_EQ(tree.total(node), count);
    EXPECT_EQ(tree.self(node), self.count(path) ? self[path] : 0);
  }
  // Children of each node sum to at most its total; the rest is its self.
  for (size_t i = 0; i < tree.node_count(); ++i) {
    const auto id = static_cast<FlameTree::NodeId>(i);
    uint64_t sum = 0;
    for (auto c = tree.first_child(id); c != FlameTree::kNoNode; c = tree.next_sibling(c)) {
      sum += tree.total(c);
      EXPECT_EQ(tree.parent(c), id);
      EXPECT_EQ(tree.depth(c), tree.depth(id) + 1);
    }
    EXPECT_EQ(sum + tree.self(id), tree.total(id));
  }
}

TEST(ParseFoldedLineTest, Basic) {
  std::vector<std::string_view> frames;
  uint64_t count = 0;
  ASSERT_TRUE(ParseFoldedLine("node;main;work 42", &frames, &count));
  EXPECT_EQ(count, 42u);
  EXPECT_EQ(frames, (std::vector<std::string_view>{"node", "main", "work"}));
}

TEST(ParseFoldedLineTest, NamesKeepSpacesAndTrailingSpaceOrCrIsFine) {
  std::vector<std::string_view> frames;
  uint64_t count = 0;
  ASSERT_TRUE(ParseFoldedLine("my comm;void f(int, char) const;LazyCompile:*x /a b.js:1 7 \r",
                              &frames, &count));
  EXPECT_EQ(count, 7u);
  EXPECT_EQ(frames, (std::vector<std::string_view>{"my comm", "void f(int, char) const",
                                                   "LazyCompile:*x /a b.js:1"}));
}

TEST(ParseFoldedLineTest, StripsOffsets) {
  std::vector<std::string_view> frames;
  uint64_t count = 0;
  ASSERT_TRUE(ParseFoldedLine("a+0x1c;b+0xffff;c+0x;d+0xzz 1", &frames, &count));
  EXPECT_EQ(frames, (std::vector<std::string_view>{"a", "b", "c+0x", "d+0xzz"}));
}

TEST(ParseFoldedLineTest, EmptyFramesKept) {
  std::vector<std::string_view> frames;
  uint64_t count = 0;
  ASSERT_TRUE(ParseFoldedLine("a;;b 3", &frames, &count));
  EXPECT_EQ(frames, (std::vector<std::string_view>{"a", "", "b"}));
}

TEST(ParseFoldedLineTest, Rejects) {
  std::vector<std::string_view> frames;
  uint64_t count = 0;
  EXPECT_FALSE(ParseFoldedLine("", &frames, &count));
  EXPECT_FALSE(ParseFoldedLine("12", &frames, &count));       // no stack
  EXPECT_FALSE(ParseFoldedLine(" 12", &frames, &count));      // empty stack
  EXPECT_FALSE(ParseFoldedLine("a;b", &frames, &count));      // no count
  EXPECT_FALSE(ParseFoldedLine("a;b 1.5", &frames, &count));  // not an integer
  EXPECT_FALSE(ParseFoldedLine("a;b -3", &frames, &count));   // negative
  EXPECT_FALSE(ParseFoldedLine("a;b\t3", &frames, &count));   // a tab is no separator
  EXPECT_FALSE(ParseFoldedLine("a;b 99999999999999999999", &frames, &count));  // overflow
  EXPECT_TRUE(ParseFoldedLine("a;b 18446744073709551615", &frames, &count));
  EXPECT_EQ(count, UINT64_MAX);
}

TEST(GuessKindTest, Rules) {
  EXPECT_EQ(GuessKind("do_syscall_64_[k]"), FrameKind::kKernel);
  EXPECT_EQ(GuessKind("Interpreter_[j]"), FrameKind::kPerfmap);
  EXPECT_EQ(GuessKind("inlined_[i]"), FrameKind::kNative);
  EXPECT_EQ(GuessKind("[unknown]"), FrameKind::kUnknown);
  EXPECT_EQ(GuessKind(""), FrameKind::kUnknown);
  EXPECT_EQ(GuessKind("[kernel.kallsyms]"), FrameKind::kKernel);
  EXPECT_EQ(GuessKind("JS:*fib /x.js:3"), FrameKind::kPerfmap);
  EXPECT_EQ(GuessKind("LazyCompile:~main /x.js:1"), FrameKind::kPerfmap);
  EXPECT_EQ(GuessKind("Builtin:ArgumentsAdaptorTrampoline"), FrameKind::kPerfmap);
  EXPECT_EQ(GuessKind("Function::call"), FrameKind::kNative);  // a C++ scope
  EXPECT_EQ(GuessKind("main"), FrameKind::kNative);
  EXPECT_EQ(StripKindAnnotation("do_syscall_64_[k]"), "do_syscall_64");
  EXPECT_EQ(StripKindAnnotation("x_[j]"), "x");
  EXPECT_EQ(StripKindAnnotation("_[k]"), "");
  EXPECT_EQ(StripKindAnnotation("x_[z]"), "x_[z]");
  EXPECT_EQ(StripKindAnnotation("main"), "main");
}

TEST(LooksFoldedTest, FoldedAndPerfScript) {
  const std::vector<std::string_view> folded = {"node;main;work 3", "", "node;main 1\r"};
  EXPECT_TRUE(LooksFolded(folded));
  const std::vector<std::string_view> perf = {"node 1234/1234 100.000001:     250000 cpu-clock:u: ",
                                              "\t    55d0c0a1b2c3 work+0x10 (/usr/bin/node)",
                                              "\t    7f0000001000 [unknown] ([unknown])"};
  EXPECT_FALSE(LooksFolded(perf));
  const std::vector<std::string_view> no_callchain = {
      "node 1234 100.000001: ffffffff81000000 do_syscall_64 ([kernel.kallsyms])"};
  EXPECT_FALSE(LooksFolded(no_callchain));
  const std::vector<std::string_view> header = {"# ========", "# captured on: x"};
  EXPECT_FALSE(LooksFolded(header));
  EXPECT_FALSE(LooksFolded(std::vector<std::string_view>{"", "  "}));
  EXPECT_TRUE(LooksFolded(std::vector<std::string_view>{"a;b 1", "cut off", "a;c 2"}));
  EXPECT_FALSE(LooksFolded(std::vector<std::string_view>{"a;b 1", "cut off"}));
  EXPECT_FALSE(LooksFolded(std::vector<std::string_view>{}));
}

// ---- the SVG ----

struct SvgFrame {
  std::string title;
  uint64_t samples, offset, depth;
  std::string kind;
  double y;
};

// Each frame's attributes, title and rect y, by regex (the unit test has no XML parser; the
// integration test parses the SVG with one).
std::vector<SvgFrame> Frames(const std::string& svg) {
  static const std::regex re(
      "<g class=\"f\" data-s=\"(\\d+)\" data-o=\"(\\d+)\" data-d=\"(\\d+)\" data-k=\"(\\w+)\">"
      "<title>([^<]*)</title><rect x=\"[\\d.]+\" y=\"([\\d.]+)\"");
  std::vector<SvgFrame> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    const auto& m = *it;
    out.push_back(
        {m[5], std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), m[4], std::stod(m[6])});
  }
  return out;
}

const SvgFrame* ByTitlePrefix(const std::vector<SvgFrame>& frames, const std::string& prefix) {
  for (const auto& f : frames) {
    if (f.title.rfind(prefix, 0) == 0) return &f;
  }
  return nullptr;
}

TEST(FlameSvgTest, FramesCarryCountsOffsetsAndTitles) {
  FlameTree tree;
  tree.Add(Stack{{"node", FrameKind::kComm}, {"a", FrameKind::kNative}}, 3);
  tree.Add(Stack{{"node", FrameKind::kComm}, {"b", FrameKind::kJitdump}}, 1);
  const std::string svg = RenderFlameSvg(tree, FlameSvgOptions{});
  const auto frames = Frames(svg);
  ASSERT_EQ(frames.size(), 4u);
  const SvgFrame* a = ByTitlePrefix(frames, "a (");
  const SvgFrame* b = ByTitlePrefix(frames, "b (");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->title, "a (3 samples, 75.00%)");
  EXPECT_EQ(b->title, "b (1 sample, 25.00%)");
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(b->offset, 3u);  // after a: sorted by name
  EXPECT_EQ(b->kind, "jitdump");
  EXPECT_EQ(ByTitlePrefix(frames, "all (")->samples, 4u);
  EXPECT_NE(svg.find("data-total=\"4\""), std::string::npos);
  // Self-contained: no external reference of any kind.
  EXPECT_EQ(svg.find("http://", svg.find("xmlns=\"http://www.w3.org/2000/svg\"") + 10),
            std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("@import"), std::string::npos);
}

TEST(FlameSvgTest, ReverseFlipsDepth) {
  FlameTree tree;
  tree.Add(Stack{{"a", FrameKind::kNative}, {"b", FrameKind::kNative}}, 1);
  FlameSvgOptions options;
  const auto up = Frames(RenderFlameSvg(tree, options));
  options.reverse = true;
  const auto down = Frames(RenderFlameSvg(tree, options));
  // Flame graph: the root is lowest (largest y); icicle: highest.
  EXPECT_GT(ByTitlePrefix(up, "all")->y, ByTitlePrefix(up, "b (")->y);
  EXPECT_LT(ByTitlePrefix(down, "all")->y, ByTitlePrefix(down, "b (")->y);
}

TEST(FlameSvgTest, NarrowSiblingsMergeIntoOneBox) {
  FlameTree tree;
  tree.Add(Stack{{"big", FrameKind::kNative}}, 100000);
  for (int i = 0; i < 5000; ++i) {
    tree.Add(Stack{{"small" + std::to_string(i), FrameKind::kNative}, {"leaf", FrameKind::kNative}},
             1);
  }
  FlameSvgOptions options;  // 1180 px for 105000 samples: a 1-sample frame is 0.011 px
  const std::string svg = RenderFlameSvg(tree, options);
  const auto frames = Frames(svg);
  ASSERT_EQ(frames.size(), 3u);  // all, big, the merged box
  const SvgFrame* merged = ByTitlePrefix(frames, "[5000 frames merged]");
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->samples, 5000u);
  EXPECT_EQ(merged->offset, 100000u);
  EXPECT_EQ(merged->kind, "merged");
  EXPECT_LT(svg.size(), 20000u);
  // With no minimum every frame is drawn.
  options.min_width = 0;
  EXPECT_EQ(Frames(RenderFlameSvg(tree, options)).size(), 2u + 10000u);
}

TEST(FlameSvgTest, DeepStacksAreCut) {
  FlameTree tree;
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back("f" + std::to_string(i));
  Stack stack;
  for (const auto& n : names) stack.push_back({n, FrameKind::kNative});
  tree.Add(stack, 2);
  FlameSvgOptions options;
  options.max_depth = 10;
  const auto frames = Frames(RenderFlameSvg(tree, options));
  ASSERT_EQ(frames.size(), 12u);  // root, f0..f9, and the box below
  const SvgFrame* cut = ByTitlePrefix(frames, "[deeper frames not drawn]");
  ASSERT_NE(cut, nullptr);
  EXPECT_EQ(cut->depth, 11u);
  EXPECT_EQ(cut->samples, 2u);
}

TEST(AppendXmlTextTest, EscapesAndReplaces) {
  std::string out;
  AppendXmlText("a&b<c>d\"e'f", &out);
  EXPECT_EQ(out, "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  out.clear();
  AppendXmlText("é中文😀", &out);
  EXPECT_EQ(out, "é中文😀");
  out.clear();
  AppendXmlText(std::string_view("a\x01\tb\x7f", 5), &out);
  EXPECT_EQ(out, "a\uFFFD\uFFFDb\uFFFD");
  out.clear();
  // Invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong '/', a surrogate,
  // past U+10FFFF, U+FFFE.
  AppendXmlText("\x80|\xe4\xb8|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xef\xbf\xbe", &out);
  // Every byte that is not part of U+FFFD is ASCII.
  std::string stripped = out;
  for (size_t p; (p = stripped.find("\uFFFD")) != std::string::npos;) stripped.erase(p, 3);
  EXPECT_EQ(stripped, "|||||");
  out.clear();
  AppendXmlText("abcdefgh", &out, 5);
  EXPECT_EQ(out, "abc..");
  out.clear();
  AppendXmlText("中文中文中文", &out, 4);
  EXPECT_EQ(out, "中文..");
  out.clear();
  AppendXmlText("abc", &out, 3);
  EXPECT_EQ(out, "abc");
}

TEST(FlameSvgTest, HostileNamesStayData) {
  FlameTree tree;
  const std::vector<std::string> hostile = {
      "</script><script>alert(1)</script>", "]]><x/>",  "a&&b",     "<!-- -->", "\"'><",
      std::string("nul\0byte", 8),          "\xff\xfe", "<![CDATA["};
  for (const auto& n : hostile) tree.Add(Stack{{n, FrameKind::kNative}}, 1);
  FlameSvgOptions options;
  options.title = "</title><script>x</script>";
  options.subtitle = "]]>";
  const std::string svg = RenderFlameSvg(tree, options);
  // One script element, one CDATA end per style and script; no raw markup from a name.
  size_t scripts = 0;
  for (size_t p = 0; (p = svg.find("<script", p)) != std::string::npos; ++p) ++scripts;
  EXPECT_EQ(scripts, 1u);
  size_t cdata_ends = 0;
  for (size_t p = 0; (p = svg.find("]]>", p)) != std::string::npos; ++p) ++cdata_ends;
  EXPECT_EQ(cdata_ends, 2u);
  EXPECT_EQ(svg.find("<x/>"), std::string::npos);
  EXPECT_EQ(svg.find("<!-- -->"), std::string::npos);
  EXPECT_EQ(svg.find(std::string("\0", 1)), std::string::npos);
  EXPECT_NE(svg.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; (1 sample"),
            std::string::npos);
  EXPECT_NE(svg.find("a&amp;&amp;b (1 sample"), std::string::npos);
}

}  // namespace
}  // namespace jitsym::client
