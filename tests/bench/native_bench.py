#!/usr/bin/env python3
"""Native symbolization throughput, jitsymd vs llvm-symbolizer, side by side in one run.

Both symbolize the same batch of addresses (random addresses inside the functions of an ELF file
with DWARF, inlined frames included):
  cold  the first batch: jitsymd freshly started (module not cached) + one `jitsym lookup`, vs a
        fresh `llvm-symbolizer --inlines` process;
  warm  the same batch again, once both have the module cached: the cost of one more batch
        in the same client process against the running daemon, vs one more batch in the same
        llvm-symbolizer process, each measured as (time for 1+3 batches - time for 1 batch) / 3.
jitsym is measured in text mode (one line per address: the outermost function and the innermost
position; the daemon resolves the inlined chain all the same) and, for warm, with --inlines (every
frame of the chain printed on that line, what llvm-symbolizer --inlines prints) and --json (every
member of every answer). Both tools read the batch from a file and write to a file.
CPU time (client + daemon for jitsym) is shown beside wall time: the machine may be shared.
Each jitsym mode is compared with llvm-symbolizer's nearest output: text and --inlines with its
text output with --inlines, --json with its --output-style=JSON.
Every figure is the median of --rounds runs; ratios are llvm-symbolizer time / jitsym time.
--cpus LIST pins every process (jitsymd, jitsym, llvm-symbolizer) to those CPUs with taskset
(`--cpus 0`: both tools on one core, what a busy machine leaves them).

  python3 tests/bench/native_bench.py --jitsymd build/jitsymd --jitsym build/jitsym \\
      --elf build/tests/unit_tests --addresses 20000 --rounds 5
"""

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time


