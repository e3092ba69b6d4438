#!/usr/bin/env python3
"""Native symbolization throughput, jitsymd vs llvm-symbolizer, side by side in one run.

Both symbolize the same batch of addresses (random addresses inside the functions of an ELF file
with DWARF, inlined frames included):
  cold  the first batch: jitsymd freshly started (module not cached) + one `jitsym lookup`, vs a
        fresh `llvm-symbolizer --inlines` process;
  warm  the same batch again: `jitsym lookup` against the running daemon, vs the same batch fed
        again to the running llvm-symbolizer process (its caches are warm too).
Every figure is the median of --rounds runs; ratios are llvm-symbolizer time / jitsym time.

  python3 tests/bench/native_bench.py --jitsymd build/jitsymd --jitsym build/jitsym \\
      --elf build/tests/unit_tests --addresses 20000 --rounds 5
"""

import argparse
import os
import random
import select
import shutil
import statistics
import subprocess
import tempfile
import time


def sample_addresses(path, n, seed=7):
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW" and int(parts[1], 16) > 0:
            funcs.append((int(parts[0], 16), int(parts[1], 16)))
    rng = random.Random(seed)
    return [s + rng.randrange(z) for s, z in (rng.choice(funcs) for _ in range(n))]


class Daemon:
    def __init__(self, jitsymd, root):
        self.socket = os.path.join(root, f"d{time.monotonic_ns()}.sock")
        self.proc = subprocess.Popen([jitsymd, "--watch", root, "--socket", self.socket,
                                      "--log-level", "warning"], stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + 20
        while not os.path.exists(self.socket):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("jitsymd did not start")
            time.sleep(0.01)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def jitsym_batch(jitsym, socket, elf, text):
    t0 = time.perf_counter()
    res = subprocess.run([jitsym, "--socket", socket, "lookup", "--image", elf], input=text,
                         capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"jitsym lookup failed: {res.stderr}")
    return elapsed


class Llvm:
    """One llvm-symbolizer process fed batch after batch through a pipe."""

    def __init__(self, elf):
        self.proc = subprocess.Popen(["llvm-symbolizer", "--inlines", "--obj=" + elf],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.buf = b""

    def batch(self, text, n):
        t0 = time.perf_counter()
        data = text.encode()
        fd_in, fd_out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        sent = 0
        blank = 0
        while blank < n:
            want_write = [fd_in] if sent < len(data) else []
            r, w, _ = select.select([fd_out], want_write, [], 120)
            if not r and not w:
                raise SystemExit("llvm-symbolizer stalled")
            if w:
                sent += os.write(fd_in, data[sent:sent + 65536])
            if r:
                chunk = os.read(fd_out, 1 << 20)
                if not chunk:
                    raise SystemExit("llvm-symbolizer exited")
                self.buf += chunk
                blank += self.buf.count(b"\n\n")
                self.buf = self.buf[self.buf.rfind(b"\n\n") + 2:] if b"\n\n" in self.buf else \
                    self.buf
        return time.perf_counter() - t0

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jitsymd", default="build/jitsymd")
    p.add_argument("--jitsym", default="build/jitsym")
    p.add_argument("--elf", default="build/tests/unit_tests")
    p.add_argument("--addresses", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    if not shutil.which("llvm-symbolizer"):
        raise SystemExit("llvm-symbolizer not found (Debian package llvm)")
    addrs = sample_addresses(a.elf, a.addresses)
    text = "".join(f"0x{x:x}\n" for x in addrs)
    n = len(addrs)
    root = tempfile.mkdtemp(prefix="jitsym-native-bench-")
    cold_j, cold_l, warm_j, warm_l = [], [], [], []
    try:
        for _ in range(a.rounds):
            d = Daemon(a.jitsymd, root)
            try:
                cold_j.append(jitsym_batch(a.jitsym, d.socket, a.elf, text))
                for _ in range(3):
                    warm_j.append(jitsym_batch(a.jitsym, d.socket, a.elf, text))
            finally:
                d.stop()
            llvm = Llvm(a.elf)
            t0 = time.perf_counter()
            first = llvm.batch(text, n)
            cold_l.append(first + 0 * t0)
            for _ in range(3):
                warm_l.append(llvm.batch(text, n))
            llvm.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    size = os.path.getsize(a.elf) / 1e6
    print(f"{n} addresses in {a.elf} ({size:.0f} MB), {a.rounds} rounds, medians")
    print(f"{'':6} {'llvm-symbolizer':>16} {'jitsym':>10} {'ratio':>7}")
    for name, l, j in (("cold", cold_l, cold_j), ("warm", warm_l, warm_j)):
        ml, mj = statistics.median(l), statistics.median(j)
        print(f"{name:6} {ml * 1000:13.1f} ms {mj * 1000:7.1f} ms {ml / mj:6.1f}x   "
              f"({n / ml / 1000:.0f}k vs {n / mj / 1000:.0f}k addresses/s)")


if __name__ == "__main__":
    main()
