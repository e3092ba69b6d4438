#!/usr/bin/env python3
"""Memory and latency under a lookup flood, for docs/performance.md ("Under attack").

  sudo python3 tests/bench/attack_bench.py --build build [--seconds 30] [--connections 16]

Runs the real jitsymd (default settings) as root with two real unprivileged users
(tests/integration/users.py): jsbob pushes lookups of 2^20 addresses (the per-request maximum,
every one found, ~60 bytes of answer each) on --connections connections, a third of them never
reading their answers, a third reading 4 KiB every 50 ms, a third reading fully and sending the
next; meanwhile jsalice sends 16-address lookups on one connection, one every 10 ms, and the
time from sending to the whole answer is measured. The daemon's RSS is sampled every 100 ms;
VmHWM gives the peak. Prints one JSON object.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import users  # noqa: E402
from harness import status_kb  # noqa: E402

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError(what)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--connections", type=int, default=16)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (acts as jsalice and jsbob through setpriv)")
    users.ensure_both()
    root = tempfile.mkdtemp(prefix="jitsym-attack-bench-")
    os.chmod(root, 0o755)
    watch = os.path.join(root, "watch")
    os.mkdir(watch)
    os.chmod(watch, 0o1777)
    sock = os.path.join(root, "jitsymd.sock")
    helper = os.path.join(root, "attack_client.py")
    shutil.copy(os.path.join(HERE, "..", "integration", "attack_client.py"), helper)
    os.chmod(helper, 0o755)
    children = []
    daemon = None
    try:
        def as_user(name, argv, **kw):
            p = subprocess.Popen(users.argv(name, argv), env=users.env(name),
                                 stdin=subprocess.DEVNULL, **kw)
            children.append(p)
            return p

        alice_pid = as_user(users.ALICE, ["sleep", "600"]).pid
        bob_pid = as_user(users.BOB, ["sleep", "600"]).pid
        time.sleep(0.2)
        users.write(users.ALICE, os.path.join(watch, f"perf-{alice_pid}.map"),
                    "".join("%x 40 alice_fn_%d\n" % (0x20000000 + i * 64, i) for i in range(1000)))
        users.write(users.BOB, os.path.join(watch, f"perf-{bob_pid}.map"),
                    "".join("%x 40 bob_fn_%d\n" % (0x10000000 + i * 64, i)
                            for i in range((1 << 24) // 64)))
        log = open(os.path.join(root, "jitsymd.log"), "wb")
        daemon = subprocess.Popen([os.path.join(args.build, "jitsymd"), "--watch", watch,
                                   "--socket", sock], stdout=log, stderr=log)
        client = os.path.join(args.build, "jitsym")
        wait_for(lambda: b"bob_fn_1" in subprocess.run(
            [client, "--socket", sock, "lookup", "--pid", str(bob_pid), "0x10000040"],
            capture_output=True).stdout, 60, "the maps to be indexed")
        rss_idle = status_kb(daemon.pid, "VmRSS")

        reads = "never,slow,full"
        bob = as_user(users.BOB, [PYTHON, helper, sock, "flood", str(args.connections),
                                  str(bob_pid), str(1 << 20), reads],
                      stdout=subprocess.PIPE, text=True)
        bob_lines = []
        threading.Thread(target=lambda: bob_lines.extend(l.strip() for l in bob.stdout),
                         daemon=True).start()
        wait_for(lambda: sum(l.startswith("sent") for l in bob_lines) >= args.connections // 2,
                 60, "bob's first requests")
        samples = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                samples.append(status_kb(daemon.pid, "VmRSS"))
                time.sleep(0.1)
        sampler = threading.Thread(target=sample)
        sampler.start()
        alice = subprocess.run(users.argv(users.ALICE, [PYTHON, helper, sock, "probe",
                                                        str(args.seconds), str(alice_pid),
                                                        "0x20000010"]),
                               env=users.env(users.ALICE), capture_output=True, text=True,
                               timeout=args.seconds + 60)
        stop.set()
        sampler.join()
        peak = status_kb(daemon.pid, "VmHWM")
        probe = json.loads(alice.stdout)
        times = probe["times_ms"]
        stats = json.loads(subprocess.run([client, "--socket", sock, "stats", "--json"],
                                          capture_output=True, text=True).stdout)
        print(json.dumps({
            "bob_connections": args.connections,
            "bob_addresses_per_request": 1 << 20,
            "bob_requests_sent": sum(l.startswith("sent") for l in bob_lines),
            "bob_busy_answers": sum(l.startswith("busy") for l in bob_lines),
            "rss_idle_mib": rss_idle >> 10,
            "rss_max_sampled_mib": max(samples) >> 10,
            "rss_peak_vmhwm_mib": peak >> 10,
            "alice_lookups": len(times),
            "alice_errors": probe["errors"],
            "alice_p50_ms": round(percentile(times, 50), 2),
            "alice_p99_ms": round(percentile(times, 99), 2),
            "alice_max_ms": round(max(times), 2),
            "daemon_errors_sent": stats.get("errors"),
        }, indent=1))
    finally:
        for p in children:
            p.kill()
            p.wait()
        if daemon is not None:
            daemon.terminate()
            daemon.wait(10)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
