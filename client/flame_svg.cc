// The flame graph SVG (see flame_svg.h): layout, colours, escaping, and the page's script.
#include "client/flame_svg.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

namespace jitsym::client {
namespace {

constexpr double kXPad = 10;
constexpr double kFrameHeight = 16;
constexpr double kFontSize = 12;
constexpr double kCharWidth = kFontSize * 0.59;  // Verdana's average, as flamegraph.pl assumes
constexpr double kTop = 92;                      // title, subtitle, legend and details above
constexpr double kBottom = 10;

// The page's behaviour. It reads every name from the DOM (a frame's <title>) and writes names
// only with textContent: names never become script or markup. No "]]>" in here (CDATA).
constexpr char kScript[] = R"JS(
(function () {
  'use strict';
  var svg = document.documentElement;
  var xpad = +svg.getAttribute('data-xpad');
  var fw = +svg.getAttribute('data-fw');
  var total = +svg.getAttribute('data-total');
  var charw = +svg.getAttribute('data-charw');
  var details = document.getElementById('details');
  var matched = document.getElementById('matched');
  var unzoomBtn = document.getElementById('unzoom');
  var clearBtn = document.getElementById('clear');
  var searchBtn = document.getElementById('search');
  var hlFill = 'rgb(230,0,230)';
  var frames = [];
  var byG = new Map();
  var gs = document.querySelectorAll('g.f');
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i];
    var title = g.querySelector('title').textContent;
    var f = {
      g: g, rect: g.querySelector('rect'), text: g.querySelector('text'), title: title,
      // The title is "NAME (N samples, P%)": the last " (" starts what was added to the name.
      name: title.slice(0, title.lastIndexOf(' (')),
      o: +g.getAttribute('data-o'), s: +g.getAttribute('data-s'), d: +g.getAttribute('data-d')
    };
    f.fill = f.rect.getAttribute('fill');
    frames.push(f);
    byG.set(g, f);
  }
  function frameOf(e) {
    var g = e.target.closest ? e.target.closest('g.f') : null;
    return g ? byG.get(g) : null;
  }
  function fit(f, w) {
    var chars = Math.floor(w / charw);
    if (chars < 3) return '';
    var cps = Array.from(f.name);
    return cps.length <= chars ? f.name : cps.slice(0, chars - 2).join('') + '..';
  }
  function place(f, x, w) {
    f.g.style.display = '';
    f.rect.setAttribute('x', x.toFixed(2));
    f.rect.setAttribute('width', w.toFixed(2));
    if (f.text) {
      f.text.setAttribute('x', (x + 3).toFixed(2));
      f.text.textContent = fit(f, w);
    }
  }
  function zoom(z) {
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      f.g.classList.remove('anc');
      if (z === null) {
        place(f, xpad + f.o * fw / total, f.s * fw / total);
      } else if (f.d < z.d) {
        if (f.o <= z.o && f.o + f.s >= z.o + z.s) {  // an ancestor: it stays, full width
          place(f, xpad, fw);
          f.g.classList.add('anc');
        } else {
          f.g.style.display = 'none';
        }
      } else if (f.o >= z.o && f.o + f.s <= z.o + z.s) {
        place(f, xpad + (f.o - z.o) * fw / z.s, f.s * fw / z.s);
      } else {
        f.g.style.display = 'none';
      }
    }
    unzoomBtn.classList.toggle('hide', z === null);
  }
  function clearSearch() {
    for (var i = 0; i < frames.length; i++) {
      frames[i].rect.setAttribute('fill', frames[i].fill);
      frames[i].g.classList.remove('hl');
    }
    matched.textContent = '';
    matched.removeAttribute('data-samples');
    clearBtn.classList.add('hide');
  }
  function search(term) {
    clearSearch();
    if (!term) return;
    var re;
    try {
      re = new RegExp(term);
    } catch (err) {  // not a regex: a substring
      re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    }
    var ranges = [];
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      if (re.test(f.name)) {
        f.rect.setAttribute('fill', hlFill);
        f.g.classList.add('hl');
        ranges.push([f.o, f.o + f.s]);
      }
    }
    // A match inside a match is the same samples: add up the union of the ranges.
    ranges.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var sum = 0, end = -1;
    for (var j = 0; j < ranges.length; j++) {
      var r = ranges[j];
      if (r[0] >= end) {
        sum += r[1] - r[0];
        end = r[1];
      } else if (r[1] > end) {
        sum += r[1] - end;
        end = r[1];
      }
    }
    matched.textContent = 'Matched: ' + (total ? 100 * sum / total : 0).toFixed(2) + '%';
    matched.setAttribute('data-samples', String(sum));
    clearBtn.classList.remove('hide');
  }
  function ask() {
    var term = window.prompt('Search (regular expression or text)', '');
    if (term !== null) search(term);
  }
  function applyHash() {
    var h = window.location.hash;
    if (h.indexOf('#search=') !== 0) return;
    var term = h.slice(8);
    try {
      term = decodeURIComponent(term);
    } catch (err) {
    }
    search(term);
  }
  var area = document.getElementById('frames');
  area.addEventListener('mouseover', function (e) {
    var f = frameOf(e);
    if (f) details.textContent = f.title;
  });
  area.addEventListener('mouseout', function (e) {
    if (frameOf(e)) details.textContent = ' ';
  });
  area.addEventListener('click', function (e) {
    var f = frameOf(e);
    if (f) zoom(f.d === 0 ? null : f);
  });
  unzoomBtn.addEventListener('click', function () { zoom(null); });
  clearBtn.addEventListener('click', clearSearch);
  searchBtn.addEventListener('click', ask);
  window.addEventListener('keydown', function (e) {
    if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) {
      e.preventDefault();
      ask();
    } else if (e.key === 'Escape') {
      clearSearch();
      zoom(null);
    }
  });
  window.addEventListener('hashchange', applyHash);
  // A graph taller than the window scrolls; its header (search, details) stays at the top.
  var header = document.getElementById('header');
  window.addEventListener('scroll', function () {
    header.setAttribute('transform', 'translate(0,' + window.scrollY + ')');
  });
  applyHash();
  // A flame graph grows up from its root: a graph taller than the window opens scrolled to the
  // bottom, where the widest frames are (an icicle graph has them at the top already).
  var root = document.documentElement;
  var height = parseFloat(root.getAttribute('height'));
  if (root.getAttribute('data-reverse') !== '1' && height > window.innerHeight) {
    window.scrollTo(0, height - window.innerHeight);
  }
})();
)JS";

