#!/usr/bin/env python3
"""profile.proto out and in, checked with `go tool pprof` (Debian's golang-go) as the independent
reader, on real profiles of node --perf-prof:

- `perf record -k mono -g` of node, `jitsym annotate --pprof OUT.pb.gz`: go tool pprof -top names
  the hot JS functions with the flat and cumulative counts `jitsym annotate --folded` gives,
  -traces shows as many samples, -raw shows the pid, tid and comm labels, the --label given and
  the jitdump mapping;
- a gperftools CPU profile of node, `jitsym pprof PROFILE --pid PID --proto OUT`: go tool pprof
  -top agrees with `jitsym pprof --text`;
- the same gperftools profile converted by go tool pprof itself to a profile.proto with raw
  addresses (`-proto -symbolize=none`): `jitsym pprof RAW --pid PID --proto OUT` names it, and
  go tool pprof -top on the result agrees with `jitsym pprof --text` of the original;
- a pid label per sample stands for --pid; a corrupt protobuf is an error with an offset."""

import glob
import gzip
import os
import re
import shutil
import subprocess

import jitdump
import perfrec
import pprof_pb
from harness import Harness, check

h = Harness(__doc__)
RUN = {}
TOP_RE = re.compile(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.*)$")
TEXT_RE = re.compile(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.*)$")


def go_pprof(*args):
    go = shutil.which("go")
    if go is None:
        perfrec.skip("go is not installed (Debian: golang-go)")
    env = dict(os.environ, HOME=h.root, PPROF_TMPDIR=os.path.join(h.root, "pprof"),
               GOCACHE=os.path.join(h.root, "gocache"), PPROF_BINARY_PATH=h.root)
    res = subprocess.run([go, "tool", "pprof"] + list(args), capture_output=True, text=True,
                         env=env, timeout=300)
    check(res.returncode == 0, f"go tool pprof {args}: {res.stderr[-800:]}")
    return res.stdout


def top(path, *extra):
    """go tool pprof -top: name -> (flat, cum), every row."""
    text = go_pprof("-top", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0",
                    "-symbolize=none", *extra, path)
    rows = {}
    for line in text.splitlines():
        m = TOP_RE.match(line)
        if m:
            rows[m.group(3).strip()] = (int(m.group(1)), int(m.group(2)))
    return rows


def folded_table(text):
    """name -> (flat, cum) from collapsed stacks (the comm is not a function)."""
    rows = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")[1:]
        count = int(count)
        if frames:
            f, c = rows.get(frames[-1], (0, 0))
            rows[frames[-1]] = (f + count, c)
        for name in set(frames):
            f, c = rows.get(name, (0, 0))
            rows[name] = (f, c + count)
    return rows


def jitsym_text(*args):
    res = h.client("pprof", *args, "--text", timeout=300)
    check(res.returncode == 0, f"jitsym pprof --text: {res.returncode} {res.stderr[-500:]}")
    rows, total = {}, None
    for line in res.stdout.splitlines():
        if line.startswith("Total:"):
            total = int(line.split()[1])
        m = TEXT_RE.match(line)
        if m:
            rows[m.group(3).strip()] = (int(m.group(1)), int(m.group(2)))
    return rows, total


def compare_hot(ours, theirs, what):
    hot = {n: fc for n, fc in theirs.items() if "jitsymHot" in n}
    check(len(hot) >= 3, f"{what}: only {len(hot)} hot JS functions: {list(theirs)[:10]}")
    wrong = [f"{n}: go tool pprof {ours.get(n)}, expected {fc}" for n, fc in hot.items()
             if ours.get(n) != fc]
    check(not wrong, f"{what}:\n  " + "\n  ".join(wrong[:10]))
    print(f"  {what}: {len(hot)} hot JS functions, flat and cum equal")


@h.setup
def record():
    perf = perfrec.require_perf(h.root)
    h.start_daemon()
    data = os.path.join(h.root, "perf.data")
    pid = perfrec.record_node(perf, data, h.watch_dir, [perfrec.WORKLOAD, "6", "10", "8"])
    dump = jitdump.read_file(h.dump_path(pid))
    last = [r for r in dump.loads() if r.code_size > 0][-1]
    h.wait_resolves(pid, last.code_addr, last.name, t=last.eff_ts, timeout=30)
    RUN.update(perf=perf, data=data, pid=pid, text=perfrec.perf_script(perf, data))


