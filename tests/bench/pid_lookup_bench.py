#!/usr/bin/env python3
"""Pid lookups answered from a live process's executable mappings (the per-pid /proc snapshot
and the ELF modules), two jitsymd builds side by side, interleaved round by round.

  python3 tests/bench/pid_lookup_bench.py --jitsymd build/jitsymd --baseline OLD/jitsymd

"big": one connection sending 5 requests of 20000 addresses in the mappings of a `sleep`
process; "small": 3000 requests of 4 addresses (the per-request cost: snapshot look-up, access
check, module look-up). Wall time is the median over --rounds; the daemons' CPU time (utime +
stime from /proc) is summed over the rounds, since the machine may be shared."""
import argparse, json, os, random, shutil, socket, statistics, subprocess, sys, tempfile, time
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--jitsymd", required=True)
ap.add_argument("--baseline", required=True, help="the jitsymd binary to compare with")
ap.add_argument("--rounds", type=int, default=11)
args = ap.parse_args()
builds = {"base": os.path.abspath(args.baseline), "new": os.path.abspath(args.jitsymd)}
root = tempfile.mkdtemp(prefix="jitsym-pidbench-")
procs = {}
for name, binary in builds.items():
    wd = os.path.join(root, name); os.mkdir(wd)
    sock = os.path.join(root, name + ".sock")
    p = subprocess.Popen([binary, "--watch", wd, "--socket", sock, "--log-level", "warning"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    procs[name] = (p, sock)
sleeper = subprocess.Popen(["sleep", "600"])
time.sleep(0.5)
exec_maps = []
for line in open(f"/proc/{sleeper.pid}/maps"):
    f = line.split()
    if len(f) >= 6 and f[1][2] == "x" and f[5].startswith("/"):
        a, b = (int(x, 16) for x in f[0].split("-"))
        exec_maps.append((a, b))
rng = random.Random(1)
def addrs(n):
    return [hex(rng.randrange(*rng.choice(exec_maps))) for _ in range(n)]
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def conn(sock):
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sock); return s, s.makefile("rb")
        except OSError: time.sleep(0.05)
def run(p, sock, batches):
    c0 = cpu(p.pid)
    s, f = conn(sock)
    t0 = time.perf_counter()
    for b in batches:
        s.sendall(json.dumps({"op": "lookup", "pid": sleeper.pid, "addrs": b}).encode() + b"\n")
        r = json.loads(f.readline())
    dt = time.perf_counter() - t0
    s.close()
    return dt, cpu(p.pid) - c0, r
big = [addrs(20000)]
small = [addrs(4) for _ in range(3000)]
for name, (p, sock) in procs.items():
    _, _, r = run(p, sock, big)  # warm modules
    print(name, "found", sum(1 for x in r["results"] if x.get("found")), "of", len(r["results"]))
res = {k: {"big": [], "small": [], "bigcpu": [], "smallcpu": []} for k in procs}
for rnd in range(args.rounds):
    order = list(procs.items()) if rnd % 2 == 0 else list(procs.items())[::-1]
    for name, (p, sock) in order:
        for kind, batches in (("big", big * 5), ("small", small)):
            dt, c, _ = run(p, sock, batches)
            res[name][kind].append(dt); res[name][kind + "cpu"].append(c)
for kind in ("big", "small"):
    b = statistics.median(res["base"][kind]); n = statistics.median(res["new"][kind])
    bc = sum(res["base"][kind + "cpu"]); nc = sum(res["new"][kind + "cpu"])
    print(f"{kind}: wall median base {b*1000:.1f} ms, new {n*1000:.1f} ms, new/base {n/b:.3f}; "
          f"daemon cpu total base {bc:.2f} s, new {nc:.2f} s, new/base {nc/bc:.3f}")
sleeper.kill()
sleeper.wait()
for p, _ in procs.values():
    p.terminate()
    p.wait()
shutil.rmtree(root, ignore_errors=True)
