"""Recording real profiles for the perf integration tests: is perf usable here, record a node
workload with `perf record -k mono`, read `perf script` text back independently of the client's
parser.

A test that cannot record (no perf, perf_event_paranoid, no software events in a container) exits
with SKIP (77): ctest reports it skipped, not passed.
"""

import os
import re
import shutil
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "perf", "recycle_hot.js")

FRAME_RE = re.compile(r"^\t\s*([0-9a-f]+)(?: (.*))?$")
OFFSET_RE = re.compile(r"\+0x[0-9a-f]+$")


def skip(why):
    print(f"SKIP: {why}", flush=True)
    sys.exit(SKIP)


def require_perf(workdir):
    """Exits with SKIP unless `perf record -k mono -e cpu-clock` works here."""
    perf = shutil.which("perf")
    if perf is None:
        skip("perf is not installed (Debian: linux-perf)")
    data = os.path.join(workdir, "probe.data")
    res = subprocess.run([perf, "record", "-q", "-k", "mono", "-e", "cpu-clock", "-o", data,
                          "--", "true"], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        skip(f"perf record does not work here: {res.stderr.strip()[-300:]}")
    os.unlink(data)
    return perf


def record_node(perf, data, cwd, args, callchains=True, freq=2000, timeout=180, clock="mono"):
    """Runs node --perf-prof under perf record -k CLOCK -e cpu-clock (clock None: perf's default
    clock, no -k); returns node's pid. cwd may hold jitdumps of earlier runs."""
    node = shutil.which("node")
    if node is None:
        skip("node is not on PATH")
    before = set(os.listdir(cwd))
    cmd = [perf, "record", "-q"] + (["-k", clock] if clock else []) + [
        "-e", "cpu-clock", "-F", str(freq), "-o", data]
    if callchains:
        cmd.append("-g")
    cmd += ["--", node, "--perf-prof", "--expose-gc", "--allow-natives-syntax"] + list(args)
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise AssertionError(f"perf record failed ({res.returncode}): {res.stderr[-1500:]}")
    dumps = [n for n in os.listdir(cwd)
             if n.startswith("jit-") and n.endswith(".dump") and n not in before]
    pids = [int(n[4:-5]) for n in dumps]
    if len(pids) != 1:
        raise AssertionError(f"expected one jitdump in {cwd}, found {dumps}")
    return pids[0]


def perf_script(perf, data, *extra):
    res = subprocess.run([perf, "script", "-i", data] + list(extra), capture_output=True,
                         timeout=300)
    if res.returncode != 0:
        raise AssertionError(f"perf script failed: {res.stderr.decode(errors='replace')[-800:]}")
    return res.stdout.decode("utf-8", "surrogateescape")


def samples(text):
    """Callchain output (-g) as a list of samples: (header line, [(ip, sym, dso)]) leaf first."""
    out = []
    cur = None
    for line in text.split("\n"):
        if not line.strip():
            cur = None
            continue
        if line.startswith("\t"):
            frame = parse_frame(line)
            if cur is not None and frame:
                cur[1].append(frame)
            continue
        cur = (line, [])
        out.append(cur)
    return out


def split_dso(rest):
    """"SYM (DSO)" -> (SYM, DSO): the DSO is the parenthesized group that ends the text (it may
    hold parentheses itself); (rest, None) without one."""
    if not rest.endswith(")"):
        return rest, None
    depth = 0
    for j in range(len(rest) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(rest[j], 0)
        if depth == 0:
            if j == 0:
                return "", rest[1:-1]
            if rest[j - 1] == " ":
                return rest[:j - 1], rest[j + 1:-1]
            break
    return rest, None


def parse_frame(line):
    """A callchain line -> (ip, sym, dso or None), or None."""
    m = FRAME_RE.match(line)
    if not m:
        return None
    sym, dso = split_dso((m.group(2) or "").strip())
    return int(m.group(1), 16), sym, dso


def strip_offset(sym):
    return OFFSET_RE.sub("", sym)
