#!/usr/bin/env python3
"""`jitsym flamegraph` on real profiles of node --perf-prof, run from a directory named
`we&ird <"names">` so that V8 writes & < " into every JS function name, with non-ASCII function
names (odd_names.js) next to the recycled-code workload:

- `perf script | jitsym flamegraph`: the SVG parses as XML and holds every frame of
  `jitsym annotate --folded` with the same sample count (path by path); JS frames are coloured as
  jitdump, the kernel's as kernel; the odd names are there exactly;
- the same from the recording (`-i perf.data`) and from annotate's folded output (recognised by
  itself);
- in headless Chromium: a screenshot that is not blank; the names with & < " and non-ASCII are in
  the rendered document; `#search=` shows the share annotate --folded gives;
- a gperftools profile of node (`--pprof-profile FILE --pid PID`) agrees with
  `jitsym pprof --folded`."""

import glob
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from collections import defaultdict
from urllib.parse import quote

import browser
import jitdump
import perfrec
from harness import Harness, check

h = Harness(__doc__)
RUN = {}
SVG = "{http://www.w3.org/2000/svg}"
TITLE_RE = re.compile(r"^(.*) \((\d+) samples?, [\d.]+%\)$", re.S)
ODD = os.path.join(perfrec.HERE, "perf", "odd_names.js")


def frames(path):
    """(path of names from the root, excluded) -> samples, and kinds by name, from the SVG."""
    root = ET.parse(path).getroot()
    nodes = []
    for g in root.iter(SVG + "g"):
        if g.get("class", "").split()[:1] != ["f"]:
            continue
        m = TITLE_RE.match(g.find(SVG + "title").text or "")
        check(m, "a frame title is not 'NAME (N samples, P%)'")
        nodes.append((int(g.get("data-d")), int(g.get("data-o")), int(g.get("data-s")),
                      m.group(1), g.get("data-k")))
    nodes.sort()
    by_depth = defaultdict(list)
    for n in nodes:
        by_depth[n[0]].append(n)
    paths, kinds = {}, defaultdict(set)
    path_of = {}
    for d, o, s, name, kind in nodes:
        kinds[name].add(kind)
        if d == 0:
            path_of[(d, o, name)] = ()
            continue
        parent = next(p for p in by_depth[d - 1] if p[1] <= o < p[1] + p[2])
        p = path_of[(parent[0], parent[1], parent[3])] + (name,)
        path_of[(d, o, name)] = p
        paths[p] = paths.get(p, 0) + s
    return paths, kinds


def folded_paths(text):
    paths = defaultdict(int)
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, count = line.rsplit(" ", 1)
        names = stack.split(";")
        for i in range(1, len(names) + 1):
            paths[tuple(names[:i])] += int(count)
    return paths


def flamegraph(out, *args, input=None):
    res = h.client("flamegraph", "-o", out, *args, input=input, timeout=300)
    check(res.returncode == 0, f"flamegraph {args}: {res.returncode} {res.stderr[-600:]}")
    return res


def same_paths(svg, folded, what):
    ours, kinds = frames(svg)
    want = folded_paths(folded)
    wrong = [f"{' ; '.join(p)[-160:]}: svg {ours.get(p)}, folded {n}" for p, n in want.items()
             if ours.get(p) != n]
    extra = [p for p in ours if p not in want]
    check(not wrong and not extra, f"{what}: {len(wrong)} frames differ, {len(extra)} extra:\n  "
          + "\n  ".join(wrong[:8] + [str(e) for e in extra[:4]]))
    print(f"  {what}: all {len(want)} frames with annotate --folded's counts")
    return ours, kinds