constexpr char kStyle[] = R"CSS(
text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; fill: #000; }
#title { font-size: 17px; text-anchor: middle; }
#subtitle { text-anchor: middle; fill: #444; }
#matched { text-anchor: end; }
.btn { cursor: pointer; fill: #1a3d8f; text-decoration: underline; }
.right { text-anchor: end; }
.hide { display: none; }
g.f { cursor: pointer; }
g.f text { pointer-events: none; }
g.f:hover rect { stroke: #000; stroke-width: 0.5; }
g.anc rect { opacity: 0.55; }
)CSS";

// FNV-1a: a colour that stays the same for a name from one graph to the next.
uint64_t NameHash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

struct Rgb {
  int r, g, b;
};

// Hues per kind: flamegraph.pl's warm reds and oranges for native code, a distinct hue per JIT
// format, blue for the kernel, grey for what nobody named. v1..v3 in [0, 1) vary the shade.
Rgb KindColour(FrameKind kind, double v1, double v2, double v3) {
  auto c = [](double base, double range, double v) { return static_cast<int>(base + range * v); };
  switch (kind) {
    case FrameKind::kNative:
      return {c(205, 50, v3), c(0, 190, v1), c(0, 55, v2)};
    case FrameKind::kKernel:
      return {c(90, 50, v1), c(150, 50, v1), c(215, 40, v2)};
    case FrameKind::kJitdump:
      return {c(50, 60, v1), c(180, 50, v2), c(50, 60, v3)};
    case FrameKind::kPerfmap:
      return {c(40, 50, v1), c(185, 40, v2), c(190, 40, v2)};
    case FrameKind::kR2rmap:
      return {c(150, 50, v1), c(95, 45, v2), c(200, 45, v3)};
    case FrameKind::kMlpd:
      return {c(160, 45, v1), c(200, 35, v2), c(40, 50, v3)};
    case FrameKind::kUnknown: {
      const int g = c(165, 40, v1);
      return {g, g, g};
    }
    case FrameKind::kRoot:
    case FrameKind::kComm:
      return {c(205, 25, v1), c(205, 25, v1), c(185, 25, v1)};
  }
  return {200, 200, 200};
}

Rgb NameColour(FrameKind kind, std::string_view name) {
  const uint64_t h = NameHash(name);
  auto v = [h](int shift) { return static_cast<double>((h >> shift) & 0xFFFF) / 65536.0; };
  return KindColour(kind, v(0), v(16), v(32));
}

constexpr Rgb kMergedColour = {215, 215, 215};

void AppendRgb(Rgb c, std::string* out) {
  char buf[48];
  const int n = std::snprintf(buf, sizeof(buf), "rgb(%d,%d,%d)", c.r, c.g, c.b);
  out->append(buf, n);
}

void AppendNumber(double v, std::string* out) {
  char buf[48];
  const int n = std::snprintf(buf, sizeof(buf), "%.2f", v);
  out->append(buf, n);
}

void AppendUint(uint64_t v, std::string* out) {
  char buf[24];
  const int n = std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(v));
  out->append(buf, n);
}

