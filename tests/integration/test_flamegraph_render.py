#!/usr/bin/env python3
"""`jitsym flamegraph` on folded stacks (no daemon needed): the SVG parses as XML
(xml.etree), every name's sample count read back from it equals the input's, hostile names
(&, <, quotes, ]]>, </script>, non-ASCII, invalid UTF-8, control characters) come out as text,
a 2,000-frame-deep and a 50,000-leaf-wide profile stay usable, and headless Chromium draws it
(a screenshot that is not blank) and runs its script: `#search=` highlights matches and shows
their share, computed by the page, counting nested matches once; real mouse and keyboard input
hovers, zooms, resets and searches (Ctrl-F)."""

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from collections import defaultdict
from urllib.parse import quote

import browser
from harness import Harness, check

h = Harness(__doc__)
SVG = "{http://www.w3.org/2000/svg}"
TITLE_RE = re.compile(r"^(.*) \((\d+) samples?, [\d.]+%\)$", re.S)


def flamegraph(stdin_bytes, *args, expect=0):
    """Runs jitsym flamegraph with stdin; returns (status, stdout bytes, stderr text)."""
    res = subprocess.run([h.jitsym, "flamegraph", *args], input=stdin_bytes, capture_output=True,
                         timeout=60)
    err = res.stderr.decode(errors="replace")
    if expect is not None:
        check(res.returncode == expect,
              f"jitsym flamegraph {args}: status {res.returncode}, wanted {expect}: {err[-800:]}")
    return res.returncode, res.stdout, err


def render(name, folded, *args):
    """Writes folded (str or bytes) through jitsym flamegraph -o; returns the SVG's path."""
    path = os.path.join(h.root, name + ".svg")
    data = folded.encode() if isinstance(folded, str) else folded
    flamegraph(data, "-o", path, *args)
    return path


def frames(path):
    """Every frame of the SVG: dicts of name, samples (title and data-s, which must agree),
    offset, depth, kind, fill."""
    root = ET.parse(path).getroot()
    out = []
    for g in root.iter(SVG + "g"):
        if g.get("class", "").split()[:1] != ["f"]:
            continue
        title = g.find(SVG + "title").text or ""
        m = TITLE_RE.match(title)
        check(m, f"frame title {title!r} is not 'NAME (N samples, P%)'")
        samples = int(g.get("data-s"))
        check(int(m.group(2)) == samples, f"title {title!r} disagrees with data-s={samples}")
        rect = g.find(SVG + "rect")
        out.append({"name": m.group(1), "samples": samples, "offset": int(g.get("data-o")),
                    "depth": int(g.get("data-d")), "kind": g.get("data-k"),
                    "y": float(rect.get("y")), "fill": rect.get("fill")})
    check(out, f"{path} has no frames")
    return out


def oracle(lines):
    """(depth, name) -> samples, from folded lines (str), as a flame graph must show them:
    offsets stripped, the root 'all' at depth 0."""
    sums = defaultdict(int)
    total = 0
    for line in lines:
        stack, count = line.rsplit(" ", 1)
        count = int(count)
        total += count
        for depth, name in enumerate(stack.split(";"), start=1):
            sums[(depth, re.sub(r"\+0x[0-9a-fA-F]+$", "", name))] += count
    sums[(0, "all")] = total
    return sums


def by_depth_name(fs):
    sums = defaultdict(int)
    for f in fs:
        sums[(f["depth"], f["name"])] += f["samples"]
    return sums


def check_not_blank(svg_path, png_name, min_colours=4):
    png = browser.screenshot("file://" + svg_path, os.path.join(h.root, png_name))
    stats = browser.png_stats(png)
    check(stats["colours"] >= min_colours and stats["non_white"] > 5000,
          f"the screenshot of {svg_path} looks blank: {stats}")
    return stats


