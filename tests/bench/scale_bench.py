#!/usr/bin/env python3
"""The daemon's cost per process as the number of processes grows, side by side with a base build.

For each --processes N (default 10,1000,10000): jit_crowd starts N live processes, each mapping
its jitdump of --ranges code loads in a fresh watch directory; then, for each build in turn:
  start   jitsymd exec -> every record of every file indexed (start-up scan, writers
          identified, files read): wall seconds and the daemon's CPU seconds;
  idle    the daemon's CPU over --idle seconds once settled, in % of one core;
  latency one more process appends --latency LOADs one at a time to its jitdump while the N
          others stay; after each write a client asks for the new function until it is
          answered: p50/p99 of write -> answerable.
Run as root (the crowd's files are root's; the per-user file limits are raised to fit them).
Each process takes two of the daemon's descriptors (its file, its pidfd): the hard
RLIMIT_NOFILE bounds N (20,000 allows 3,700).

  python3 tests/bench/scale_bench.py --build build --base /work/base/build \\
      --processes 10,1000,10000
"""
import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time

from daemon_bench import daemon_stats, load_latencies, wait_for  # noqa: E402
from native_bench import process_cpu  # noqa: E402


def run_build(build, watch, n, ranges, idle_s, latency_records):
    sock = os.path.join(watch, "..", f"d{time.monotonic_ns()}.sock")
    # A followed jitdump and its process's pidfd each take a descriptor, both the owner's; a
    # user's share is at most half the files' share of the descriptors (docs/operations.md).
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = min(4 * (2 * n + 1024) + 4096, hard if hard != resource.RLIM_INFINITY else 1 << 20)
    user_files = (nofile - 256) * 3 // 4 // 2
    if user_files < 2 * n:
        raise SystemExit(f"{n} processes need {2 * n} descriptors of one user; the hard "
                         f"RLIMIT_NOFILE {hard} gives {user_files}")

    def raise_nofile():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    t0 = time.monotonic()
    daemon = subprocess.Popen([os.path.join(build, "jitsymd"), "--watch", watch, "--socket", sock,
                               "--log-level", "error", "--limit-user-files", str(user_files),
                               "--limit-total-files", str(2 * user_files)],
                              stdin=subprocess.DEVNULL, preexec_fn=raise_nofile)
    out = {}
    try:
        want = n * ranges
        s = wait_for(lambda: (lambda st: st if st and st["records_ingested"] >= want else None)(
            daemon_stats(sock)), 1800, interval=0.05)
        out["start"] = time.monotonic() - t0
        out["start_cpu"] = process_cpu(daemon.pid)
        out["followed"] = s["files_followed"]
        time.sleep(2)  # settle: compaction, deferred work
        c0 = process_cpu(daemon.pid)
        time.sleep(idle_s)
        out["idle"] = max(process_cpu(daemon.pid) - c0, 0) / idle_s * 100
        lat = load_latencies(watch, sock, latency_records)
        out["p50"] = statistics.median(lat)
        out["p99"] = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
    finally:
        daemon.terminate()
        daemon.wait(30)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--base", help="a second build directory, measured alike")
    ap.add_argument("--processes", default="10,1000,10000")
    ap.add_argument("--ranges", type=int, default=100)
    ap.add_argument("--idle", type=float, default=10)
    ap.add_argument("--latency", type=int, default=500, help="LOADs appended one at a time")
    a = ap.parse_args()
    builds = {"new": a.build}
    if a.base:
        builds["base"] = a.base
    crowd_bin = os.path.join(a.build, "tests", "bench", "jit_crowd")
    print(f"{'N':>6} {'build':5} {'start s':>8} {'start CPU s':>11} {'idle %':>7} "
          f"{'p50 ms':>7} {'p99 ms':>7}")
    for n in (int(x) for x in a.processes.split(",")):
        with tempfile.TemporaryDirectory(prefix="jitsym-scale-") as tmp:
            watch = os.path.join(tmp, "watch")
            os.mkdir(watch)
            crowd = subprocess.Popen([crowd_bin, watch, str(n), str(a.ranges)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                line = crowd.stdout.readline()
                if not line.startswith("ready"):
                    raise SystemExit(f"jit_crowd: {line.strip()}")
                results = {}
                for name, build in builds.items():
                    results[name] = run_build(build, watch, n, a.ranges, a.idle, a.latency)
                for name, r in results.items():
                    print(f"{n:6} {name:5} {r['start']:8.2f} {r['start_cpu']:11.2f} "
                          f"{r['idle']:7.2f} {r['p50']:7.2f} {r['p99']:7.2f}"
                          + ("" if r["followed"] >= n else f"  (only {r['followed']} followed)"),
                          flush=True)
                if "base" in results:
                    b, w = results["base"], results["new"]
                    print(f"{n:6} base/new start {b['start'] / w['start']:.2f}x, "
                          f"p99 {b['p99'] / w['p99']:.2f}x", flush=True)
            finally:
                crowd.stdin.close()
                crowd.wait(120)


if __name__ == "__main__":
    main()
