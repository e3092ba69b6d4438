#!/usr/bin/env python3
"""End-to-end figures for docs/performance.md, against the real daemon and client.

  python3 tests/bench/daemon_bench.py --build build [--loads 1000000] [--lookups 1000000]

1. ingest: jitsymd starts on a directory holding a generated V8-like jitdump (startup scan) and
   the time until every byte is indexed gives MB/s; then stats gives memory per range.
2. socket: `jitsym lookup --pid P` reads N addresses from stdin (random addresses inside
   functions), end to end through the client, the socket and the daemon: addresses/s.
3. latency: LOAD records are appended one at a time to a live jitdump; after each write a
   client asks for the new function until it answers: p50/p99/max of write -> answerable.
4. perf map ingest: as 1, for a generated V8/JVM-like perf-<pid>.map of --perfmap-mb MB
   (`--only perfmap` runs this phase alone, `--repeat N` repeats it and prints the median).
   `--baseline DIR` also runs DIR/jitsymd on the same file, alternating with --build's run by
   run, and prints both medians and their ratio: the host's speed drifts, so only figures from
   one such run compare.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import jitdump  # noqa: E402  (the integration tests' independent writer)
import harness  # noqa: E402  (the stand-in JIT process that maps its jitdump)


def wait_for(predicate, timeout, interval=0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError("timed out")


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")

    def call(self, obj):
        self.sock.sendall(json.dumps(obj).encode() + b"\n")
        return json.loads(self.file.readline())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--loads", type=int, default=1_000_000)
    ap.add_argument("--lookups", type=int, default=1_000_000)
    ap.add_argument("--latency-records", type=int, default=2000)
    ap.add_argument("--perfmap-mb", type=int, default=100)
    ap.add_argument("--only", choices=["jitdump", "perfmap"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--baseline", help="a second build dir whose jitsymd runs interleaved (perf map)")
    args = ap.parse_args()
    if args.only != "jitdump":
        perfmap_ingest(args)
    if args.only != "perfmap":
        jitdump_phases(args)


def write_perfmap(path, megabytes):
    """Lines as V8 --perf-basic-prof writes them, every 16th as jcmd Compiler.perfmap does,
    one in eight reusing an earlier address (the shape of tests/bench/perfmap_bench.cc)."""
    import random
    rng = random.Random(42)
    target = megabytes << 20
    addr = 0x3ef414e00000
    size_done = 0
    i = 0
    with open(path, "w") as f:
        chunk = []
        while size_done < target:
            size = 0x40 + rng.randrange(0x800)
            start = addr - (rng.randrange(64) + 1) * 0x400 if rng.randrange(8) == 0 else addr
            if i % 16 == 0:
                line = f"0x{start:016x} 0x{size:016x} void pkg.Class{i % 5000}.method(int)\n"
            else:
                line = (f"{start:x} {size:x} LazyCompile:*fn_{i % 50000} "
                        f"/srv/app/mod{i % 97}.js:{i % 1000}\n")
            chunk.append(line)
            size_done += len(line)
            if start == addr:
                addr += size
            i += 1
            if len(chunk) >= 65536:
                f.write("".join(chunk))
                chunk.clear()
        f.write("".join(chunk))


def time_perfmap_ingest(jitsymd, watch, sock, size):
    """Seconds from starting jitsymd on `watch` until it has ingested `size` bytes, and the
    number of ranges it then reports."""
    t0 = time.monotonic()
    daemon = subprocess.Popen([jitsymd, "--watch", watch, "--socket", sock,
                               "--log-level", "warning"])
    try:
        def ingested():
            try:
                st = Conn(sock).call({"op": "stats"})["stats"]
            except OSError:
                return None
            return st if st["bytes_ingested"] >= size else None
        s = wait_for(ingested, 600)
        dt = time.monotonic() - t0
    finally:
        daemon.terminate()
        daemon.wait()
    return dt, s["ranges"]


def perfmap_ingest(args):
    builds = [("", args.build)]
    if args.baseline:
        builds = [("new ", args.build), ("base", args.baseline)]
    with tempfile.TemporaryDirectory(prefix="jitsym-bench-") as tmp:
        watch = os.path.join(tmp, "watch")
        os.mkdir(watch)
        sock = os.path.join(tmp, "jitsymd.sock")
        sleeper = subprocess.Popen(["sleep", "3600"])
        path = os.path.join(watch, f"perf-{sleeper.pid}.map")
        write_perfmap(path, args.perfmap_mb)
        size = os.path.getsize(path)
        rates = {label: [] for label, _ in builds}
        try:
            for i in range(args.repeat):
                # Alternate which build goes first, so neither always follows the other.
                for label, build in (builds if i % 2 == 0 else builds[::-1]):
                    dt, ranges = time_perfmap_ingest(os.path.join(build, "jitsymd"), watch, sock,
                                                     size)
                    rates[label].append(size / 1e6 / dt)
                    print(f"perf map ingest: {label}{' ' if label else ''}{size / 1e6:.1f} MB, "
                          f"{ranges} ranges in {dt:.3f} s (daemon start included) = "
                          f"{rates[label][-1]:.0f} MB/s", flush=True)
        finally:
            sleeper.kill()
        for label, r in rates.items():
            if len(r) > 1:
                print(f"perf map ingest: {label}{' ' if label else ''}median "
                      f"{statistics.median(r):.0f} MB/s over {len(r)} runs (min {min(r):.0f}, "
                      f"max {max(r):.0f})")
        if args.baseline and args.repeat > 0:
            new, base = (statistics.median(rates[label]) for label, _ in builds)
            print(f"perf map ingest: new/base = {new / base:.2f}x (medians, same run, "
                  f"load average {os.getloadavg()[0]:.2f})")


def stand_in(watch):
    proc = subprocess.Popen(harness.standin_argv([watch]), stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()  # "ready"
    return proc


def wait_mapped(pid, path):
    def mapped():
        with open(f"/proc/{pid}/maps") as f:
            return path in f.read()
    wait_for(mapped, 10)


def daemon_stats(sock):
    """The daemon's `stats`, or None while it does not answer yet."""
    try:
        return Conn(sock).call({"op": "stats"})["stats"]
    except OSError:
        return None


