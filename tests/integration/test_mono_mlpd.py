#!/usr/bin/env python3
"""Real Mono log profiler files. A small C# program compiled with mcs runs under
`mono --profile=log:output=<watch>/live.mlpd`: while it runs, its hot method resolves by pid and
address through the mlpd (--origin mlpd), at the time the profiler stamped it (CLOCK_MONOTONIC,
so it lies between the spawn and the lookup). After each run (plain, the `zip` option, and
`output=|gzip > FILE`), every method mprof-report lists as JIT-compiled resolves to the same name
at its code address, and the source holds exactly the ranges mprof-report describes.

mprof-report --debug prints `jitted method PTR (NAME), size: N, code: ADDR`, `jit helper NAME,
size: N, code: ADDR` and `unmanaged symbol NAME at ADDR`: the names are the strings of the file,
so they compare byte for byte. jitsymd leaves out what defines no code (size or address 0) and
"method" code buffers (they repeat a JIT record), and gives unsized native symbols 16 bytes."""

import json
import os
import re
import shutil
import subprocess
import time

import harness
from harness import Harness, check, hexaddr, wait_until

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
HOT = "JitsymMlpdProbe:HotLoopForJitsym (long)"
TOOLS = {}

JIT_RE = re.compile(r"^jitted method 0x[0-9a-f]+ \((.*)\), size: (\d+), code: (0x[0-9a-f]+|\(nil\))$")
HELPER_RE = re.compile(r"^jit helper (.*), size: (\d+), code: (0x[0-9a-f]+|\(nil\))$")
USYM_RE = re.compile(r"^unmanaged symbol (.*) at (0x[0-9a-f]+)$")


def addr(text):
    return 0 if text == "(nil)" else int(text, 16)


def mprof(path):
    """What mprof-report decodes from an mlpd: (jits, helpers, usyms), each [(name, addr, size)]."""
    res = subprocess.run([TOOLS["mprof-report"], "--debug", path], capture_output=True,
                         text=True, errors="replace", timeout=120)
    jits, helpers, usyms = [], [], []
    for line in res.stdout.splitlines():
        if m := JIT_RE.match(line):
            jits.append((m.group(1), addr(m.group(3)), int(m.group(2))))
        elif m := HELPER_RE.match(line):
            helpers.append((m.group(1), addr(m.group(3)), int(m.group(2))))
        elif m := USYM_RE.match(line):
            usyms.append((m.group(1), addr(m.group(2)), 0))
    return jits, helpers, usyms


def lookup_mlpd(pid, addrs, t=None):
    text = "".join(hexaddr(a) + ("" if t is None else f" {t}") + "\n" for a in addrs)
    res = h.client("lookup", "--pid", pid, "--origin", "mlpd", "--json", input=text, timeout=120)
    check(res.returncode == 0, f"jitsym lookup exited {res.returncode}: {res.stderr.strip()[:500]}")
    out = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    check(len(out) == len(addrs), f"{len(out)} answers for {len(addrs)} addresses")
    return out


def source_ranges(pid, path):
    res = h.client("processes", "--json")
    check(res.returncode == 0, f"jitsym processes exited {res.returncode}: {res.stderr[:300]}")
    for line in res.stdout.splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        procs = doc.get("processes", doc if isinstance(doc, list) else [doc])
        for p in procs:
            if p.get("pid") != pid:
                continue
            for inc in p.get("incarnations", [p]):
                for s in inc.get("sources", []):
                    if s.get("path", s.get("file")) == path:
                        return s
    return None


