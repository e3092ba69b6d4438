#!/usr/bin/env python3
"""Answer latency while a gzip bomb is ingested: jsbob writes a gzip'd .mlpd of a few MB that
inflates to ~1 GiB (buffers of bytes that are no event), and while jitsymd inflates it, jsalice
appends a jitdump LOAD for her own live process. Measured: the time from alice's write to the
first lookup that answers her new function (polled over the socket every millisecond), over
several trials, each with a fresh bomb; and for scale the same without a bomb, and how long the
daemon stays busy with one bomb (its CPU time). Runs as root (the two users are real ones, see
tests/integration/users.py).

  python3 tests/bench/inflate_bench.py --build build [--trials 10] [--bomb-mib 1024]
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import jitdump  # noqa: E402
import users  # noqa: E402
from mlpd_bomb import mlpd_bomb  # noqa: E402


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def lookup(self, pid, addr):
        req = {"v": 1, "op": "lookup", "pid": pid, "addrs": [hex(addr)]}
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        while b"\n" not in self.buf:
            self.buf += self.sock.recv(1 << 16)
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def answered(resp, name):
    return name in json.dumps(resp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--bomb-mib", type=int, default=1024)
    args = ap.parse_args()
    jitsymd = os.path.abspath(os.path.join(args.build, "jitsymd"))
    users.ensure_both()
    tmp = tempfile.mkdtemp(prefix="jitsym-inflate-")
    children = []
    try:
        os.chmod(tmp, 0o755)
        watch = os.path.join(tmp, "watch")
        os.mkdir(watch)
        os.chmod(watch, 0o1777)
        sock = os.path.join(tmp, "jitsymd.sock")
        log = open(os.path.join(tmp, "jitsymd.log"), "wb")
        daemon = subprocess.Popen([jitsymd, "--config", "/dev/null", "--watch", watch, "--socket",
                                   sock, "--log-level", "info",
                                   # Scheduling is measured, not the limits: every bomb is read.
                                   "--limit-user-bytes", "1T", "--limit-total-bytes", "1T"],
                                  stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        children.append(daemon)
        while not os.path.exists(sock):
            time.sleep(0.01)
        time.sleep(0.2)
        bob = subprocess.Popen(users.argv(users.BOB, ["sleep", "3600"]), env=users.env(users.BOB))
        alice = subprocess.Popen(users.argv(users.ALICE, ["sleep", "3600"]),
                                 env=users.env(users.ALICE))
        children += [bob, alice]
        time.sleep(0.2)
        bomb = mlpd_bomb(bob.pid, args.bomb_mib // 32)
        print(f"bomb: {len(bomb) / 1e6:.1f} MB on disk, {args.bomb_mib} MiB inflated; "
              f"RAM {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') >> 30} GiB, "
              f"{os.cpu_count()} CPUs", flush=True)
        writer = jitdump.Writer(alice.pid)
        dump = os.path.join(watch, f"jit-{alice.pid}.dump")
        users.write(users.ALICE, dump, writer.header(time.monotonic_ns()))
        conn = Conn(sock)

        def trial(label, with_bomb, index):
            if with_bomb:
                users.write(users.BOB, os.path.join(watch, f"bomb-{label}-{index}.mlpd"), bomb)
                time.sleep(0.1)  # the daemon is inflating it now
            addr = 0x5000_0000 + index * 0x1000 + (0x100000 if with_bomb else 0)
            name = f"{label}_{index}"
            record = writer.load(time.monotonic_ns(), addr, 0x80, name, index + 1)
            t0 = time.monotonic()
            subprocess.run(users.argv(users.ALICE, ["sh", "-c", 'cat >> "$1"', "_", dump]),
                           input=record, check=True, env=users.env(users.ALICE))
            while not answered(conn.lookup(alice.pid, addr), name):
                time.sleep(0.001)
            delay = time.monotonic() - t0
            # Was the bomb still being inflated when alice was answered?
            c = cpu_seconds(daemon.pid)
            time.sleep(0.1)
            busy.append(cpu_seconds(daemon.pid) - c > 0.05)
            return delay

        def settle():
            # Until the daemon is idle (its CPU time stops growing for 0.5 s).
            last = cpu_seconds(daemon.pid)
            while True:
                time.sleep(0.5)
                now = cpu_seconds(daemon.pid)
                if now - last < 0.01:
                    return
                last = now

        results = {}
        for label, with_bomb in (("idle", False), ("bomb", True)):
            delays = []
            busy = []
            for i in range(args.trials):
                settle()
                delays.append(trial(label, with_bomb, i))
            results[label] = (delays, sum(busy))
        settle()
        c0, t0 = cpu_seconds(daemon.pid), time.monotonic()
        users.write(users.BOB, os.path.join(watch, "bomb-busy.mlpd"), bomb)
        time.sleep(0.3)
        settle()
        busy_cpu = cpu_seconds(daemon.pid) - c0
        busy_wall = time.monotonic() - t0 - 0.5
        for label, (delays, still_busy) in results.items():
            print(f"{label}: write-to-answer median {statistics.median(delays) * 1000:.0f} ms, "
                  f"max {max(delays) * 1000:.0f} ms over {len(delays)} trials "
                  f"({', '.join(f'{d * 1000:.0f}' for d in delays)}); daemon still busy after "
                  f"the answer in {still_busy} of them")
        print(f"one bomb keeps the daemon busy {busy_wall:.1f} s ({busy_cpu:.1f} s of CPU)")
    finally:
        for p in children:
            p.terminate()
            p.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
