#!/usr/bin/env python3
"""Discovery end to end: a jitsymd with its default discovery (no --watch covers the JIT
processes' files) on a host with --processes extra sleeping processes.

  sudo python3 tests/bench/discovery_bench.py --jitsymd build/jitsymd --jitsym build/jitsym

Measures (1) the daemon's CPU share while idle with those processes, over --idle seconds
(utime + stime from /proc/PID/stat), and (2) over --rounds rounds, the delay from starting a
JIT process to the first answer for one of its JIT functions: node --perf-prof in a scratch
working directory, and node in a container (unshare --pid --fork --mount --mount-proc, a tmpfs
on its /tmp) writing its jitdump there. The address asked for is the first code load of the
jitdump, read by the bench itself (through /proc/PID/root for the container); the delay is
measured from the Popen of node (the daemon can know of the process no earlier) and, separately,
from the jitdump's creation (its first load record's timestamp, CLOCK_MONOTONIC)."""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import jitdump  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--jitsymd", required=True)
ap.add_argument("--jitsym", required=True)
ap.add_argument("--processes", type=int, default=1000)
ap.add_argument("--idle", type=float, default=30.0)
ap.add_argument("--settle", type=float, default=70.0,
                help="seconds before measuring the idle cost: the extra processes are re-read "
                     "at the ages of 1 ... 64 s, then every ~60 s (the steady state)")
ap.add_argument("--rounds", type=int, default=5)
args = ap.parse_args()

# Not under /tmp: the container mounts a tmpfs over its /tmp and copies the script from here.
root = tempfile.mkdtemp(prefix="jitsym-discovery-bench-", dir="/var/tmp")
os.chmod(root, 0o755)
watch = os.path.join(root, "watch")
os.mkdir(watch)
sock = os.path.join(root, "s.sock")
HOT = ("function hotDiscovery(n){let s=0;for(let i=0;i<n;i++)s+=Math.sqrt(i)*i;return s}"
       "const e=Date.now()+4000;let x=0;while(Date.now()<e)x+=hotDiscovery(10000);")
with open(os.path.join(root, "hot.js"), "w") as f:
    f.write(HOT)

sleepers = [subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
            for _ in range(args.processes)]
daemon = subprocess.Popen([args.jitsymd, "--watch", watch, "--socket", sock, "--log-level",
                           "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def lookup(pid, addr):
    r = subprocess.run([args.jitsym, "--socket", sock, "lookup", "--json", "--pid", str(pid),
                        hex(addr)], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    for line in r.stdout.splitlines():
        d = json.loads(line)
        if d.get("found"):
            return d.get("name")
    return None


def first_load(path):
    try:
        with open(path, "rb") as f:
            dump = jitdump.parse(f.read())
    except OSError:
        return None
    if dump is None:
        return None
    loads = [r for r in dump.loads() if "hotDiscovery" in r.name] or dump.loads()
    return loads[0] if loads else None


def round_trip(container):
    scratch = tempfile.mkdtemp(prefix="scratch-", dir=root)
    shutil.copy(os.path.join(root, "hot.js"), scratch)
    if container:
        cmd = ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "sh", "-c",
               f"mount -t tmpfs tmpfs /tmp && cp {scratch}/hot.js /tmp/ && cd /tmp && "
               "exec node --perf-prof hot.js"]
    else:
        cmd = ["node", "--perf-prof", "hot.js"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=scratch, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    host_pid, path = None, None
    deadline = t0 + 10
    while time.monotonic() < deadline and path is None:
        if container:
            kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                  text=True).stdout.split()
            for k in kids:
                for name in os.listdir(f"/proc/{k}/root/tmp") if os.path.exists(
                        f"/proc/{k}/root/tmp") else []:
                    if name.startswith("jit-") and name.endswith(".dump"):
                        host_pid, path = int(k), f"/proc/{k}/root/tmp/{name}"
        else:
            for name in os.listdir(scratch):
                if name.startswith("jit-") and name.endswith(".dump"):
                    host_pid, path = int(name[4:-5]), os.path.join(scratch, name)
        time.sleep(0.005)
    rec = None
    while time.monotonic() < deadline and rec is None:
        rec = first_load(path) if path else None
        time.sleep(0.005)
    answered = None
    while time.monotonic() < deadline and rec is not None:
        if lookup(host_pid, rec.code_addr) == rec.name:
            answered = time.monotonic()
            break
        time.sleep(0.01)
    proc.wait()
    if answered is None:
        return None, None
    return answered - t0, answered - rec.ts / 1e9


time.sleep(1)
c0, t0 = cpu_s(daemon.pid), time.monotonic()
time.sleep(args.settle)
young = (cpu_s(daemon.pid) - c0) / (time.monotonic() - t0) * 100
c0, t0 = cpu_s(daemon.pid), time.monotonic()
time.sleep(args.idle)
idle = (cpu_s(daemon.pid) - c0) / (time.monotonic() - t0) * 100
print(f"{args.processes} extra processes ({len(os.listdir('/proc'))} /proc entries): jitsymd used "
      f"{young:.2f}% of one core over the {args.settle:.0f} s after they started, "
      f"{idle:.2f}% over the next {args.idle:.0f} s (steady)")
for container in (False, True):
    kind = "container (private /tmp)" if container else "scratch working directory"
    res = [round_trip(container) for _ in range(args.rounds)]
    ok = [r for r in res if r[0] is not None]
    if not ok:
        print(f"{kind}: never answered")
        continue
    print(f"{kind}: first answer {statistics.median(r[0] for r in ok) * 1000:.0f} ms median "
          f"(max {max(r[0] for r in ok) * 1000:.0f}) after node started, "
          f"{statistics.median(r[1] for r in ok) * 1000:.0f} ms median after its first code load; "
          f"{len(ok)}/{len(res)} answered")
daemon.terminate()
daemon.wait()
for s in sleepers:
    s.kill()
for s in sleepers:
    s.wait()
shutil.rmtree(root, ignore_errors=True)