@h.case
def counts_match_the_input():
    lines = ["node;_start;main;run+0x1c;parse 30", "node;_start;main;run+0x20;eval 50",
             "node;_start;main;gc 20", "node;LazyCompile:*fib /app/fib.js:3 45",
             "node;entry_SYSCALL_64_[k];do_syscall_64_[k] 5", "java;Interpreter_[j] 7",
             "node;_start;main;run;parse 3"]
    path = render("counts", "\n".join(lines) + "\n")
    fs = frames(path)
    want = oracle([re.sub(r"_\[[kj]\]", "", l) for l in lines])
    check(by_depth_name(fs) == want,
          f"counts differ:\n got  {sorted(by_depth_name(fs).items())}\n want {sorted(want.items())}")
    kinds = {f["name"]: f["kind"] for f in fs}
    check(kinds["do_syscall_64"] == "kernel", f"kernel frame kind {kinds['do_syscall_64']}")
    check(kinds["Interpreter"] == "perfmap", f"_[j] frame kind {kinds['Interpreter']}")
    check(kinds["LazyCompile:*fib /app/fib.js:3"] == "perfmap", "V8 frame kind")
    check(kinds["main"] == "native", "native frame kind")
    # Colours by kind: kernel frames are not drawn in the native hues.
    fills = {f["name"]: f["fill"] for f in fs}
    check(fills["do_syscall_64"] != fills["main"], "kernel and native share a colour")
    text = open(path, encoding="utf-8").read()
    check("folded stacks from stdin, 160 samples" in text, "subtitle names the input and total")
    check_not_blank(path, "counts.png")


@h.case
def hostile_names_render():
    names = [b"a&&b", b"x<y>z", b'say "hi"', b"it's", b"end]]>here", b"</script><script>boom()",
             "café é".encode(), "中文函数".encode(), "emoji 😀 frame".encode(),
             b"bad \xff\xfe utf8", b"ctl \x01\x1b here", b"<![CDATA[x", b"&amp literal &#38 x"]
    data = b"".join(b"prog;" + n + b" " + str(i + 1).encode() + b"\n" for i, n in enumerate(names))
    path = render("hostile", data, "--title", "</title><script>t()</script> & ]]>")
    fs = frames(path)  # parses as XML, or this fails
    got = {f["name"]: f["samples"] for f in fs if f["depth"] == 2}

    def expected_text(raw):
        text = raw.decode("utf-8", errors="replace")
        return "".join("\ufffd" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text)

    for i, raw in enumerate(names):
        name = expected_text(raw)
        check(got.get(name) == i + 1, f"{raw!r}: read back {got.get(name)}, wanted {i + 1}")
    root = ET.parse(path).getroot()
    title = [t for t in root.iter(SVG + "text") if t.get("id") == "title"][0]
    check(title.text == "</title><script>t()</script> & ]]>", f"title read back {title.text!r}")
    scripts = list(root.iter(SVG + "script"))
    check(len(scripts) == 1, f"{len(scripts)} script elements")
    check_not_blank(path, "hostile.png")
    # The page's script still runs with these names, and finds the hostile one as text.
    term = "</script>"
    dom = browser.dump_dom("file://" + path + "#search=" + quote(term, safe=""))
    m = re.search(r'id="matched"[^>]*>Matched: ([\d.]+)%<', dom)
    check(m, "no Matched: line after #search in the dumped DOM")
    total = sum(range(1, len(names) + 1))
    want = 100.0 * 6 / total
    check(abs(float(m.group(1)) - want) < 0.006, f"Matched {m.group(1)}%, wanted {want:.2f}%")
    check(dom.count("<script") == 1, "a name became a script element")


