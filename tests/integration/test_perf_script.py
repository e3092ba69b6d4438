#!/usr/bin/env python3
"""client/perf/jitsym.py under `perf script -s` (perf's embedded Python): it names the JIT frames
of a real node profile by asking jitsymd over its socket, the same names `jitsym annotate`
gives; --folded adds up to the sample count."""

import os
import subprocess

import perfrec
from harness import Harness, check

h = Harness(__doc__)
RUN = {}
SCRIPT = os.path.normpath(os.path.join(perfrec.HERE, os.pardir, os.pardir, "client", "perf",
                                       "jitsym.py"))


def perf_script_s(*args):
    env = dict(os.environ, JITSYM_SOCKET=h.socket_path)
    res = subprocess.run([RUN["perf"], "script", "-i", RUN["data"], "-s", SCRIPT] + list(args),
                         capture_output=True, env=env, timeout=300)
    check(res.returncode == 0, f"perf script -s failed: {res.stderr.decode()[-1000:]}")
    return res.stdout.decode("utf-8", "surrogateescape")


@h.setup
def record():
    perf = perfrec.require_perf(h.root)
    probe = subprocess.run([perf, "version", "--build-options"], capture_output=True, text=True)
    if "libpython: [ on" not in probe.stdout:
        perfrec.skip("this perf is built without Python scripting")
    h.start_daemon()
    data = os.path.join(h.root, "perf.data")
    pid = perfrec.record_node(perf, data, h.watch_dir, [perfrec.WORKLOAD, "8", "12", "6"])
    RUN.update(perf=perf, data=data, pid=pid)
    import jitdump
    dump = jitdump.read_file(h.dump_path(pid))
    last = [r for r in dump.loads() if r.code_size > 0][-1]
    h.wait_resolves(pid, last.code_addr, last.name, t=last.eff_ts, timeout=30)


@h.case
def names_match_annotate():
    ours = perfrec.samples(perf_script_s())
    plain = perfrec.perf_script(RUN["perf"], RUN["data"])
    res = subprocess.run([h.jitsym, "--socket", h.socket_path, "annotate"], input=plain.encode(),
                         capture_output=True, timeout=300)
    check(res.returncode == 0, f"annotate: {res.stderr[-300:]}")
    theirs = perfrec.samples(res.stdout.decode())
    check(len(ours) == len(theirs), f"{len(ours)} samples from the script, {len(theirs)} from "
          "perf script")
    total = same = 0
    misses = []
    for (_, of), (_, tf) in zip(ours, theirs):
        for (_, osym, odso), (_, tsym, tdso) in zip(of, tf):
            if not (tdso or "").startswith("jitdump:"):
                continue
            total += 1
            if (odso or "").startswith("jitdump:") and osym == tsym:
                same += 1
            elif len(misses) < 8:
                misses.append(f"{osym!r} ({odso}) vs {tsym!r}")
    print(f"  {same} of {total} JIT frames named as jitsym annotate names them")
    check(total >= 300, f"only {total} JIT frames")
    check(same >= 0.995 * total, "differences:\n  " + "\n  ".join(misses))


@h.case
def folded_adds_up():
    text = perf_script_s("--", "--folded")
    counts = [int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.strip()]
    samples = len(perfrec.samples(perfrec.perf_script(RUN["perf"], RUN["data"])))
    check(sum(counts) == samples, f"folded counts {sum(counts)} vs {samples} samples")
    check(any("JS:*jitsymHot" in line for line in text.splitlines()), "no workload function")


@h.case
def unreachable_daemon():
    env = dict(os.environ, JITSYM_SOCKET=os.path.join(h.root, "nope.sock"))
    res = subprocess.run([RUN["perf"], "script", "-i", RUN["data"], "-s", SCRIPT],
                         capture_output=True, text=True, env=env, timeout=120)
    check("cannot connect to jitsymd" in res.stderr, f"stderr: {res.stderr[-300:]}")


h.main()
