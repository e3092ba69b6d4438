#!/usr/bin/env python3
"""A real `node --perf-basic-prof` run. V8 writes its perf map to /tmp/perf-<pid>.map whatever
the working directory (node 20 has no option to move it), so this test's daemon watches /tmp as
well as its own directory, and asserts only about the node process it started. While node runs,
its hot functions resolve to the names in the map; after it exits, every line still resolves to
the last line of the file covering its address ("later line wins"), with origin perfmap."""

import atexit
import os
import shutil
import subprocess
import time

import perfmap
import harness
from harness import Harness, check, find_dicts, hexaddr, json_documents, wait_until

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
HOT = ("jitsymHotAlpha", "jitsymHotBeta", "jitsymHotGamma")
NODE = {}


@h.setup
def start_daemon_and_node():
    node = shutil.which("node")
    check(node is not None, "node is not on PATH (./build.sh installs Debian's nodejs)")
    h.start_daemon(extra_args=["--watch", "/tmp"])
    proc = h.spawn([node, "--perf-basic-prof", os.path.join(HERE, "node", "live_workload.js")],
                   cwd=h.watch_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    NODE.update(proc=proc, pid=proc.pid, path=f"/tmp/perf-{proc.pid}.map")
    line = harness.read_line(proc, 60, "node")
    check(line.startswith("ready"), f"unexpected node output {line!r}")
    check(os.path.exists(NODE["path"]), f"node did not write {NODE['path']}")
    check(not os.path.exists(os.path.join(h.watch_dir, f"perf-{proc.pid}.map")),
          "node wrote its perf map into its working directory: V8 changed, revisit this test")


def hot_lines(lines):
    return [l for l in lines if l.size and any(f"{fn} " in l.name for fn in HOT)]


def check_against_file(pid, lines, what):
    """Asks for start, middle and last byte of every line; each answer must be the last line
    covering the address."""
    queries = sorted({a for l in lines for a in (l.start, l.start + l.size // 2, l.end - 1)})
    answers = h.lookup(pid, [(a, None) for a in queries])
    bad = []
    for addr, ans in zip(queries, answers):
        want = perfmap.latest(lines, addr)
        got = ans.get("name") if ans.get("found") else None
        ok = got == want.name and ans.get("start") == hexaddr(want.start) and \
            ans.get("origin") == "perfmap"
        if not ok:
            bad.append(f"{hexaddr(addr)}: got {got!r} ({ans.get('start')}, {ans.get('origin')}),"
                       f" want {want.name!r} ({hexaddr(want.start)})")
    check(not bad, f"{what}: {len(bad)} of {len(queries)} answers wrong:\n  " +
          "\n  ".join(bad[:15]))
    return len(queries)


@h.case
def hot_functions_resolve_while_node_runs():
    pid = NODE["pid"]
    lines = perfmap.read(NODE["path"])
    hot = hot_lines(lines)
    tiers = sorted({l.name.split(":")[0] + ":" + l.name.split(":")[1][:1] for l in hot})
    print(f"  {len(lines)} lines so far, {len(hot)} of hot functions, tiers {tiers}")
    for fn in HOT:
        check(any(f"{fn} " in l.name for l in hot), f"no line for {fn} in {NODE['path']}")
    # The daemon may still be reading the file: wait for its last line first.
    last = lines[-1]
    h.wait_resolves(pid, last.start, perfmap.latest(lines, last.start).name, timeout=10)
    queries = sorted({a for l in hot for a in (l.start, l.end - 1)})
    answers = h.lookup(pid, [(a, None) for a in queries])
    check(NODE["proc"].poll() is None, "node exited before the lookups: not a live test")
    now = perfmap.read(NODE["path"])  # node may have written more since
    bad = []
    for addr, ans in zip(queries, answers):
        got = ans.get("name") if ans.get("found") else None
        if got not in (perfmap.latest(lines, addr).name, perfmap.latest(now, addr).name):
            bad.append(f"{hexaddr(addr)}: got {got!r}, want {perfmap.latest(lines, addr).name!r}")
    check(not bad, f"{len(bad)} of {len(queries)} live answers wrong:\n  " + "\n  ".join(bad[:10]))


@h.case
def every_line_resolves_after_exit():
    proc = NODE["proc"]
    proc.stdin.close()
    code = proc.wait(30)
    check(code == 0, f"node exited with {code}")
    lines = perfmap.read(NODE["path"])
    last = lines[-1]
    h.wait_resolves(NODE["pid"], last.start, perfmap.latest(lines, last.start).name, timeout=10)
    n = check_against_file(NODE["pid"], [l for l in lines if l.size], "after exit")
    print(f"  {len(lines)} lines, {n} addresses checked")
    logged = [l for l in h.daemon.log_lines() if NODE["path"] in l and "line skipped" in l]
    check(not logged, f"the daemon found malformed lines in node's map: {logged[:3]}")


@h.case
def symbols_stay_when_the_map_is_deleted():
    lines = perfmap.read(NODE["path"])
    os.unlink(NODE["path"])  # node left it in /tmp: clean up, and check nothing is lost
    hot = hot_lines(lines)

    def deleted():
        res = h.client("processes", "--json")
        return [s for s in find_dicts(json_documents(res.stdout), "path")
                if s.get("path") == NODE["path"] and s.get("state") == "deleted"]
    wait_until(deleted, 5, f"{NODE['path']} to be shown as deleted")
    check_against_file(NODE["pid"], hot, "after the file was deleted")


def remove_leftover_map():
    if NODE.get("path") and os.path.exists(NODE["path"]):
        os.unlink(NODE["path"])


atexit.register(remove_leftover_map)
h.main()
