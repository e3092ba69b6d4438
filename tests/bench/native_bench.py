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

With --gimli ADDR2LINE, gimli's addr2line (built offline from Debian's crate sources by
tests/bench/gimli_addr2line/build_gimli_addr2line.sh) is measured the same way, `-f -i -C` (every
frame of the chain, demangled: the nearest output to each jitsym mode; it has no JSON).
With --base-jitsymd/--base-jitsym (a build of another tree), that build is measured the same way
in every mode, and the ratios base / this build are printed: the before and after of a change.
"one address" is one `jitsym lookup` of one address in a module the daemon has not read yet
(a daemon started for it), end to end: what a script asking about one frame waits.

  python3 tests/bench/native_bench.py --jitsymd build/jitsymd --jitsym build/jitsym \\
      --elf build/tests/unit_tests --addresses 20000 --rounds 5 \\
      --gimli "$(tests/bench/gimli_addr2line/build_gimli_addr2line.sh)"
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


def gimli_run(gimli, elf, inputs, repeat):
    """(wall, CPU) seconds of a fresh gimli addr2line symbolizing the batch `repeat` times:
    functions, inlined frames, demangled."""
    return run_tool([gimli, "-f", "-i", "-C", "-e", elf], inputs, repeat)


def measure_jitsym(jitsymd, jitsym, root, elf, inputs, one_input):
    """One round of one build: (cold, {mode: warm}, one address), each (wall, cpu)."""
    d = Daemon(jitsymd, root)
    try:
        one = jitsym_batch(jitsym, d, elf, one_input)
    finally:
        d.stop()
    d = Daemon(jitsymd, root)
    try:
        cold = jitsym_batch(jitsym, d, elf, inputs)
        # Warm as for llvm-symbolizer below: the cost of each further batch in one
        # client process, (time of 1 + WARM batches - time of 1) / WARM.
        warm = {}
        for mode in ("text", "inlines", "json"):
            first = jitsym_batch(jitsym, d, elf, inputs, mode=mode)
            more = jitsym_batch(jitsym, d, elf, inputs, 1 + WARM, mode=mode)
            warm[mode] = tuple(max(m - o, 1e-9) / WARM for m, o in zip(more, first))
    finally:
        d.stop()
    return cold, warm, one


def warm_of(run):
    """The cost of each further batch in one process: (time of 1 + WARM - time of 1) / WARM,
    and the first batch (cold)."""
    one = run(1)
    more = run(1 + WARM)
    return one, tuple(max(m - o, 1e-9) / WARM for m, o in zip(more, one))


def median_pair(pairs):
    return tuple(statistics.median(x) for x in zip(*pairs))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jitsymd", default="build/jitsymd")
    p.add_argument("--jitsym", default="build/jitsym")
    p.add_argument("--elf", default="build/tests/unit_tests")
    p.add_argument("--addresses", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cpus", help="taskset CPU list every process runs on (e.g. 0)")
    p.add_argument("--gimli", help="gimli's addr2line binary (build_gimli_addr2line.sh)")
    p.add_argument("--base-jitsymd", help="jitsymd of another build, measured alike")
    p.add_argument("--base-jitsym", help="jitsym of that build")
    a = p.parse_args()
    if a.cpus:
        PIN.extend(["taskset", "-c", a.cpus])
    if not shutil.which("llvm-symbolizer"):
        raise SystemExit("llvm-symbolizer not found (Debian package llvm)")
    if bool(a.base_jitsymd) != bool(a.base_jitsym):
        raise SystemExit("--base-jitsymd and --base-jitsym go together")
    addrs = sample_addresses(a.elf, a.addresses)
    text = "".join(f"0x{x:x}\n" for x in addrs)
    n = len(addrs)
    root = tempfile.mkdtemp(prefix="jitsym-native-bench-")
    inputs = {"out": os.path.join(root, "out")}
    for repeat in (1, 1 + WARM):
        inputs[repeat] = os.path.join(root, f"in{repeat}")
        with open(inputs[repeat], "w") as f:
            f.write(text * repeat)
    one_input = {"out": inputs["out"], 1: os.path.join(root, "one")}
    with open(one_input[1], "w") as f:
        f.write(f"0x{addrs[0]:x}\n")
    builds = {"jitsym": (a.jitsymd, a.jitsym)}
    if a.base_jitsymd:
        builds["base"] = (a.base_jitsymd, a.base_jitsym)
    # Per tool, per row: a list of (wall, cpu) per round.
    rows = ("cold", "warm text", "warm --inlines", "warm --json", "one address")
    results = {}
    elf = os.path.abspath(a.elf)

    def add(tool, row, pair):
        results.setdefault(tool, {}).setdefault(row, []).append(pair)

    try:
        for _ in range(a.rounds):
            for tool, (jitsymd, jitsym) in builds.items():
                cold, warm, one = measure_jitsym(jitsymd, jitsym, root, elf, inputs, one_input)
                add(tool, "cold", cold)
                add(tool, "warm text", warm["text"])
                add(tool, "warm --inlines", warm["inlines"])
                add(tool, "warm --json", warm["json"])
                add(tool, "one address", one)
            # llvm-symbolizer: its text output with --inlines is the nearest to jitsym's text
            # and --inlines modes, its JSON to --json.
            cold, warm = warm_of(lambda r: llvm_run(elf, inputs, r))
            add("llvm", "cold", cold)
            add("llvm", "warm text", warm)
            add("llvm", "warm --inlines", warm)
            add("llvm", "warm --json", warm_of(lambda r: llvm_run(elf, inputs, r, json=True))[1])
            add("llvm", "one address", llvm_run(elf, one_input, 1))
            if a.gimli:
                cold, warm = warm_of(lambda r: gimli_run(a.gimli, elf, inputs, r))
                add("gimli", "cold", cold)
                for row in ("warm text", "warm --inlines", "warm --json"):
                    add("gimli", row, warm)
                add("gimli", "one address", gimli_run(a.gimli, elf, one_input, 1))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    size = os.path.getsize(elf) / 1e6
    pinned = f", on CPUs {a.cpus}" if a.cpus else ""
    print(f"{n} addresses in {a.elf} ({size:.0f} MB), {a.rounds} rounds{pinned}, medians of "
          "wall time (CPU = client + daemon for jitsym); ratio = other / jitsym")
    others = [t for t in ("base", "llvm", "gimli") if t in results]
    names = {"base": "base build", "llvm": "llvm-symbolizer", "gimli": "gimli addr2line"}
    print(f"{'':15} {'jitsym':>10} {'CPU':>9}" +
          "".join(f" {names[t]:>16} {'ratio':>6} {'CPU ratio':>9}" for t in others))
    for row in rows:
        jw, jc = median_pair(results["jitsym"][row])
        line = f"{row:15} {jw * 1000:7.1f} ms {jc * 1000:6.1f} ms"
        for t in others:
            ow, oc = median_pair(results[t][row])
            line += f" {ow * 1000:13.1f} ms {ow / jw:5.2f}x {oc / jc:8.2f}x"
        print(line + ("" if row == "one address" else f"   ({n / jw / 1000:.0f}k addresses/s)"))


if __name__ == "__main__":
    main()
