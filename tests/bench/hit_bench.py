#!/usr/bin/env python3
"""Lookups that hit, two jitsymd builds side by side, interleaved round by round: a perf map of
200,000 functions for a live `sleep` process, 1,000,000 addresses in them asked through
`jitsym lookup` from stdin, without a time and with one (each line `ADDR TIME`, a CLOCK_MONOTONIC
time after every definition). Reports the median wall time per build and mode, and the daemons'
CPU time (utime + stime) summed over the rounds, since the machine may be shared.

  python3 tests/bench/hit_bench.py --new build --base OLD_BUILD [--rounds 5]"""
import argparse, os, random, statistics, subprocess, tempfile, time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--new", required=True, help="build directory (jitsymd, jitsym)")
ap.add_argument("--base", required=True, help="build directory to compare with")
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--functions", type=int, default=200000)
ap.add_argument("--lookups", type=int, default=1000000)
args = ap.parse_args()

root = tempfile.mkdtemp(prefix="jitsym-hitbench-")
sleeper = subprocess.Popen(["sleep", "3600"])
rng = random.Random(1)
base_addr = 0x7000_0000
with open(os.path.join(root, "perf.map"), "w") as f:
    for i in range(args.functions):
        f.write(f"{base_addr + i * 0x100:x} f0 fn_{i}\n")
addrs = [base_addr + rng.randrange(args.functions) * 0x100 + rng.randrange(0xf0)
         for _ in range(args.lookups)]
daemons = {}
for name, build in (("base", args.base), ("new", args.new)):
    wd = os.path.join(root, name)
    os.mkdir(wd)
    sock = os.path.join(root, name + ".sock")
    p = subprocess.Popen([os.path.join(build, "jitsymd"), "--watch", wd, "--socket", sock,
                          "--log-level", "warning", "--discovery-interval", "0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    daemons[name] = (p, sock, os.path.join(build, "jitsym"))
    time.sleep(0.3)
    os.link(os.path.join(root, "perf.map"), os.path.join(wd, f"perf-{sleeper.pid}.map"))
time.sleep(1.0)
t_after = time.monotonic_ns()
inputs = {"untimed": "".join(f"{a:x}\n" for a in addrs),
          "timed": "".join(f"{a:x} {t_after}\n" for a in addrs)}
for name, (_, sock, client) in daemons.items():  # wait until every function answers
    for _ in range(200):
        out = subprocess.run([client, "--socket", sock, "lookup", "--pid", str(sleeper.pid),
                              hex(base_addr + (args.functions - 1) * 0x100)],
                             capture_output=True, text=True).stdout
        if f"fn_{args.functions - 1}+" in out:
            break
        time.sleep(0.1)
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


times = {(n, m): [] for n in daemons for m in inputs}
cpus = {(n, m): 0.0 for n in daemons for m in inputs}
try:
    for r in range(args.rounds):
        for mode, text in inputs.items():
            for name, (proc, sock, client) in daemons.items():
                c0 = cpu(proc.pid)
                t0 = time.monotonic()
                out = subprocess.run([client, "--socket", sock, "lookup", "--pid",
                                      str(sleeper.pid)], input=text, capture_output=True,
                                     text=True).stdout
                times[(name, mode)].append(time.monotonic() - t0)
                cpus[(name, mode)] += cpu(proc.pid) - c0
                misses = out.count("\t??")
                assert misses == 0, f"{name} {mode}: {misses} misses"
    for mode in inputs:
        b = statistics.median(times[("base", mode)])
        n = statistics.median(times[("new", mode)])
        cb, cn = cpus[("base", mode)], cpus[("new", mode)]
        print(f"{mode:8} wall base {b:.3f} s  new {n:.3f} s  new/base {n / b:.3f}  "
              f"({args.lookups / n / 1e6:.2f} M addresses/s new); daemon CPU base {cb:.2f} s "
              f"new {cn:.2f} s  new/base " + (f"{cn / cb:.3f}" if cb > 0 else "n/a (no CPU measured)"))
finally:
    for p, _, _ in daemons.values():
        p.terminate()
        p.wait()
    sleeper.kill()
    sleeper.wait()
