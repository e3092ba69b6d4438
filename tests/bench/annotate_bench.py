#!/usr/bin/env python3
"""Side by side, in one run, on one recording: what naming JIT frames costs.

  plain     perf script -i DATA > /dev/null
  alone     jitsym annotate < saved perf script text > /dev/null   (the filter's own cost)
  base      perf script -i DATA | BASE_JITSYM annotate > /dev/null  (with --base-jitsym)
  annotate  perf script -i DATA | jitsym annotate > /dev/null
  inject    perf inject --jit -i DATA -o INJ && perf script -i INJ > /dev/null

The recording is node --perf-prof running tests/integration/perf/recycle_hot.js (code addresses
recycled) under perf record -k mono -g -e cpu-clock. The three pipelines run interleaved
--repeat times; medians and ratios are printed (targets: annotate <= 1.25x plain, inject >= 3x
annotate).

  python3 tests/bench/annotate_bench.py --jitsymd build/jitsymd --jitsym build/jitsym
"""

import argparse
import glob
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
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", default="40", help="workload rounds (recycling)")
    ap.add_argument("--per-round", default="25")
    ap.add_argument("--ms", default="8", help="ms each function runs")
    ap.add_argument("--freq", default="999", help="perf record -F (samples per second)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--base-jitsym", help="another build's jitsym: its annotate pipeline too, "
                    "against the same daemon")
    args = ap.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        sys.exit("perf not found (Debian: linux-perf)")
    root = tempfile.mkdtemp(prefix="jitsym-annotate-bench-")
    watch = os.path.join(root, "watch")
    os.mkdir(watch)
    sock = os.path.join(root, "jitsymd.sock")
    data = os.path.join(root, "perf.data")
    daemon = None
    try:
        subprocess.run([perf, "record", "-q", "-k", "mono", "-e", "cpu-clock", "-F", args.freq,
                        "-g", "-o", data, "--", "node", "--perf-prof", "--expose-gc",
                        "--allow-natives-syntax", WORKLOAD, args.rounds, args.per_round,
                        args.ms], cwd=watch, check=True, stdout=subprocess.DEVNULL)
        daemon = subprocess.Popen([os.path.abspath(args.jitsymd), "--watch", watch, "--socket",
                                   sock], stderr=subprocess.DEVNULL)
        jitsym = f"{os.path.abspath(args.jitsym)} --socket {sock}"
        for _ in range(200):
            if subprocess.run(f"{jitsym} ping", shell=True,
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        # Wait until the whole jitdump is indexed: its range count stops changing.
        last = None
        for _ in range(600):
            out = subprocess.run(f"{jitsym} processes --json", shell=True, capture_output=True,
                                 text=True).stdout
            if out and out == last:
                break
            last = out
            time.sleep(0.2)
        lines = int(subprocess.run(f"{perf} script -i {data} | wc -l", shell=True,
                                   capture_output=True, text=True).stdout)
        size = os.path.getsize(glob.glob(os.path.join(watch, "jit-*.dump"))[0])
        inj = os.path.join(root, "inj.data")
        text = os.path.join(root, "script.txt")
        subprocess.run(f"{perf} script -i {data} > {text}", shell=True, check=True,
                       stderr=subprocess.DEVNULL)
        cmds = {
            "plain": f"{perf} script -i {data} > /dev/null",
            "annotate": f"{perf} script -i {data} | {jitsym} annotate > /dev/null",
            "inject": f"{perf} inject --jit -i {data} -o {inj} && {perf} script -i {inj} "
                      "> /dev/null",
            # The filter by itself, on saved perf script text: its own cost.
            "alone": f"{jitsym} annotate < {text} > /dev/null",
        }
        if args.base_jitsym:
            base = f"{os.path.abspath(args.base_jitsym)} --socket {sock}"
            cmds["base"] = f"{perf} script -i {data} | {base} annotate > /dev/null"
        times = {k: [] for k in cmds}
        daemon_cpu = {k: [] for k in cmds}
        tick = os.sysconf("SC_CLK_TCK")

        def cpu():
            with open(f"/proc/{daemon.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick

        for _ in range(args.repeat):
            for k, c in cmds.items():
                for f in glob.glob(os.path.join(watch, "jitted-*.so")):
                    os.unlink(f)
                c0 = cpu()
                times[k].append(timed(c))
                daemon_cpu[k].append(cpu() - c0)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"recording: -F {args.freq}, workload {args.rounds} x {args.per_round} functions "
              f"x {args.ms} ms, {lines} lines of perf script output, jitdump {size / 1e6:.1f} MB"
              f", {args.repeat} interleaved runs")
        for k in cmds:
            print(f"  {k:9s} median {med[k]:7.3f} s   daemon CPU "
                  f"{statistics.median(daemon_cpu[k]):.3f} s   runs " +
                  " ".join(f"{t:.3f}" for t in times[k]))
        print(f"annotate / plain  = {med['annotate'] / med['plain']:.2f}x  (target <= 1.25x)")
        print(f"inject / annotate = {med['inject'] / med['annotate']:.2f}x  (target >= 3x)")
        if "base" in med:
            print(f"base annotate / plain = {med['base'] / med['plain']:.2f}x")
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