// The next code point of `s` from *i, or U+FFFD for a byte that does not start a valid UTF-8
// sequence (overlong forms, surrogates and values past U+10FFFF included); moves *i past it.
char32_t NextCodePoint(std::string_view s, size_t* i) {
  const auto b0 = static_cast<unsigned char>(s[*i]);
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  size_t len = 0;
  char32_t cp = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++*i;
    return 0xFFFD;
  }
  if (s.size() - *i < len) {
    ++*i;
    return 0xFFFD;
  }
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[*i + k]);
    if ((b & 0xC0) != 0x80) {
      ++*i;
      return 0xFFFD;
    }
    cp = cp << 6 | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*i;
    return 0xFFFD;
  }
  *i += len;
  return cp;
}

void AppendCodePoint(char32_t cp, std::string* out) {
  switch (cp) {
    case '&':
      out->append("&amp;");
      return;
    case '<':
      out->append("&lt;");
      return;
    case '>':
      out->append("&gt;");
      return;
    case '"':
      out->append("&quot;");
      return;
    case '\'':
      out->append("&apos;");
      return;
    default:
      break;
  }
  // XML 1.0 has no control characters but tab and newline, which a one-line name should not
  // have either; U+FFFE and U+FFFF are not characters at all.
  if (cp < 0x20 || cp == 0x7F || cp == 0xFFFE || cp == 0xFFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | cp >> 6));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | cp >> 12));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | cp >> 18));
    out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// What the SVG needs per drawn box.
struct Box {
  std::string_view name;  // of a tree node; empty for a synthetic box (label set)
  std::string label;      // synthetic boxes: "[12 frames merged]"
  std::string_view kind_name;
  Rgb colour;
  uint64_t samples;
  uint64_t offset;
  uint32_t depth;
};

class Renderer {
 public:
  Renderer(const FlameTree& tree, const FlameSvgOptions& options, std::string* out)
      : tree_(tree), options_(options), out_(*out) {
    width_ = std::clamp(options.width, kMinSvgWidth, kMaxSvgWidth);
    frame_width_ = width_ - 2 * kXPad;
    total_ = tree.total_samples();
    scale_ = total_ > 0 ? frame_width_ / static_cast<double>(total_) : 0;
    min_width_ = std::max(options.min_width, 0.0);
  }

  void Render() {
    std::vector<Box> boxes;
    Layout(&boxes);
    uint32_t deepest = 0;
    for (const Box& b : boxes) deepest = std::max(deepest, b.depth);
    levels_ = deepest + 1;
    const double height = kTop + levels_ * kFrameHeight + kBottom;
    Header(height);
    out_.append("<g id=\"frames\">\n");
    for (const Box& b : boxes) Frame(b);
    out_.append("</g>\n");
    Controls();
    out_.append("<script type=\"text/ecmascript\"><![CDATA[");
    out_.append(kScript);
    out_.append("]]></script>\n</svg>\n");
  }

 private:
  double Px(uint64_t samples) const { return static_cast<double>(samples) * scale_; }

