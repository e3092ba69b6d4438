#!/usr/bin/env python3
"""A real `node --perf-prof` run in the watch directory. While node is still running, its hot
functions resolve to the names in its jitdump; after it exits, every LOAD in the dump resolves
to what the oracle says at its own timestamp (its own name, unless a later load with the same
stamp covers it), and source lines from V8's debug info match."""

import os
import shutil
import subprocess
import time

import jitdump
import oracle
import harness
from harness import Harness, check, hexaddr

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
HOT = ("jitsymHotAlpha", "jitsymHotBeta", "jitsymHotGamma")
NODE = {}


@h.setup
def start_daemon_and_node():
    node = shutil.which("node")
    check(node is not None, "node is not on PATH (./build.sh installs Debian's nodejs)")
    h.start_daemon()
    proc = h.spawn([node, "--perf-prof", "--perf-prof-unwinding-info",
                    "--interpreted-frames-native-stack",
                    os.path.join(HERE, "node", "live_workload.js")],
                   cwd=h.watch_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = harness.read_line(proc, 60, "node")
    check(line.startswith("ready"), f"unexpected node output {line!r}")
    NODE.update(proc=proc, pid=proc.pid, path=h.dump_path(proc.pid))
    check(os.path.exists(NODE["path"]), f"node did not write {NODE['path']}")


def hot_loads(dump):
    return [r for r in dump.loads()
            if r.code_size > 0 and any(f"{name} " in r.name for name in HOT)]


@h.case
def hot_functions_resolve_while_node_runs():
    pid = NODE["pid"]
    before = jitdump.read_file(NODE["path"])
    hot = hot_loads(before)
    tiers = sorted({r.name[:4] for r in hot})
    print(f"  {len(before.loads())} LOADs so far, {len(hot)} of hot functions, tiers {tiers}")
    for fn in HOT:
        check(any(f"{fn} " in r.name for r in hot), f"no LOAD for {fn} in {NODE['path']}")
    model = oracle.Oracle(before)
    queries, expected = [], []
    for rec in hot:
        for addr in (rec.code_addr, rec.code_addr + rec.code_size // 2,
                     rec.code_addr + rec.code_size - 1):
            # At the load's own time the answer is this load (barring a same-stamp successor);
            # without a time it is whatever holds the address now.
            for t in (rec.eff_ts, None):
                p = model.lookup(addr, t)
                queries.append((addr, t))
                expected.append(p.name if p else None)
    check(any(e and any(f"{fn} " in e for fn in HOT) for (a, t), e in zip(queries, expected)
              if t is None), "no hot function is current in the dump: nothing to ask")
    # The daemon may still be reading the file: wait for the last hot LOAD first.
    last = hot[-1]
    h.wait_resolves(pid, last.code_addr, model.lookup(last.code_addr, last.eff_ts).name,
                    t=last.eff_ts, timeout=10)
    answers = h.lookup(pid, queries)
    check(NODE["proc"].poll() is None, "node exited before the lookups: not a live test")
    after = oracle.Oracle(jitdump.read_file(NODE["path"]))  # node may have added code since
    bad = []
    for (addr, t), want, ans in zip(queries, expected, answers):
        got = ans.get("name") if ans.get("found") else None
        now = after.lookup(addr, t)
        if got != want and got != (now.name if now else None):
            bad.append(f"{hexaddr(addr)} @ {t}: got {got!r}, want {want!r}")
    check(not bad, f"{len(bad)} of {len(queries)} live answers wrong:\n  " + "\n  ".join(bad[:10]))


@h.case
def every_load_resolves_at_its_own_time_after_exit():
    proc = NODE["proc"]
    proc.stdin.close()
    code = proc.wait(30)
    check(code == 0, f"node exited with {code}")
    dump = jitdump.read_file(NODE["path"])
    check(dump is not None and dump.error is None,
          f"our reader finds the node dump corrupt: {dump and dump.error} at "
          f"{dump and dump.error_offset}")
    NODE["dump"] = dump
    model = oracle.Oracle(dump)
    loads = [r for r in dump.loads() if r.code_size > 0]
    last = loads[-1]
    h.wait_resolves(NODE["pid"], last.code_addr, model.lookup(last.code_addr, last.eff_ts).name,
                    t=last.eff_ts, timeout=10)
    queries = [(a, r.eff_ts) for r in loads for a in (r.code_addr, r.code_addr + r.code_size - 1)]
    answers = h.lookup(NODE["pid"], queries)
    bad, own = [], 0
    for (addr, t), ans in zip(queries, answers):
        p = model.lookup(addr, t)
        want = p.name if p else None
        got = ans.get("name") if ans.get("found") else None
        if got != want:
            bad.append(f"{hexaddr(addr)} @ {t}: got {got!r}, want {want!r}")
    for r in loads:
        p = model.lookup(r.code_addr, r.eff_ts)
        own += p is not None and p.record is r
    print(f"  {len(loads)} LOADs, {len(queries)} queries; {own} LOADs answer with themselves "
          f"at their own start, the rest are covered by a later load with the same stamp")
    check(not bad, f"{len(bad)} of {len(queries)} answers wrong:\n  " + "\n  ".join(bad[:15]))
    lines = [l for l in h.daemon.log_lines() if NODE["path"] in l and "offset" in l]
    check(not lines, f"the daemon reported node's dump as corrupt: {lines}")


@h.case
def source_lines_from_v8_debug_info():
    dump = NODE.get("dump") or jitdump.read_file(NODE["path"])
    check(dump.is_v8, f"node's dump should carry V8's pad1 marker, has {dump.pad1:#x}")
    model = oracle.Oracle(dump)
    with_debug = [p for p in model.placements if p.debug is not None and p.debug.entries
                  and p.record.kind == jitdump.LOAD]
    check(with_debug, "no LOAD with well-formed debug info in node's dump")
    hot = [p for p in with_debug if any(f"{fn} " in p.name for fn in HOT)]
    chosen = hot + [p for p in with_debug if p not in hot][:20]
    queries, expected = [], []
    for p in chosen:
        adj = [e[0] - jitdump.V8_DEBUG_ADDR_BIAS for e in p.debug.entries]
        for addr in sorted(set(a for a in adj if adj.count(a) == 1 and p.start <= a < p.end)):
            t = p.valid_from
            if model.lookup(addr, t) is not p:
                continue
            pos = model.source_position(p, addr)
            if pos and pos != "ambiguous":
                queries.append((addr, t))
                expected.append((p.name, pos[0], pos[1]))
    check(len(queries) >= 10, f"only {len(queries)} source positions to check")
    answers = h.lookup(NODE["pid"], queries)
    bad = [f"{hexaddr(a)} in {w[0]!r}: want {w[1]}:{w[2]}, got {ans.get('file')}:{ans.get('line')}"
           for (a, _), w, ans in zip(queries, expected, answers)
           if (ans.get("name"), ans.get("file"), ans.get("line")) != w]
    print(f"  checked {len(queries)} source positions in {len(chosen)} functions "
          f"({len(hot)} of them hot)")
    check(not bad, f"{len(bad)} of {len(queries)} source positions wrong:\n  " +
          "\n  ".join(bad[:10]))


h.main()
