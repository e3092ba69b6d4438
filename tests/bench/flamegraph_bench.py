#!/usr/bin/env python3
"""Side by side, in one run, on one big `perf script` text: what the flame graph costs over the
collapsed stacks it is drawn from.

  folded      jitsym annotate --folded < TEXT > /dev/null
  flamegraph  jitsym flamegraph < TEXT -o OUT.svg
  pprof       jitsym annotate --pprof OUT.pb.gz < TEXT    (for the record; no target)

TEXT is the `perf script` output of a real recording (node --perf-prof running
tests/integration/perf/recycle_hot.js under perf record -k mono -g), repeated until it is
--size-mb large (default 1024: about 5M samples). Every repetition names the same frames at the
same times, so the daemon's answers are those of a real profile; what grows is the number of
samples. The commands run interleaved --repeat times; medians and the ratio are printed
(target: flamegraph <= 1.1x folded).

  python3 tests/bench/flamegraph_bench.py --jitsymd build/jitsymd --jitsym build/jitsym
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, os.pardir, "integration", "perf", "recycle_hot.js")


def timed(cmd):
    t0 = time.monotonic()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jitsymd", required=True)
    ap.add_argument("--jitsym", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--no-pprof", action="store_true", help="skip the pprof writer")
    ap.add_argument("--callchains", action="store_true",
                    help="record with -g (deep stacks: about 0.7M samples per GB instead of 5M+)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        sys.exit("perf not found (Debian: linux-perf)")
    root = tempfile.mkdtemp(prefix="jitsym-flamegraph-bench-")
    watch = os.path.join(root, "watch")
    os.mkdir(watch)
    sock = os.path.join(root, "jitsymd.sock")
    data = os.path.join(root, "perf.data")
    daemon = None
    try:
        subprocess.run([perf, "record", "-q", "-k", "mono", "-e", "cpu-clock", "-F", "999"] +
                       (["-g"] if args.callchains else []) + ["-o", data, "--", "node", "--perf-prof", "--expose-gc",
                        "--allow-natives-syntax", WORKLOAD, "40", "25", "8"], cwd=watch,
                       check=True, stdout=subprocess.DEVNULL)
        daemon = subprocess.Popen([os.path.abspath(args.jitsymd), "--watch", watch, "--socket",
                                   sock, "--discovery-interval", "0"], stderr=subprocess.DEVNULL)
        jitsym = f"{os.path.abspath(args.jitsym)} --socket {sock}"
        for _ in range(200):
            if subprocess.run(f"{jitsym} ping", shell=True,
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        last = None
        for _ in range(600):  # the whole jitdump indexed: its range count stops changing
            out = subprocess.run(f"{jitsym} processes --json", shell=True, capture_output=True,
                                 text=True).stdout
            if out and out == last:
                break
            last = out
            time.sleep(0.2)
        one = subprocess.run([perf, "script", "-i", data], capture_output=True,
                             check=True).stdout
        text = os.path.join(root, "script.txt")
        target = args.size_mb << 20
        with open(text, "wb") as f:
            written = 0
            while written < target:
                f.write(one)
                written += len(one)
        per_copy = (one.count(b"\n\n") if args.callchains else
                    sum(1 for l in one.split(b"\n") if l and not l.startswith(b"\t")))
        samples = per_copy * (written // len(one))
        svg = os.path.join(root, "out.svg")
        pb = os.path.join(root, "out.pb.gz")
        cmds = {
            "folded": f"{jitsym} annotate --quiet --folded < {text} > /dev/null",
            "flamegraph": f"{jitsym} flamegraph --quiet -o {svg} < {text}",
        }
        if not args.no_pprof:
            cmds["pprof"] = f"{jitsym} annotate --quiet --pprof {pb} < {text}"
        times = {k: [] for k in cmds}
        for _ in range(args.repeat):
            for k, c in cmds.items():
                times[k].append(timed(c))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"perf record {'-g ' if args.callchains else ''}of node; "
              f"input: {written / 1e9:.2f} GB of perf script text, about {samples / 1e6:.1f}M "
              f"samples ({len(one) / 1e6:.1f} MB recording repeated); {args.repeat} "
              "interleaved runs; svg " + f"{os.path.getsize(svg) / 1e6:.2f} MB")
        for k in cmds:
            print(f"  {k:10s} median {med[k]:7.2f} s   runs " +
                  " ".join(f"{t:.2f}" for t in times[k]))
        print(f"flamegraph / folded = {med['flamegraph'] / med['folded']:.3f}x  (target <= 1.1x)")
        if "pprof" in med:
            print(f"pprof / folded      = {med['pprof'] / med['folded']:.3f}x")
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait()
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
