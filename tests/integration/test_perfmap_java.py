#!/usr/bin/env python3
"""A real JVM perf map: a small Java program compiled with javac at test time runs a hot method;
`jcmd <pid> Compiler.perfmap` writes /tmp/perf-<pid>.map (0x-prefixed 16-digit fields, always in
/tmp), so this test's daemon watches /tmp too and asserts only about the JVM it started. The hot
method resolves by the addresses in that file while the JVM runs and after it exits. jcmd
rewrites the whole file each time (truncate, write): the daemon starts it over, and the newer
contents answer. Prints SKIPPED and exits 0 only if no JVM can run here."""

import atexit
import os
import shutil
import subprocess
import sys
import time

import perfmap
import harness
from harness import Harness, check, hexaddr, wait_until

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
HOT = "JitsymHotLoop.jitsymSpin"
JVM = {}


def java_runs():
    for tool in ("java", "javac", "jcmd"):
        if shutil.which(tool) is None:
            return f"{tool} not on PATH (./build.sh installs default-jdk-headless)"
    try:
        res = subprocess.run(["java", "-version"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"java -version failed: {e}"
    return None if res.returncode == 0 else f"java -version exited {res.returncode}"


def write_perfmap():
    res = subprocess.run(["jcmd", str(JVM["pid"]), "Compiler.perfmap"], capture_output=True,
                         text=True, timeout=60)
    check(res.returncode == 0, f"jcmd Compiler.perfmap exited {res.returncode}: "
          f"{res.stdout[-300:]} {res.stderr[-300:]}")
    return perfmap.read(JVM["path"])


@h.setup
def compile_start_java_and_write_its_perf_map():
    classes = os.path.join(h.root, "classes")
    os.mkdir(classes)
    res = subprocess.run(["javac", "-d", classes, os.path.join(HERE, "java", "JitsymHotLoop.java")],
                         capture_output=True, text=True, timeout=180)
    check(res.returncode == 0, f"javac failed: {res.stderr[-1000:]}")
    h.start_daemon(extra_args=["--watch", "/tmp"])
    proc = h.spawn(["java", "-cp", classes, "JitsymHotLoop"], cwd=h.watch_dir,
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    JVM.update(proc=proc, pid=proc.pid, path=f"/tmp/perf-{proc.pid}.map")
    line = harness.read_line(proc, 60, "java")
    check(line.split()[:2] == ["ready", str(proc.pid)], f"unexpected java output {line!r}")

    def compiled():  # the JIT compiles the hot method within a second or so
        before = time.monotonic_ns()  # the method is compiled; its map line not yet written
        lines = write_perfmap()
        JVM["before_map_ns"] = before
        return lines if any(HOT in l.name for l in lines) else None
    JVM["lines"] = wait_until(compiled, 60, f"{HOT} in the JVM's perf map", interval=0.5)


def hot(lines):
    return [l for l in lines if HOT in l.name and l.size]


def check_hot_resolves(lines, what):
    queries, want = [], []
    for l in hot(lines):
        for a in (l.start, l.start + l.size // 2, l.end - 1):
            queries.append((a, None))
            want.append(perfmap.latest(lines, a))
    answers = h.lookup(JVM["pid"], queries)
    bad = [f"{hexaddr(a)}: got {ans.get('name')!r} {ans.get('origin')}, want {w.name!r}"
           for (a, _), w, ans in zip(queries, want, answers)
           if not (ans.get("found") and ans.get("name") == w.name and
                   ans.get("start") == hexaddr(w.start) and ans.get("origin") == "perfmap")]
    check(not bad, f"{what}: {len(bad)} of {len(queries)} wrong:\n  " + "\n  ".join(bad[:10]))
    return len(queries)


@h.case
def hot_method_resolves_while_the_jvm_runs():
    lines = JVM["lines"]
    print(f"  {len(lines)} lines; {HOT}: " +
          ", ".join(f"{hexaddr(l.start)}+{l.size:#x} {l.name!r}" for l in hot(lines)))
    check(all(l.name.startswith("long " + HOT) for l in hot(lines)),
          f"JVM names should read 'long {HOT}(long)': {[l.name for l in hot(lines)]}")
    last = lines[-1]
    h.wait_resolves(JVM["pid"], last.start, perfmap.latest(lines, last.start).name, timeout=10)
    check_hot_resolves(lines, "live")
    # A perf sample taken before jcmd wrote the map (the usual case for a JVM) must resolve
    # too: the lines reuse no address known before, so they are valid from the process start.
    t = JVM["before_map_ns"]
    answers = h.lookup(JVM["pid"], [(l.start + l.size // 2, t) for l in hot(lines)])
    bad = [a for a in answers if not (a.get("found") and HOT in a.get("name", ""))]
    check(not bad, f"samples timed before the map was written: {bad[:3]}")
    check(JVM["proc"].poll() is None, "java exited before the lookups: not a live test")


@h.case
def a_rewritten_map_answers_with_the_new_contents():
    lines = write_perfmap()
    last = lines[-1]
    h.wait_resolves(JVM["pid"], last.start, perfmap.latest(lines, last.start).name, timeout=10)
    check_hot_resolves(lines, "after jcmd rewrote the file")
    JVM["lines"] = lines


@h.case
def hot_method_resolves_after_exit():
    proc = JVM["proc"]
    proc.stdin.close()
    code = proc.wait(60)
    check(code == 0, f"java exited with {code}")
    n = check_hot_resolves(JVM["lines"], "after exit")
    print(f"  {n} addresses of {HOT} checked")
    logged = [l for l in h.daemon.log_lines() if JVM["path"] in l and "line skipped" in l]
    check(not logged, f"the daemon found malformed lines in the JVM's map: {logged[:3]}")


def remove_leftover_map():
    if JVM.get("path") and os.path.exists(JVM["path"]):
        os.unlink(JVM["path"])


if __name__ == "__main__":
    why = java_runs()
    if why:
        print(f"SKIPPED: {why}")
        shutil.rmtree(h.root, ignore_errors=True)
        sys.exit(0)
    atexit.register(remove_leftover_map)
    h.main()
