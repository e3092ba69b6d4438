#!/usr/bin/env python3
"""Why time matters: a node workload that creates and drops thousands of functions makes V8
reuse code addresses after each GC. Every LOAD, asked at its own timestamp, must resolve to
what the oracle says (100%), while "latest definition wins" would misname many of them."""

import os
import shutil
import subprocess

import jitdump
import oracle
from harness import Harness, check, hexaddr

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS, PER_ROUND = 40, 100
MIN_REUSED = 300
RUN = {}


@h.setup
def run_the_workload():
    node = shutil.which("node")
    check(node is not None, "node is not on PATH (./build.sh installs Debian's nodejs)")
    h.start_daemon()
    res = subprocess.run([node, "--perf-prof", "--expose-gc", "--allow-natives-syntax",
                          os.path.join(HERE, "node", "reuse_workload.js"), str(ROUNDS),
                          str(PER_ROUND)], cwd=h.watch_dir, capture_output=True, text=True,
                         timeout=120)
    check(res.returncode == 0, f"node failed ({res.returncode}): {res.stderr[-2000:]}")
    pids = [int(n[4:-5]) for n in os.listdir(h.watch_dir)
            if n.startswith("jit-") and n.endswith(".dump")]
    check(len(pids) == 1, f"expected one jitdump in {h.watch_dir}, found {pids}")
    RUN["pid"] = pids[0]
    RUN["dump"] = dump = jitdump.read_file(h.dump_path(pids[0]))
    check(dump is not None and dump.error is None, f"our reader: {dump and dump.error}")
    RUN["oracle"] = oracle.Oracle(dump)
    RUN["loads"] = [r for r in dump.loads() if r.code_size > 0]


@h.case
def code_addresses_were_reused():
    loads = RUN["loads"]
    reused = oracle.overlap_count(loads)
    named = sum(1 for r in loads if "jitsymReuse" in r.name)
    print(f"  {len(loads)} LOADs ({named} of the workload's functions), {reused} overlap an "
          "earlier LOAD")
    check(named >= ROUNDS * PER_ROUND // 2, f"only {named} optimized workload functions")
    check(reused >= MIN_REUSED, f"only {reused} LOADs reuse addresses; want >= {MIN_REUSED}")


@h.case
def every_load_resolves_at_its_own_time():
    pid, model, loads = RUN["pid"], RUN["oracle"], RUN["loads"]
    last = loads[-1]
    h.wait_resolves(pid, last.code_addr, model.lookup(last.code_addr, last.eff_ts).name,
                    t=last.eff_ts, timeout=15)
    queries = [(a, r.eff_ts) for r in loads for a in (r.code_addr, r.code_addr + r.code_size - 1)]
    answers = h.lookup(pid, queries)
    bad = []
    for (addr, t), ans in zip(queries, answers):
        p = model.lookup(addr, t)
        got = ans.get("name") if ans.get("found") else None
        if got != (p.name if p else None):
            bad.append(f"{hexaddr(addr)} @ {t}: got {got!r}, want {p.name if p else None!r}")
    print(f"  {len(queries) - len(bad)} of {len(queries)} time-qualified answers right")
    check(not bad, f"{len(bad)} of {len(queries)} answers wrong:\n  " + "\n  ".join(bad[:15]))


@h.case
def latest_definition_wins_would_misname_many():
    pid, model, loads = RUN["pid"], RUN["oracle"], RUN["loads"]
    misnamed = 0
    for r in loads:
        at_time, latest = model.lookup(r.code_addr, r.eff_ts), model.lookup(r.code_addr)
        misnamed += (at_time.name if at_time else None) != (latest.name if latest else None)
    print(f"  without a time, {misnamed} of {len(loads)} LOADs "
          f"({100.0 * misnamed / len(loads):.1f}%) would get another function's name")
    check(misnamed >= MIN_REUSED // 2, f"only {misnamed} LOADs would be misnamed: the workload "
          "no longer demonstrates reuse")
    # And the daemon's untimed answers are exactly "latest wins".
    queries = [(r.code_addr, None) for r in loads]
    answers = h.lookup(pid, queries)
    bad = [hexaddr(a) for (a, _), ans in zip(queries, answers)
           if (ans.get("name") if ans.get("found") else None) !=
           (model.lookup(a).name if model.lookup(a) else None)]
    check(not bad, f"{len(bad)} untimed answers differ from the latest definition: {bad[:10]}")


h.main()
