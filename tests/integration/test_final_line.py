#!/usr/bin/env python3
"""The last line of a perf map or a ReadyToRun map that has no trailing newline, against the
real daemon and client: static r2rmaps (watched, and in an --r2rmap-dir, read once) and perf
maps written whole without a final newline answer for every record, the last included, once the
file has stopped growing; a perf map whose last line is completed later answers the completed
name, once (no second record, no shorter name left behind); a JVM-style map (jcmd
Compiler.perfmap: 0x fields, written in one go) without a final newline; the last line of a map
whose process exits is read at once."""

import json
import os
import time

from harness import Harness, check, find_dicts, json_documents, wait_until

h = Harness(__doc__)
SIG = "00112233445566778899AABBCCDDEEFF"
FIX = {}


def r2rmap(records, sig=SIG):
    lines = [f"FFFFFFFF 00 {sig}", "FFFFFFFE 00 1", "FFFFFFFD 00 2", "FFFFFFFC 00 3",
             "FFFFFFFB 00 1"]
    lines += [f"{rva:08X} {length:02X} {name}" for rva, length, name in records]
    return "\n".join(lines).encode()  # no newline after the last record


FOO = [(0x1000, 0x20, "Foo.Program::Main(string[])"), (0x2000, 0x40, "Foo.Last::Method()")]
BAR = [(0x3000, 0x10, "Bar.Lib::First()"), (0x3010, 0x10, "Bar.Lib::Last()")]


def map_path(pid):
    return os.path.join(h.watch_dir, f"perf-{pid}.map")


def lookup(*args):
    res = h.client("lookup", "--json", *args)
    check(res.returncode == 0, f"lookup {args}: exit {res.returncode}: {res.stderr}")
    return [json.loads(l) for l in res.stdout.splitlines() if l.strip()]


def names(pid, addrs):
    return [a.get("name") if a.get("found") else None
            for a in h.lookup(pid, [(x, None) for x in addrs])]


def ranges_of(pid):
    """Code ranges the daemon holds for the pid (`jitsym processes --json`)."""
    res = h.client("processes", "--json")
    check(res.returncode == 0, f"processes: {res.stderr}")
    mine = [p for p in find_dicts(json_documents(res.stdout), "pid") if p.get("pid") == pid]
    check(mine and "ranges" in mine[-1], f"pid {pid}: {res.stdout[:600]}")
    return mine[-1]["ranges"]


@h.setup
def write_maps_then_start_the_daemon():
    FIX["extra"] = os.path.join(h.root, "r2r")
    os.mkdir(FIX["extra"])
    h.write_file(os.path.join(h.watch_dir, "Foo.ni.r2rmap"), r2rmap(FOO))
    h.write_file(os.path.join(FIX["extra"], "Bar.ni.r2rmap"), r2rmap(BAR, sig="AB" * 16))
    pid = h.sleeper()
    FIX["static"] = pid
    h.write_file(map_path(pid), b"7f0000001000 100 first\n7f0000002000 100 second\n"
                 b"7f0000003000 100 last_without_newline")
    h.start_daemon(["--r2rmap-dir", FIX["extra"]])


@h.case
def static_perf_map_answers_its_last_line():
    pid = FIX["static"]
    h.wait_resolves(pid, 0x7f0000003010, "last_without_newline", timeout=10)
    check(names(pid, [0x7f0000001000, 0x7f0000002000, 0x7f00000030ff]) ==
          ["first", "second", "last_without_newline"], "every record answers")


@h.case
def watched_r2rmap_answers_its_last_record():
    def ready():
        docs = lookup("--image", "Foo", "0x2010")
        return docs and docs[0].get("found") and docs[0]
    a = wait_until(ready, 10, "the last record of Foo.ni.r2rmap")
    check(a["name"] == FOO[1][2] and a["offset"] == 0x10, f"{a}")
    docs = lookup("--image", "Foo", "0x1004")
    check(docs[0].get("found") and docs[0]["name"] == FOO[0][2], f"{docs}")


@h.case
def r2rmap_dir_map_read_once_answers_its_last_record_at_once():
    docs = lookup("--image", "Bar", "0x3004", "0x3014")
    check(docs[0].get("found") and docs[0]["name"] == BAR[0][2], f"{docs}")
    check(docs[1].get("found") and docs[1]["name"] == BAR[1][2], f"last record: {docs}")


@h.case
def completed_last_line_answers_once_with_the_completed_name():
    pid = h.sleeper()
    path = map_path(pid)
    h.write_file(path, b"7f0000011000 100 one\n7f0000012000 100 LazyCompile:~partial_na")
    h.wait_resolves(pid, 0x7f0000012010, "LazyCompile:~partial_na", timeout=10)
    t_between = time.monotonic_ns()
    h.append_file(path, b"me /srv/a.js:7\n7f0000013000 100 three\n")
    full = "LazyCompile:~partial_name /srv/a.js:7"
    h.wait_resolves(pid, 0x7f0000013000, "three", timeout=10)
    check(names(pid, [0x7f0000012010]) == [full], "the completed name answers")
    # With a time too: the completed name, never the provisional one.
    a = h.lookup_one(pid, 0x7f0000012010, t_between)
    check(a.get("found") and a["name"] == full, f"at {t_between}: {a}")
    # Nothing answers with the provisional name anywhere any more.
    res = h.client("perfmap", "--pid", pid, "-o", "-")
    check(res.returncode == 0, f"perfmap: {res.stderr}")
    check("partial_na\n" not in res.stdout and res.stdout.count("partial_name") == 1,
          f"perfmap export: {res.stdout!r}")


@h.case
def completed_as_it_stood_is_not_indexed_twice():
    pid = h.sleeper()
    path = map_path(pid)
    h.write_file(path, b"7f0000021000 100 alpha\n7f0000022000 100 beta")
    h.wait_resolves(pid, 0x7f0000022000, "beta", timeout=10)
    h.append_file(path, b"\n7f0000023000 100 gamma\n")
    h.wait_resolves(pid, 0x7f0000023000, "gamma", timeout=10)
    check(names(pid, [0x7f0000022000]) == ["beta"], "beta")
    n = ranges_of(pid)
    check(n == 3, f"{n} ranges for 3 lines (the completed line indexed twice?)")


@h.case
def jvm_style_map_written_in_one_go_without_final_newline():
    pid = h.sleeper()
    lines = [f"0x{0x7f7d3c800000 + i * 0x200:016x} 0x{0x180:016x} void pkg.C.m{i}(int)"
             for i in range(200)]
    h.write_file(map_path(pid), "\n".join(lines).encode())
    h.wait_resolves(pid, 0x7f7d3c800000 + 199 * 0x200 + 4, "void pkg.C.m199(int)", timeout=10)
    got = names(pid, [0x7f7d3c800000 + i * 0x200 for i in range(200)])
    check(got == [f"void pkg.C.m{i}(int)" for i in range(200)],
          f"{sum(1 for g in got if g)} of 200 answer")


@h.case
def process_exit_reads_the_last_line_at_once():
    pid = h.sleeper()
    path = map_path(pid)
    h.write_file(path, b"7f0000031000 100 a\n")
    h.wait_resolves(pid, 0x7f0000031000, "a", timeout=10)
    h.append_file(path, b"7f0000032000 100 written_just_before_exit")
    h.kill_child(pid)
    # At exit the daemon drains the file and finishes it: the last line counts without waiting
    # for the file to settle (well within the settle delay, polled closely).
    h.wait_resolves(pid, 0x7f0000032000, "written_just_before_exit", timeout=10)


if __name__ == "__main__":
    h.main()