WARM = 3  # warm batches per round
PIN = []  # taskset prefix for every process (--cpus)


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
        self.proc = subprocess.Popen(PIN + [jitsymd, "--watch", root, "--socket", self.socket,
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


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def process_cpu(pid):
    """CPU seconds of a process: its live threads to the nanosecond (schedstat), plus what
    threads that have exited used (the process's utime + stime in clock ticks minus its live
    threads': jitsymd reads a cold batch's CUs on short-lived threads)."""
    tick = os.sysconf("SC_CLK_TCK")

    def ticks(path):
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime

    live_ns = live_ticks = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                live_ns += int(f.read().split()[0])
            live_ticks += ticks(f"/proc/{pid}/task/{tid}/stat")
        except (FileNotFoundError, ProcessLookupError):
            pass
    exited_ticks = max(ticks(f"/proc/{pid}/stat") - live_ticks, 0)
    return live_ns / 1e9 + exited_ticks / tick


def run_tool(argv, inputs, repeat, extra_cpu=lambda: 0.0):
    """(wall, CPU) seconds of one run of argv reading inputs[repeat] (a file of the batch
    `repeat` times) on stdin and writing stdout to a file: both tools are timed writing to a
    file, not to this script (reading 20 MB through a pipe costs Python more than the tools)."""
    with open(inputs[repeat], "rb") as stdin, open(inputs["out"], "wb") as stdout:
        c0, x0, t0 = children_cpu(), extra_cpu(), time.perf_counter()
        res = subprocess.run(PIN + argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        cpu = children_cpu() - c0 + extra_cpu() - x0
    if res.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {res.stderr.decode(errors='replace')}")
    return wall, cpu


def jitsym_batch(jitsym, daemon, elf, inputs, repeat=1, mode="text"):
    """(wall seconds, CPU seconds of client + daemon) for one `jitsym lookup` of the batch
    `repeat` times. The daemon resolves the whole inlined chain of every address in every mode;
    text output prints one line per address (outermost name, innermost position); --inlines
    adds every frame of the chain to that line and --json carries them all (`frames`), the
    frames llvm-symbolizer --inlines prints."""
    flags = {"text": [], "inlines": ["--inlines"], "json": ["--json"]}[mode]
    return run_tool([jitsym, "--socket", daemon.socket, "lookup", "--image", elf] + flags,
                    inputs, repeat, lambda: process_cpu(daemon.proc.pid))


def llvm_run(elf, inputs, repeat, json=False):
    """(wall, CPU) seconds of a fresh llvm-symbolizer symbolizing the batch `repeat` times, in
    its text output with --inlines, or its JSON (--output-style=JSON, every frame)."""
    style = ["--output-style=JSON"] if json else []
    return run_tool(["llvm-symbolizer", "--inlines", *style, "--obj=" + elf], inputs, repeat)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jitsymd", default="build/jitsymd")
    p.add_argument("--jitsym", default="build/jitsym")
    p.add_argument("--elf", default="build/tests/unit_tests")
    p.add_argument("--addresses", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cpus", help="taskset CPU list every process runs on (e.g. 0)")
    a = p.parse_args()
    if a.cpus:
        PIN.extend(["taskset", "-c", a.cpus])
    if not shutil.which("llvm-symbolizer"):
        raise SystemExit("llvm-symbolizer not found (Debian package llvm)")
    addrs = sample_addresses(a.elf, a.addresses)
    text = "".join(f"0x{x:x}\n" for x in addrs)
    n = len(addrs)
    root = tempfile.mkdtemp(prefix="jitsym-native-bench-")
    inputs = {"out": os.path.join(root, "out")}
    for repeat in (1, 1 + WARM):
        inputs[repeat] = os.path.join(root, f"in{repeat}")
        with open(inputs[repeat], "w") as f:
            f.write(text * repeat)
    cold_j, cold_l, warm_l, warm_lj = [], [], [], []  # (wall, cpu) pairs
    warm_j = {"text": [], "inlines": [], "json": []}
    elf = os.path.abspath(a.elf)
    try:
        for _ in range(a.rounds):
            d = Daemon(a.jitsymd, root)
            try:
                cold_j.append(jitsym_batch(a.jitsym, d, elf, inputs))
                # Warm as for llvm-symbolizer below: the cost of each further batch in one
                # client process, (time of 1 + WARM batches - time of 1) / WARM.
                for mode, out in warm_j.items():
                    one = jitsym_batch(a.jitsym, d, elf, inputs, mode=mode)
                    more = jitsym_batch(a.jitsym, d, elf, inputs, 1 + WARM, mode=mode)
                    out.append(tuple(max(m - o, 1e-9) / WARM for m, o in zip(more, one)))
            finally:
                d.stop()
            # llvm-symbolizer: one batch in a fresh process (cold); the cost of each further
            # batch in one process (warm) = (time of 1 + WARM batches - time of 1) / WARM.
            one = llvm_run(elf, inputs, 1)
            more = llvm_run(elf, inputs, 1 + WARM)
            cold_l.append(one)
            warm_l.append(tuple(max(m - o, 1e-9) / WARM for m, o in zip(more, one)))
            one = llvm_run(elf, inputs, 1, json=True)
            more = llvm_run(elf, inputs, 1 + WARM, json=True)
            warm_lj.append(tuple(max(m - o, 1e-9) / WARM for m, o in zip(more, one)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    size = os.path.getsize(elf) / 1e6
    pinned = f", on CPUs {a.cpus}" if a.cpus else ""
    print(f"{n} addresses in {a.elf} ({size:.0f} MB), {a.rounds} rounds{pinned}, medians; "
          "CPU = client + daemon for jitsym")
    print(f"{'':14} {'llvm-symbolizer':>16} {'jitsym':>10} {'ratio':>7}   "
          f"{'llvm CPU':>9} {'jitsym CPU':>11} {'ratio':>7}")
    for name, l, j in (("cold", cold_l, cold_j), ("warm", warm_l, warm_j["text"]),
                       ("warm --inlines", warm_l, warm_j["inlines"]),
                       ("warm --json", warm_lj, warm_j["json"])):
        lw, lc = (statistics.median(x) for x in zip(*l))
        jw, jc = (statistics.median(x) for x in zip(*j))
        print(f"{name:14} {lw * 1000:13.1f} ms {jw * 1000:7.1f} ms {lw / jw:6.1f}x   "
              f"{lc * 1000:6.1f} ms {jc * 1000:8.1f} ms {lc / jc:6.1f}x   "
              f"({n / lw / 1000:.0f}k vs {n / jw / 1000:.0f}k addresses/s)")


if __name__ == "__main__":
    main()