  // Depth first from the root; children left to right by name. Children narrower than
  // min_width become one merged box after the drawn ones.
  void Layout(std::vector<Box>* boxes) {
    if (total_ == 0) return;
    struct Item {
      FlameTree::NodeId node;
      uint64_t offset;
    };
    std::vector<Item> stack = {{FlameTree::kRootNode, 0}};
    std::vector<Item> next;
    while (!stack.empty()) {
      const Item item = stack.back();
      stack.pop_back();
      const FlameTree::NodeId id = item.node;
      const std::string_view name = tree_.name(id);
      const FrameKind kind = tree_.kind(id);
      boxes->push_back(Box{name,
                           {},
                           FrameKindName(kind),
                           NameColour(kind, name),
                           tree_.total(id),
                           item.offset,
                           tree_.depth(id)});
      const uint64_t below = tree_.total(id) - tree_.self(id);
      if (below == 0) continue;
      if (tree_.depth(id) >= options_.max_depth) {
        if (Px(below) >= min_width_) {
          boxes->push_back(Box{{},
                               "[deeper frames not drawn]",
                               "merged",
                               kMergedColour,
                               below,
                               item.offset,
                               tree_.depth(id) + 1});
        }
        continue;
      }
      uint64_t offset = item.offset;
      uint64_t merged = 0;
      uint64_t merged_count = 0;
      next.clear();
      for (FlameTree::NodeId c : tree_.SortedChildren(id)) {
        const uint64_t s = tree_.total(c);
        if (s == 0) continue;
        if (Px(s) < min_width_) {
          merged += s;
          ++merged_count;
          continue;
        }
        next.push_back({c, offset});
        offset += s;
      }
      if (merged_count > 0 && Px(merged) >= min_width_) {
        std::string label = "[" + std::to_string(merged_count) +
                            (merged_count == 1 ? " frame merged]" : " frames merged]");
        boxes->push_back(Box{
            {}, std::move(label), "merged", kMergedColour, merged, offset, tree_.depth(id) + 1});
      }
      stack.insert(stack.end(), next.rbegin(), next.rend());
    }
  }

  double Y(uint32_t depth) const {
    const uint32_t row = options_.reverse ? depth : levels_ - 1 - depth;
    return kTop + row * kFrameHeight;
  }