@h.case
def search_counts_nested_matches_once():
    # ^a$ matches a at depth 2 (5 samples), a nested inside it (3) and a under d (5): 10 of 20.
    path = render("search", "c;a;b;a 3\nc;a 2\nc;d;a 5\nc;e 10\n")
    dom = browser.dump_dom("file://" + path + "#search=" + quote("^a$", safe=""))
    m = re.search(r'id="matched"[^>]*data-samples="(\d+)"[^>]*>Matched: ([\d.]+)%<', dom) or \
        re.search(r'id="matched"[^>]*>Matched: ([\d.]+)%<', dom)
    check(m, "no Matched: line in the dumped DOM")
    check("Matched: 50.00%" in dom, f"wanted Matched: 50.00%: {m.group(0)}")
    highlighted = re.findall(r'<g class="f hl"[^>]*>\s*<title>([^<]*)</title>', dom)
    check(sorted(highlighted) == ["a (3 samples, 15.00%)", "a (5 samples, 25.00%)",
                                  "a (5 samples, 25.00%)"], f"highlighted: {highlighted}")
    check(dom.count('fill="rgb(230,0,230)"') == 3, "highlighted frames are not magenta")
    # Not a regex: taken as text.
    dom = browser.dump_dom("file://" + path + "#search=" + quote("a(", safe=""))
    check("Matched: 0.00%" in dom, "an invalid regex is not searched as text")


FRAME_STATE_JS = """[...document.querySelectorAll('g.f')].map(function (g) {
  var r = g.querySelector('rect');
  return {name: g.querySelector('title').textContent.split(' (')[0],
          shown: g.style.display !== 'none', width: +r.getAttribute('width'),
          anc: g.classList.contains('anc'), label: g.querySelector('text').textContent};
})"""


def centre_of(page, name):
    """Where on screen the frame named `name` is (the middle of its box)."""
    return page.eval("""(function () {
      var g = [...document.querySelectorAll('g.f')].find(function (g) {
        return g.querySelector('title').textContent.startsWith(%s + ' (');
      });
      var b = g.querySelector('rect').getBoundingClientRect();
      return [b.x + b.width / 2, b.y + b.height / 2];
    })()""" % json.dumps(name))


@h.case
def hover_zoom_and_keyboard_search():
    # Real mouse and keyboard input in Chromium (DevTools protocol): hover fills the details
    # line, a click zooms into a frame (its ancestors stay, full width, others go), Reset Zoom
    # undoes it, Ctrl-F asks for a regex and shows the matched share.
    path = render("interactive", "p;main;run;parse 30\np;main;run;eval 50\np;main;gc 20\n"
                  "p;other 100\n")
    with browser.Page("file://" + path) as page:
        x, y = centre_of(page, "run")
        page.move(x, y)
        details = page.eval("document.getElementById('details').textContent")
        check(details == "run (80 samples, 40.00%)", f"hover shows {details!r}")
        page.click(x, y)
        state = {f["name"]: f for f in page.eval(FRAME_STATE_JS)}
        for name in ("all", "p", "main"):
            check(state[name]["shown"] and state[name]["anc"] and state[name]["width"] == 1180,
                  f"ancestor {name} after zoom: {state[name]}")
        check(state["run"]["width"] == 1180 and not state["run"]["anc"], f"run: {state['run']}")
        check(abs(state["eval"]["width"] - 1180 * 50 / 80) < 0.01, f"eval: {state['eval']}")
        check(state["eval"]["label"] == "eval", f"eval's label {state['eval']['label']!r}")
        check(not state["gc"]["shown"] and not state["other"]["shown"], "siblings stay shown")
        check("hide" not in page.eval("document.getElementById('unzoom').getAttribute('class')"),
              "no Reset Zoom button")
        page.click(*page.eval("""(function () {
          var b = document.getElementById('unzoom').getBoundingClientRect();
          return [b.x + b.width / 2, b.y + b.height / 2]; })()"""))
        state = {f["name"]: f for f in page.eval(FRAME_STATE_JS)}
        check(all(f["shown"] and not f["anc"] for f in state.values()), "reset zoom")
        check(abs(state["other"]["width"] - 590) < 0.01, f"other after reset: {state['other']}")
        page.eval("window.prompt = function () { return '^(run|gc)$'; }")
        page.key("f", "KeyF", 70, modifiers=2)
        matched = page.eval("document.getElementById('matched').textContent")
        check(matched == "Matched: 50.00%", f"Ctrl-F search: {matched!r}")


