// Folded stacks as `jitsym flamegraph` reads them, through the tree to the SVG: no crash, and
// whatever the names, the SVG stays one document with its one script: valid UTF-8, no control
// characters but newlines, no markup from a name (a "]]>" or "<script" only where the renderer
// writes them).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "client/flame_graph.h"
#include "client/flame_svg.h"

namespace {

size_t Count(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string_view::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

bool ValidUtf8WithoutControls(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
      ++i;
      continue;
    }
    const size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || s.size() - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jitsym::client;
  if (size == 0) return 0;
  // The first byte picks the options.
  FlameSvgOptions options;
  options.reverse = data[0] & 1;
  options.min_width = (data[0] & 2) ? 0 : 0.1;
  options.max_depth = (data[0] & 4) ? 3 : 4096;
  options.width = (data[0] & 8) ? 100 : 1200;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  options.title = std::string(text.substr(0, 40));

  std::vector<std::string_view> lines;
  std::vector<std::string_view> names;
  std::vector<FlameFrame> frames;
  FlameTree tree;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (lines.size() < 4) lines.push_back(line);
    uint64_t count = 0;
    if (!ParseFoldedLine(line, &names, &count)) continue;
    frames.clear();
    for (std::string_view name : names) {
      if (name.data() < line.data() || name.data() + name.size() > line.data() + line.size()) {
        std::abort();  // frames are views into the line
      }
      frames.push_back({StripKindAnnotation(name), GuessKind(name)});
    }
    (void)tree.Add(frames, count % 1000);
  }
  (void)LooksFolded(lines);
  if (tree.total_samples() == 0) return 0;
  const std::string svg = RenderFlameSvg(tree, options);
  if (!ValidUtf8WithoutControls(svg)) std::abort();
  if (Count(svg, "<script") != 1 || Count(svg, "]]>") != 2) std::abort();
  if (Count(svg, "<g class=\"f\"") == 0) std::abort();
  return 0;
}