  void Header(double height) {
    std::string& o = out_;
    o.append(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
        "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"");
    AppendNumber(width_, &o);
    o.append("\" height=\"");
    AppendNumber(height, &o);
    o.append("\" viewBox=\"0 0 ");
    AppendNumber(width_, &o);
    o.push_back(' ');
    AppendNumber(height, &o);
    o.append("\" data-xpad=\"");
    AppendNumber(kXPad, &o);
    o.append("\" data-fw=\"");
    AppendNumber(frame_width_, &o);
    o.append("\" data-charw=\"");
    AppendNumber(kCharWidth, &o);
    o.append("\" data-total=\"");
    AppendUint(total_, &o);
    o.append("\" data-reverse=\"");
    o.append(options_.reverse ? "1" : "0");
    o.append("\">\n<style type=\"text/css\"><![CDATA[");
    o.append(kStyle);
    o.append(
        "]]></style>\n<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f8f8f4\"/>\n");
  }

  // Title, buttons, legend and the details line: after the frames, so that it is drawn over
  // them when the script keeps it at the top of a scrolled window.
  void Controls() {
    std::string& o = out_;
    o.append("<g id=\"header\"><rect x=\"0\" y=\"0\" width=\"100%\" height=\"");
    AppendNumber(kTop - 4, &o);
    o.append("\" fill=\"#f8f8f4\"/>\n<text id=\"title\" x=\"");
    AppendNumber(width_ / 2, &o);
    o.append("\" y=\"24\">");
    AppendXmlText(options_.title, &o, 200);
    o.append("</text>\n");
    if (!options_.subtitle.empty()) {
      o.append("<text id=\"subtitle\" x=\"");
      AppendNumber(width_ / 2, &o);
      o.append("\" y=\"44\">");
      AppendXmlText(options_.subtitle, &o, 300);
      o.append("</text>\n");
    }
    o.append("<text id=\"unzoom\" class=\"btn hide\" x=\"10\" y=\"24\">Reset Zoom</text>\n");
    o.append("<text id=\"search\" class=\"btn right\" x=\"");
    AppendNumber(width_ - kXPad, &o);
    o.append("\" y=\"24\">Search</text>\n<text id=\"clear\" class=\"btn right hide\" x=\"");
    AppendNumber(width_ - kXPad - 60, &o);
    o.append("\" y=\"24\">Clear</text>\n");
    Legend();
    o.append("<text id=\"details\" x=\"10\" y=\"80\"> </text>\n<text id=\"matched\" x=\"");
    AppendNumber(width_ - kXPad, &o);
    o.append("\" y=\"80\"></text>\n</g>\n");
  }

  // One swatch per kind the graph has.
  void Legend() {
    std::array<bool, kFrameKindCount> present{};
    for (size_t i = 0; i < tree_.node_count(); ++i) {
      const auto id = static_cast<FlameTree::NodeId>(i);
      if (tree_.total(id) > 0) present[static_cast<size_t>(tree_.kind(id))] = true;
    }
    out_.append("<g id=\"legend\">");
    double x = kXPad;
    for (size_t k = 0; k < kFrameKindCount; ++k) {
      if (!present[k]) continue;
      const auto kind = static_cast<FrameKind>(k);
      const std::string_view label = FrameKindName(kind);
      out_.append("<rect x=\"");
      AppendNumber(x, &out_);
      out_.append("\" y=\"52\" width=\"12\" height=\"12\" fill=\"");
      AppendRgb(KindColour(kind, 0.5, 0.5, 0.5), &out_);
      out_.append("\"/><text x=\"");
      AppendNumber(x + 16, &out_);
      out_.append("\" y=\"62\">");
      out_.append(label);
      out_.append("</text>");
      x += 16 + kCharWidth * static_cast<double>(label.size()) + 14;
    }
    out_.append("</g>\n");
  }

  void Frame(const Box& b) {
    std::string& o = out_;
    const std::string_view name = b.label.empty() ? b.name : std::string_view(b.label);
    const double x = kXPad + Px(b.offset);
    const double w = Px(b.samples);
    o.append("<g class=\"f\" data-s=\"");
    AppendUint(b.samples, &o);
    o.append("\" data-o=\"");
    AppendUint(b.offset, &o);
    o.append("\" data-d=\"");
    AppendUint(b.depth, &o);
    o.append("\" data-k=\"");
    o.append(b.kind_name);
    o.append("\"><title>");
    AppendXmlText(name, &o);
    o.append(" (");
    AppendUint(b.samples, &o);
    o.append(b.samples == 1 ? " sample, " : " samples, ");
    AppendNumber(100.0 * static_cast<double>(b.samples) / static_cast<double>(total_), &o);
    o.append("%)</title><rect x=\"");
    AppendNumber(x, &o);
    o.append("\" y=\"");
    AppendNumber(Y(b.depth), &o);
    o.append("\" width=\"");
    AppendNumber(w, &o);
    o.append("\" height=\"");
    AppendNumber(kFrameHeight - 1, &o);
    o.append("\" fill=\"");
    AppendRgb(b.colour, &o);
    o.append("\"/><text x=\"");
    AppendNumber(x + 3, &o);
    o.append("\" y=\"");
    AppendNumber(Y(b.depth) + 11.5, &o);
    o.append("\">");
    const auto chars = static_cast<size_t>(w / kCharWidth);
    if (chars >= 3) AppendXmlText(name, &o, chars);
    o.append("</text></g>\n");
  }

  const FlameTree& tree_;
  const FlameSvgOptions& options_;
  std::string& out_;
  double width_ = 0, frame_width_ = 0, scale_ = 0, min_width_ = 0;
  uint64_t total_ = 0;
  uint32_t levels_ = 1;
};

}  // namespace

void AppendXmlText(std::string_view text, std::string* out, size_t max_chars) {
  if (max_chars == 0) return;
  size_t chars = 0;
  bool cut = false;
  for (size_t i = 0; i < text.size(); NextCodePoint(text, &i)) {
    if (++chars > max_chars) {
      cut = true;
      break;
    }
  }
  const size_t keep = cut ? (max_chars >= 2 ? max_chars - 2 : 0) : SIZE_MAX;
  size_t i = 0;
  for (size_t n = 0; i < text.size() && n < keep; ++n) {
    AppendCodePoint(NextCodePoint(text, &i), out);
  }
  if (cut) out->append(max_chars >= 2 ? ".." : ".");
}

void RenderFlameSvg(const FlameTree& tree, const FlameSvgOptions& options, std::string* out) {
  Renderer(tree, options, out).Render();
}

std::string RenderFlameSvg(const FlameTree& tree, const FlameSvgOptions& options) {
  std::string out;
  RenderFlameSvg(tree, options, &out);
  return out;
}

}  // namespace jitsym::client