@h.case
def annotate_pprof_agrees_with_annotate_folded():
    out = os.path.join(h.root, "perf.pb.gz")
    # -i: jitsym runs perf script itself, with the pid and tid fields the labels come from.
    res = h.client("annotate", "-i", RUN["data"], "--pprof", out, "--label", "host=test-host",
                   "--label", "service=a&b <c>", timeout=300)
    check(res.returncode == 0, f"annotate --pprof: {res.returncode} {res.stderr[-500:]}")
    with open(out, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", "not gzip'd")
    res = h.client("annotate", "--folded", "--quiet", input=RUN["text"], timeout=300)
    # The same samples from text with perfrec's fields: the names must not depend on them.
    check(res.returncode == 0, f"annotate --folded: {res.stderr[-300:]}")
    folded = folded_table(res.stdout)
    compare_hot(top(out), folded, "annotate --pprof vs annotate --folded")
    total = sum(int(l.rsplit(" ", 1)[1]) for l in res.stdout.splitlines() if l.strip())
    traces = go_pprof("-traces", "-symbolize=none", out)
    # -traces prints one block per distinct sample, headed by its count.
    counted = sum(int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+\S", traces, re.M)
                  if not m.group(0).strip().startswith("-"))
    check("jitsymHot" in traces, "no JS function in -traces")
    raw = go_pprof("-raw", "-symbolize=none", out)
    for want in (f"pid:[{RUN['pid']}]", "tid:[", "comm:[", "host:[test-host]",
                 "service:[a&b <c>]", f"jit-{RUN['pid']}.dump"):
        check(want in raw, f"-raw shows no {want!r}:\n{raw[:1500]}")
    # Native frames were asked of jitsymd: node's mapping carries its build id, and functions
    # inlined into others are lines of one location (more than one line under a location).
    node = os.path.realpath(shutil.which("node"))
    build_id = subprocess.run(["readelf", "-n", node], capture_output=True,
                              text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", build_id)
    if m:
        check(re.search(rf"{re.escape(node)}\s+{m.group(1)}", raw),
              f"no mapping of {node} with build id {m.group(1)} in -raw")
    inlined = re.findall(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ .*\n(?:\s{10,}\S.*\n)+", raw, re.M)
    print(f"  {total} samples; -traces lists {counted}; labels, the jitdump mapping"
          f"{', node with its build id' if m else ''} in -raw; {len(inlined)} locations with "
          "inlined functions")
    check(inlined, "no location with inlined functions in -raw")
    check(counted == total, f"-traces counts {counted} samples, annotate --folded {total}")


@h.case
def a_gperftools_profile_of_node():
    lib = next(iter(glob.glob("/usr/lib/*/libprofiler.so.0")), None)
    check(lib is not None, "libprofiler.so not found (Debian: libgoogle-perftools-dev)")
    out = os.path.join(h.root, "cpu.prof")
    env = dict(os.environ, LD_PRELOAD=lib, CPUPROFILE=out, CPUPROFILE_FREQUENCY="1000")
    res = subprocess.run(["node", "--perf-prof", "--expose-gc", "--allow-natives-syntax",
                          perfrec.WORKLOAD, "1", "6", "150"], cwd=h.watch_dir, env=env,
                         capture_output=True, text=True, timeout=180)
    check(res.returncode == 0, f"node under libprofiler failed: {res.stderr[-800:]}")
    pids = sorted(int(os.path.basename(p)[4:-5])
                  for p in glob.glob(os.path.join(h.watch_dir, "jit-*.dump")))
    pid = [p for p in pids if p != RUN["pid"]][-1]
    dump = jitdump.read_file(h.dump_path(pid))
    last = [r for r in dump.loads() if r.code_size > 0][-1]
    h.wait_resolves(pid, last.code_addr, last.name, timeout=30)
    RUN.update(prof=out, prof_pid=pid)
    RUN["text_rows"], RUN["text_total"] = jitsym_text(out, "--pid", str(pid))


@h.case
def gperftools_to_proto_agrees_with_pprof_text():
    out = os.path.join(h.root, "cpu.pb.gz")
    res = h.client("pprof", RUN["prof"], "--pid", str(RUN["prof_pid"]), "--proto", out,
                   timeout=300)
    check(res.returncode == 0, f"pprof --proto: {res.returncode} {res.stderr[-500:]}")
    ours = top(out, "-sample_index=samples")
    compare_hot(ours, RUN["text_rows"], "pprof --proto vs pprof --text")
    raw = go_pprof("-raw", "-symbolize=none", out)
    check("cpu/nanoseconds" in raw and "samples/count" in raw, f"sample types: {raw[:400]}")


@h.case
def raw_address_protobuf_comes_back_named():
    raw = os.path.join(h.root, "raw.pb.gz")
    node = os.path.realpath(shutil.which("node"))
    go_pprof("-proto", "-symbolize=none", "-output", raw, node, RUN["prof"])
    before = top(raw)
    check(not any("jitsymHot" in n for n in before), "go tool pprof named JS frames by itself?")
    out = os.path.join(h.root, "named.pb.gz")
    res = h.client("pprof", raw, "--pid", str(RUN["prof_pid"]), "--proto", out, timeout=300)
    check(res.returncode == 0, f"pprof RAW --proto: {res.returncode} {res.stderr[-500:]}")
    after = top(out, "-sample_index=samples")
    compare_hot(after, RUN["text_rows"], "go's raw protobuf named by jitsym pprof")
    # The text table of the protobuf input is the gperftools input's.
    rows, total = jitsym_text(raw, "--pid", str(RUN["prof_pid"]))
    check(total == RUN["text_total"], f"--text total {total} vs {RUN['text_total']}")


@h.case
def a_pid_label_per_sample_stands_for_pid():
    # Half the samples say they are the profiled process, half another process jitsymd knows
    # nothing about: the JIT locations both use are split, named for the first, left unnamed
    # (and said so) for the other.
    raw = pprof_pb.read_profile(os.path.join(h.root, "raw.pb.gz"))
    other = 999999
    labelled = os.path.join(h.root, "labelled.pb.gz")
    pprof_pb.write_profile(labelled, pprof_pb.with_pid_labels(
        raw, lambda i: RUN["prof_pid"] if i % 2 == 0 else other))
    out = os.path.join(h.root, "labelled-named.pb.gz")
    res = h.client("pprof", labelled, "--proto", out, timeout=300)
    check(res.returncode == 3, f"exit {res.returncode} (3: a process jitsymd does not know): "
          f"{res.stderr[-400:]}")
    check(f"pid {other}" in res.stderr or "some of the profile's pids" in res.stderr,
          f"no word about pid {other}: {res.stderr}")
    mine = top(out, "-sample_index=samples", f"-tagfocus=pid={RUN['prof_pid']}")
    theirs = top(out, "-sample_index=samples", f"-tagfocus=pid={other}")
    hot_mine = sum(f for n, (f, _) in mine.items() if "jitsymHot" in n)
    hot_theirs = sum(f for n, (f, _) in theirs.items() if "jitsymHot" in n)
    print(f"  pid {RUN['prof_pid']}: {hot_mine} samples in named JS functions; pid {other}: "
          f"{hot_theirs}")
    check(hot_mine > 0 and hot_theirs == 0, "JS names leaked to the other process's samples")


@h.case
def usage_errors():
    raw = os.path.join(h.root, "raw.pb.gz")
    for args in (["annotate", "--label", "host=a"], ["annotate", "--pprof", "x", "--folded"],
                 ["annotate", "--pprof", "x", "--label", "pid=1"],
                 ["annotate", "--pprof", "x", "--label", "novalue"],
                 ["pprof", raw, "--proto", "x", "--text"], ["pprof", raw, "--label", "a=b"]):
        res = h.client(*args, input="")
        check(res.returncode == 2, f"{args}: exit {res.returncode}, wanted 2 (usage)")
    res = h.client("pprof", raw, "--symbolized", os.path.join(h.root, "x.sym"))
    check(res.returncode == 2 and "--proto" in res.stderr,
          f"--symbolized of a profile.proto: {res.returncode} {res.stderr}")


@h.case
def corrupt_protobuf_is_an_error_with_an_offset():
    raw = os.path.join(h.root, "raw.pb.gz")
    with gzip.open(raw, "rb") as f:
        data = f.read()
    bad = os.path.join(h.root, "bad.pb")
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 2])
    res = h.client("pprof", bad, "--pid", str(RUN["prof_pid"]), "--text")
    check(res.returncode == 1, f"exit {res.returncode} for a truncated protobuf")
    check("offset" in res.stderr, f"no offset in {res.stderr!r}")
    print(f"  {res.stderr.strip()}")


h.main()