@h.case
def deep_profile():
    # C++-sized names: the deepest line is 94 KB, longer than any LineReader line.
    depth = 2000
    names = [f"namespace_{i:04d}::Widget::render(int, char const*)" for i in range(depth)]
    lines = [f"deep;{';'.join(names)} 7", f"deep;{';'.join(names[:1000])} 3"]
    check(len(lines[0]) > 65536, "the deep line is not long")
    path = render("deep", "\n".join(lines) + "\n")
    fs = frames(path)
    check(by_depth_name(fs) == oracle(lines), "deep profile counts differ")
    check(max(f["depth"] for f in fs) == depth + 1, "not every level was drawn")
    check_not_blank(path, "deep.png")


@h.case
def wide_profile():
    leaves = 50000
    lines = [f"wide;hot;spin {leaves * 4}"] + [f"wide;many;leaf_{i:05d} 1" for i in range(leaves)]
    data = "\n".join(lines) + "\n"
    path = render("wide", data)
    size = os.path.getsize(path)
    check(size < 200_000, f"the wide profile's SVG is {size} bytes: narrow frames not merged")
    fs = frames(path)
    merged = [f for f in fs if f["kind"] == "merged"]
    check(len(merged) == 1 and merged[0]["name"] == f"[{leaves} frames merged]" and
          merged[0]["samples"] == leaves, f"merged boxes: {merged}")
    many = [f for f in fs if f["name"] == "many"]
    check(many and many[0]["samples"] == leaves, "the parent of the merged frames")
    check_not_blank(path, "wide.png")
    # Without a minimum width every leaf is there, with its count.
    path = render("wide_all", data, "--min-width", "0")
    got = by_depth_name(frames(path))
    check(got == oracle(lines), "with --min-width 0 the counts differ")


@h.case
def reverse_width_title():
    path = render("icicle", "p;a;b 2\np;c 1\n", "--reverse", "--width", "800", "--title", "T & t")
    root = ET.parse(path).getroot()
    check(root.get("width") == "800.00", f"width {root.get('width')}")
    fs = frames(path)
    ys = {f["name"]: f["y"] for f in fs}
    check(ys["all"] < ys["p"] < ys["a"] < ys["b"], f"icicle: root on top, callees below: {ys}")
    title = [t for t in root.iter(SVG + "text") if t.get("id") == "title"][0]
    check(title.text == "T & t", f"title {title.text!r}")
    path = render("flame", "p;a;b 2\np;c 1\n")
    ys = {f["name"]: f["y"] for f in frames(path)}
    check(ys["all"] > ys["p"] > ys["a"] > ys["b"], f"flame: root at the bottom: {ys}")


@h.case
def perf_script_input_needs_the_daemon_and_says_so():
    # perf script text is named through jitsymd (test_flamegraph.py); with none at the socket
    # the error says where it looked, and nothing is written.
    perf = (b"node 1234/1234 100.000001:     250000 cpu-clock:u: \n"
            b"\t    55d0c0a1b2c3 work+0x10 (/usr/bin/node)\n\n")
    res = subprocess.run([h.jitsym, "--socket", os.path.join(h.root, "none.sock"), "flamegraph"],
                         input=perf, capture_output=True, timeout=60)
    check(res.returncode == 1, f"exit {res.returncode}")
    check(b"none.sock" in res.stderr and b"jitsymd" in res.stderr, f"{res.stderr!r}")
    check(res.stdout == b"", "wrote output anyway")
    status, out, err = flamegraph(b"", expect=1)
    check("no input" in err, f"empty input: {err}")


@h.case
def bad_lines_are_skipped_and_counted():
    status, out, err = flamegraph(b"a;b 2\na;b 3\nnot a stack\na;c 1\n", expect=0)
    check("1 lines were not folded stacks" in err and "line 3" in err, f"stderr: {err}")
    text = out.decode()
    check("all (6 samples" in text, "the good lines are counted")


@h.case
def usage_errors():
    for args in (["--width", "5"], ["--width", "x"], ["--min-width", "-1"], ["stray"],
                 ["--nope"]):
        flamegraph(b"a 1\n", *args, expect=2)
    status, out, err = flamegraph(b"", "--help", expect=0)
    check(b"usage: " in out and b"jitsym flamegraph" in out, f"help text: {out[:200]!r}")


h.main()