def run_mono(profile_args):
    proc = h.spawn([TOOLS["mono"], "--profile=log:" + profile_args, TOOLS["exe"]],
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = harness.read_line(proc, 60, "mono")
    check(line.startswith("ready"), f"unexpected mono output {line!r}")
    return proc


def finish(proc):
    proc.stdin.close()
    rc = proc.wait(timeout=60)
    check(rc == 0, f"mono exited with {rc}: {proc.stderr.read().decode(errors='replace')[-500:]}")


def check_matches_mprof(pid, path):
    """Every JIT'd method mprof-report lists resolves to its name; the source has exactly the
    ranges mprof-report describes."""
    jits, helpers, usyms = mprof(path)
    check(any(name == HOT for name, _, _ in jits), f"mprof-report does not list {HOT} in {path}")
    code = [(n, a, s) for n, a, s in jits if a and s]
    check(len(code) > 100, f"only {len(code)} JIT'd methods with code in {path}")
    # An icall method and its managed-to-native wrapper share their code: the later record
    # (in file order, which is mprof-report's order) names the address.
    last = {a: n for n, a, _ in code}

    def all_resolve():
        addrs = sorted(last)
        answers = lookup_mlpd(pid, addrs)
        return [(last[a], hexaddr(a), ans) for a, ans in zip(addrs, answers)
                if not ans.get("found") or ans.get("name") != last[a]]

    # The daemon reads the file's tail once the process has exited; give it a moment.
    try:
        wait_until(lambda: not all_resolve(), 15, f"every JIT'd method of {path} to resolve")
    except AssertionError:
        wrong = all_resolve()
        raise AssertionError(f"{len(wrong)} of {len(last)} JIT'd code addresses resolve wrongly, "
                             f"e.g. {wrong[:3]}")
    expected = (len(code) + sum(1 for n, a, s in helpers if a and s and n != "method")
                + sum(1 for _, a, _ in usyms if a))
    src = source_ranges(pid, path)
    check(src is not None, f"`jitsym processes --json` does not list {path} for pid {pid}")
    ranges = src.get("ranges", src.get("range_count"))
    check(ranges == expected, f"{path}: the source has {ranges} ranges, mprof-report describes "
                              f"{expected} ({len(code)} methods, {len(helpers)} helpers, "
                              f"{len(usyms)} native symbols)")


@h.setup
def compile_and_start():
    for tool in ("mcs", "mono", "mprof-report"):
        TOOLS[tool] = shutil.which(tool)
        check(TOOLS[tool] is not None,
              f"{tool} is not on PATH (./build.sh installs mono-mcs, mono-runtime, "
              "libmono-profiler and mono-utils)")
    TOOLS["exe"] = os.path.join(h.root, "hot_loop.exe")
    res = subprocess.run([TOOLS["mcs"], "-nologo", "-out:" + TOOLS["exe"],
                          os.path.join(HERE, "mono", "hot_loop.cs")],
                         capture_output=True, text=True, timeout=120)
    check(res.returncode == 0, f"mcs failed: {res.stdout}{res.stderr}")
    h.start_daemon()


@h.case
def hot_method_resolves_while_mono_runs():
    path = os.path.join(h.watch_dir, "live.mlpd")
    started = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    proc = run_mono(f"output={path}")
    pid = proc.pid
    try:
        # Mono appends buffers as they fill or at its periodic sync points: read a copy the way
        # mprof-report does until the hot method's record is there.
        snap = os.path.join(h.root, "snapshot.mlpd")

        def hot_in_file():
            shutil.copyfile(path, snap)
            return next(((a, s) for n, a, s in mprof(snap)[0] if n == HOT and a), None)

        hot_addr, hot_size = wait_until(hot_in_file, 30, f"mono to write {HOT} into {path}",
                                        interval=0.2)
        for probe in (hot_addr, hot_addr + hot_size // 2, hot_addr + hot_size - 1):
            ans = wait_until(lambda: next((a for a in lookup_mlpd(pid, [probe])
                                           if a.get("found") and a.get("name") == HOT), None),
                             10, f"{hexaddr(probe)} to resolve to {HOT}")
            check(ans.get("origin") == "mlpd", f"origin {ans.get('origin')!r}, expected 'mlpd'")
        check(proc.poll() is None, "mono exited before the lookups (they must work while it runs)")
        # The profiler's clock is CLOCK_MONOTONIC: the JIT happened between spawn and now.
        loaded = int(ans["loaded_at"])
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        check(started <= loaded <= now,
              f"loaded_at {loaded} is not between the spawn ({started}) and now ({now})")
        at = lookup_mlpd(pid, [hot_addr], t=loaded)[0]
        check(at.get("found") and at.get("name") == HOT, f"at its JIT time: {at}")
        before = lookup_mlpd(pid, [hot_addr], t=started - 1)[0]
        check(not before.get("found"), f"before mono started, {hexaddr(hot_addr)} was {before}")
    finally:
        finish(proc)
    check_matches_mprof(pid, path)


@h.case
def zip_option_matches_mprof_report():
    path = os.path.join(h.watch_dir, "zipped.mlpd")
    proc = run_mono(f"output={path},zip")
    pid = proc.pid
    finish(proc)
    with open(path, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", f"{path} is not gzip-compressed")
    check_matches_mprof(pid, path)


@h.case
def gzip_pipe_matches_mprof_report():
    path = os.path.join(h.watch_dir, "piped.mlpd")
    proc = run_mono(f"output=|gzip > {path}")
    pid = proc.pid
    finish(proc)
    wait_until(lambda: os.path.exists(path) and os.path.getsize(path) > 0, 10,
               f"gzip to write {path}")
    with open(path, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", f"{path} is not gzip-compressed")
    check_matches_mprof(pid, path)


if __name__ == "__main__":
    h.main()