def load_latencies(watch, sock, records):
    """A new live process (a stand-in that maps its jitdump) appends `records` LOADs to its
    jitdump in `watch` one at a time; after each write a client asks the daemon at `sock` for
    the new function until it is answered. The write -> answerable times in ms, sorted. The
    jitdump is removed and its writer killed afterwards."""
    writer = stand_in(watch)
    try:
        w = jitdump.Writer(writer.pid)
        path = os.path.join(watch, f"jit-{writer.pid}.dump")
        conn = Conn(sock)
        lat = []
        with open(path, "wb", buffering=0) as f:
            f.write(w.header(1))
            wait_mapped(writer.pid, path)
            for i in range(records):
                addr = 0x7e0000000000 + i * 0x100
                rec = w.load(10 + i, addr, 0x80, f"JS:*latency_{i}", i + 1)
                t0 = time.monotonic()
                f.write(rec)
                while True:
                    r = conn.call({"op": "lookup", "pid": writer.pid,
                                   "addrs": [hex(addr + 0x10)]})
                    if r["results"][0]["found"]:
                        break
                    if time.monotonic() - t0 > 60:
                        raise SystemExit(f"LOAD {i} never answerable: {r['results'][0]}")
                lat.append((time.monotonic() - t0) * 1e3)
        os.unlink(path)
        return sorted(lat)
    finally:
        writer.kill()
        writer.wait()


def jitdump_phases(args):
    jitsymd = os.path.join(args.build, "jitsymd")
    client = os.path.join(args.build, "jitsym")
    gen = os.path.join(args.build, "tests", "bench", "jitdump_gen")

    with tempfile.TemporaryDirectory(prefix="jitsym-bench-") as tmp:
        watch = os.path.join(tmp, "watch")
        os.mkdir(watch)
        sock = os.path.join(tmp, "jitsymd.sock")
        # A live process owns the generated dump and maps it, as a JIT runtime maps its marker:
        # the daemon believes a jitdump only of the process that maps it.
        sleeper = stand_in(watch)
        pid = sleeper.pid
        dump = os.path.join(tmp, f"jit-{pid}.dump")
        addrs = os.path.join(tmp, "addrs.txt")
        subprocess.run([gen, dump, str(args.loads), str(pid), addrs, str(args.lookups)],
                       check=True)
        size = os.path.getsize(dump)
        os.rename(dump, os.path.join(watch, os.path.basename(dump)))
        wait_mapped(pid, os.path.join(watch, os.path.basename(dump)))
        # Drop the file from no cache: the figure is for a file in the page cache, as a
        # just-written jitdump is.
        t0 = time.monotonic()
        daemon = subprocess.Popen([jitsymd, "--watch", watch, "--socket", sock,
                                   "--log-level", "warning"])
        try:
            s = wait_for(lambda: (lambda st: st if st and st["bytes_ingested"] >= size else None)(
                daemon_stats(sock)), 600)
            t1 = time.monotonic()
            print(f"ingest: {size / 1e6:.1f} MB, {s['ranges']} ranges in {t1 - t0:.3f} s "
                  f"(daemon start included) = {size / 1e6 / (t1 - t0):.0f} MB/s")
            time.sleep(1.5)  # idle compaction
            s = daemon_stats(sock)
            print(f"memory: {s['memory_bytes'] / 1e6:.1f} MB for {s['ranges']} ranges "
                  f"= {s['memory_bytes'] / s['ranges']:.1f} bytes/range (names, line tables included)")

            with open(addrs, "rb") as f:
                data = f.read()
            for fmt in ([], ["--json"]):
                best = None
                for _ in range(3):
                    t0 = time.monotonic()
                    out = subprocess.run([client, "--socket", sock, "lookup", "--pid", str(pid)] + fmt,
                                         input=data, stdout=subprocess.PIPE, check=True).stdout
                    dt = time.monotonic() - t0
                    best = dt if best is None else min(best, dt)
                lines = out.count(b"\n")
                unknown = out.count(b"\t??") if not fmt else out.count(b'"found":false')
                print(f"socket{' --json' if fmt else ''}: {lines} addresses in {best:.3f} s "
                      f"(best of 3) = {lines / best / 1e6:.2f} M addresses/s, {unknown} unknown")

            # Latency: a second live process writes records one by one.
            lat = load_latencies(watch, sock, args.latency_records)
            p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
            print(f"latency write->answerable over {len(lat)} LOADs: p50 {p(0.5):.2f} ms, "
                  f"p99 {p(0.99):.2f} ms, max {lat[-1]:.2f} ms")
        finally:
            daemon.terminate()
            daemon.wait()
            sleeper.kill()


if __name__ == "__main__":
    main()