@h.setup
def record():
    perf = perfrec.require_perf(h.root)
    weird = os.path.join(h.root, 'we&ird <"names">')
    os.makedirs(weird)
    shutil.copy(ODD, weird)
    h.start_daemon(["--watch", weird])
    data = os.path.join(h.root, "perf.data")
    pid = perfrec.record_node(perf, data, weird, ["odd_names.js", "1500"])
    dump = jitdump.read_file(os.path.join(weird, f"jit-{pid}.dump"))
    last = [r for r in dump.loads() if r.code_size > 0][-1]
    h.wait_resolves(pid, last.code_addr, last.name, t=last.eff_ts, timeout=30)
    odd = sorted({r.name for r in dump.loads() if "jitsymLeaf_café" in r.name})
    check(odd, "node wrote no jitsymLeaf_café")
    text = perfrec.perf_script(perf, data)
    res = h.client("annotate", "--folded", "--quiet", input=text, timeout=300)
    check(res.returncode == 0, f"annotate --folded: {res.stderr[-300:]}")
    RUN.update(perf=perf, data=data, pid=pid, text=text, folded=res.stdout, weird=weird,
               odd=odd)


@h.case
def perf_script_input_draws_every_frame_of_annotate_folded():
    svg = os.path.join(h.root, "perf.svg")
    flamegraph(svg, "--min-width", "0", input=RUN["text"])
    paths, kinds = same_paths(svg, RUN["folded"], "perf script on stdin")
    js = [n for n in kinds if n.startswith("JS:") and "odd_names.js" in n]
    check(js and all(kinds[n] == {"jitdump"} for n in js),
          f"JS frames not coloured as jitdump: {[(n, kinds[n]) for n in js][:4]}")
    kernel = [n for n, k in kinds.items() if "kernel" in k]
    print(f"  {len(js)} JS functions as jitdump frames, {len(kernel)} kernel functions")
    names = set(kinds)
    leaf = [n for n in names if "jitsymLeaf_café" in n]
    check(leaf and any('we&ird <"names">' in n for n in leaf),
          f"the odd names are not in the SVG as written: {leaf}")
    RUN["svg"] = svg


@h.case
def recording_and_folded_inputs_draw_the_same():
    svg = os.path.join(h.root, "rec.svg")
    res = flamegraph(svg, "--min-width", "0", "-i", RUN["data"])
    check("perf.data" in open(svg, encoding="utf-8").read(),
          "the subtitle does not name the recording")
    same_paths(svg, RUN["folded"], "-i perf.data")
    svg2 = os.path.join(h.root, "folded.svg")
    flamegraph(svg2, "--min-width", "0", input=RUN["folded"])
    ours, _ = frames(svg2)
    check(ours == frames(RUN["svg"])[0], "folded input draws another graph than perf script")


@h.case
def renders_in_chromium_with_odd_names_and_search():
    svg = RUN["svg"]
    # As a person opens it: the graph is taller than the window, which shows its bottom (the
    # root and the widest frames), the header kept at the top.
    with browser.Page("file://" + quote(svg), 1200, 800) as page:
        scrolled = page.eval("window.scrollY")
        png = page.screenshot(os.path.join(h.root, "perf.png"))
    stats = browser.png_stats(png)
    height = float(ET.parse(svg).getroot().get("height"))
    check(height <= 800 or scrolled > 0, f"a graph {height} px high opens at its top")
    print(f"  screenshot: {stats}")
    check(stats["colours"] >= 8 and stats["non_white"] > 5000, f"looks blank: {stats}")
    total = sum(int(l.rsplit(" ", 1)[1]) for l in RUN["folded"].splitlines() if l.strip())
    hits = sum(int(l.rsplit(" ", 1)[1]) for l in RUN["folded"].splitlines()
               if "jitsymLeaf_café" in l)
    dom = browser.dump_dom("file://" + quote(svg) + "#search=" + quote("jitsymLeaf_café"))
    check("parsererror" not in dom and "This page contains the following errors" not in dom,
          "Chromium could not parse the SVG")
    check("jitsymLeaf_café" in dom and "we&amp;ird &lt;\"names\"&gt;" in dom,
          "the odd names are not in the rendered document")
    m = re.search(r'id="matched"[^>]*>Matched: ([\d.]+)%<', dom)
    check(m, "no Matched: line after #search")
    want = 100.0 * hits / total
    print(f"  #search=jitsymLeaf_café: Matched {m.group(1)}% (annotate --folded: {want:.2f}%)")
    check(abs(float(m.group(1)) - want) < 0.006, f"Matched {m.group(1)}%, wanted {want:.2f}%")


