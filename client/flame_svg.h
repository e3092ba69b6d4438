// Draws a FlameTree as one self-contained interactive SVG, as flamegraph.pl does: frames sized
// by samples, coloured by kind, with hover details, click to zoom and a regex search that shows
// the matched share. Everything is inline (style, script, no fonts or network): the file opens
// anywhere, also from a mail attachment.
//
// What a reader (or a test) can rely on, per drawn frame:
//   <g class="f" data-s="SAMPLES" data-o="OFFSET" data-d="DEPTH" data-k="KIND">
//     <title>NAME (SAMPLES samples, P%)</title><rect .../><text ...>LABEL</text></g>
// OFFSET is the frame's left edge in samples from the root's; KIND a FrameKindName or "merged".
// Names are XML-escaped, invalid UTF-8 and control characters become U+FFFD, and the script
// reads names from the DOM only: no name is ever part of the script's text. The page honours
// `#search=REGEX` in its URL.
#ifndef JITSYM_CLIENT_FLAME_SVG_H_
#define JITSYM_CLIENT_FLAME_SVG_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "client/flame_graph.h"

namespace jitsym::client {

struct FlameSvgOptions {
  std::string title = "Flame Graph";
  std::string subtitle;  // what the input was, e.g. "folded stacks from stdin"
  double width = 1200;   // pixels
  // Children of one frame narrower than this (pixels) are drawn as one "[N frames merged]" box
  // (none if that is still narrower), which keeps very wide profiles small.
  double min_width = 0.1;
  bool reverse = false;  // icicle: the root at the top
  // Frames deeper than this are drawn as one "[deeper frames not drawn]" box per frame at this
  // depth: a browser does not lay out a million-pixel-high SVG.
  uint32_t max_depth = 4096;
};

inline constexpr double kMinSvgWidth = 100;
inline constexpr double kMaxSvgWidth = 100000;

std::string RenderFlameSvg(const FlameTree& tree, const FlameSvgOptions& options);
void RenderFlameSvg(const FlameTree& tree, const FlameSvgOptions& options, std::string* out);

// Appends `text` as XML character data (or an attribute value): &<>"' escaped, invalid UTF-8,
// control characters and the non-characters U+FFFE/U+FFFF replaced by U+FFFD. At most
// `max_chars` characters; when cut, the last two of those become "..".
void AppendXmlText(std::string_view text, std::string* out, size_t max_chars = SIZE_MAX);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_FLAME_SVG_H_
