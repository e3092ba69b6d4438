#!/usr/bin/env python3
"""Restart rebuild: how long jitsymd takes from exec to READY=1 (every file in the watch
directory indexed, the socket served) when the watch directory holds ~1 GB of jitdumps, as after
a restart or an upgrade. Side by side in the same run, for scale: reading the same bytes with
cat. Each run is measured with the files' pages cached (warm: a restart on a running host) and
dropped with posix_fadvise(DONTNEED) (cold: after a reboot).

  python3 tests/bench/restart_bench.py --build build [--files 8] [--loads-per-file 92000] [--runs 5]
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def ready_time(jitsymd, watch, sock_path, notify_path):
    """Seconds from exec to READY=1, and the daemon's memory_bytes at that point."""
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(0.5)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    env.pop("WATCHDOG_USEC", None)
    t0 = time.monotonic()
    proc = subprocess.Popen([jitsymd, "--config", "/dev/null", "--watch", watch, "--socket",
                             sock_path, "--log-level", "warning", "--retention", "0",
                             "--memory-budget", "0"], env=env, stdin=subprocess.DEVNULL)
    try:
        while True:
            try:
                msg = notify.recv(4096).decode()
            except socket.timeout:
                if proc.poll() is not None:
                    raise RuntimeError(f"jitsymd exited with {proc.returncode} before READY=1")
                continue
            if "READY=1" in msg.split("\n"):
                elapsed = time.monotonic() - t0
                status = [l for l in msg.split("\n") if l.startswith("STATUS=")]
                return elapsed, status[0][7:] if status else ""
    finally:
        proc.terminate()
        proc.wait(60)
        notify.close()
        os.unlink(notify_path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--loads-per-file", type=int, default=92000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    jitsymd = os.path.abspath(os.path.join(args.build, "jitsymd"))
    gen = os.path.join(args.build, "tests", "bench", "jitdump_gen")

    with tempfile.TemporaryDirectory(prefix="jitsym-restart-") as tmp:
        watch = os.path.join(tmp, "watch")
        os.mkdir(watch)
        paths = []
        for i in range(args.files):
            # Pids that do not exist: the processes of a restart's files have mostly exited.
            pid = 3_000_000 + i
            path = os.path.join(watch, f"jit-{pid}.dump")
            subprocess.run([gen, path, str(args.loads_per_file), str(pid)], check=True)
            paths.append(path)
        total = sum(os.path.getsize(p) for p in paths)
        print(f"{args.files} jitdumps, {args.loads_per_file} loads each, "
              f"{total / 1e9:.2f} GB in total", flush=True)
        def drop_cache():
            # These files' pages only (posix_fadvise), not the whole machine's page cache.
            for p in paths:
                fd = os.open(p, os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)

        # Reading the bytes: the floor any rebuild has. Warm: the files' pages are cached, as
        # for a restart on a running host. Cold: dropped first, as after a reboot.
        results = {"warm": ([], []), "cold": ([], [])}
        status = ""
        for run in range(args.runs):
            for cache in ("warm", "cold"):
                cat_times, ready_times = results[cache]
                if cache == "cold":
                    drop_cache()
                t0 = time.monotonic()
                subprocess.run(["cat", *paths], stdout=subprocess.DEVNULL, check=True)
                cat_times.append(time.monotonic() - t0)
                if cache == "cold":
                    drop_cache()
                elapsed, status = ready_time(jitsymd, watch, os.path.join(tmp, "s.sock"),
                                             os.path.join(tmp, "notify.sock"))
                ready_times.append(elapsed)
                print(f"run {run + 1} {cache}: cat {cat_times[-1]:.2f} s, jitsymd exec -> "
                      f"READY=1 {elapsed:.2f} s", flush=True)
        for cache, (cat_times, ready_times) in results.items():
            med_ready, med_cat = statistics.median(ready_times), statistics.median(cat_times)
            print(f"median {cache}: exec -> READY=1 {med_ready:.2f} s "
                  f"({total / 1e6 / med_ready:.0f} MB/s), cat {med_cat:.2f} s; "
                  f"ratio {med_ready / med_cat:.1f}x")
        print(f"status at READY: {status}")


if __name__ == "__main__":
    sys.exit(main())