@h.case
def a_gperftools_profile_agrees_with_pprof_folded():
    lib = next(iter(glob.glob("/usr/lib/*/libprofiler.so.0")), None)
    check(lib is not None, "libprofiler.so not found (Debian: libgoogle-perftools-dev)")
    prof = os.path.join(h.root, "cpu.prof")
    env = dict(os.environ, LD_PRELOAD=lib, CPUPROFILE=prof, CPUPROFILE_FREQUENCY="1000")
    proc = subprocess.run(["node", "--perf-prof", "odd_names.js", "800"], cwd=RUN["weird"],
                          env=env, capture_output=True, text=True, timeout=180)
    check(proc.returncode == 0, f"node under libprofiler: {proc.stderr[-500:]}")
    pids = [int(os.path.basename(p)[4:-5])
            for p in glob.glob(os.path.join(RUN["weird"], "jit-*.dump"))]
    pid = max(p for p in pids if p != RUN["pid"])
    dump = jitdump.read_file(os.path.join(RUN["weird"], f"jit-{pid}.dump"))
    last = [r for r in dump.loads() if r.code_size > 0][-1]
    h.wait_resolves(pid, last.code_addr, last.name, timeout=30)
    res = h.client("pprof", prof, "--pid", pid, "--folded", "--quiet", timeout=300)
    check(res.returncode == 0, f"pprof --folded: {res.stderr[-300:]}")
    svg = os.path.join(h.root, "gperf.svg")
    flamegraph(svg, "--min-width", "0", "--pprof-profile", prof, "--pid", str(pid))
    same_paths(svg, res.stdout, "--pprof-profile")


@h.case
def folded_input_with_a_first_line_longer_than_the_sniffed_head():
    """A deep stack of long names makes a folded line longer than the 256 KiB read to tell
    folded stacks from perf script text."""
    deep = ";".join(f"ns{i}::Template<std::vector<int>, {i}>::run()" for i in range(7000))
    text = f"{deep} 3\nmain;leaf 2\n"
    check(len(deep) > 256 * 1024, f"the first line is only {len(deep)} bytes")
    svg = os.path.join(h.root, "long-line.svg")
    flamegraph(svg, "--min-width", "0", input=text)
    paths, _ = frames(svg)
    roots = {p[0]: n for p, n in paths.items() if len(p) == 1}
    check(roots == {"ns0::Template<std::vector<int>, 0>::run()": 3, "main": 2},
          f"roots {roots}")


@h.case
def a_count_past_2_53_is_skipped_with_a_warning():
    """A gperftools count the SVG's numbers cannot carry exactly is left out, and said."""
    words = [0, 3, 0, 10000, 0, 1 << 60, 1, 0x401000, 5, 1, 0x401010, 0, 1, 0]
    prof = os.path.join(h.root, "huge.prof")
    with open(prof, "wb") as f:
        f.write(struct.pack(f"<{len(words)}Q", *words))
        f.write(b"00400000-00500000 r-xp 00000000 00:00 0 /bin/true\n")
    svg = os.path.join(h.root, "huge.svg")
    res = flamegraph(svg, "--pprof-profile", prof, "--pid", str(os.getpid()))
    check("1 stacks were skipped: the total would pass 2^53 samples" in res.stderr,
          f"no warning: {res.stderr}")
    total = sum(n for p, n in frames(svg)[0].items() if len(p) == 1)
    check(total == 5, f"{total} samples drawn, expected the 5 of the other stack")


h.main()
