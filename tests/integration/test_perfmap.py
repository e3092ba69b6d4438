#!/usr/bin/env python3
"""Perf maps (`perf-<pid>.map`) written by the test against the real daemon: every producer's
line shape, lines present before the daemon saw the file (valid from the process start, later
line wins), a line written in two pieces, malformed lines skipped and logged with their offset,
an address reused while the daemon watches (time-qualified lookups before and after the reuse
both right, untimed lookups the newest), and a process with both a jitdump and a perf map (the
jitdump answers where both know the address, `--origin perfmap` restricts)."""

import json
import os
import time

import jitdump
from harness import Harness, check, find_dicts, hexaddr, json_documents

h = Harness(__doc__)
FIX = {}


def map_path(pid):
    return os.path.join(h.watch_dir, f"perf-{pid}.map")


def process_entry(pid):
    res = h.client("processes", "--json")
    check(res.returncode == 0, f"processes --json: exit {res.returncode} {res.stderr}")
    mine = [p for p in find_dicts(json_documents(res.stdout), "pid") if p.get("pid") == pid]
    check(mine, f"pid {pid} not listed: {res.stdout[:800]}")
    return mine[-1]


def lookup_args(pid, *args):
    res = h.client("lookup", "--pid", pid, "--json", *args)
    check(res.returncode == 0, f"lookup exit {res.returncode}: {res.stderr}")
    return [json.loads(l) for l in res.stdout.splitlines() if l.strip()]


def name_of(answer):
    return answer.get("name") if answer.get("found") else None


# Lines of every producer's shape, and their expected (start, size, name).
PRE_LINES = [
    # V8 --perf-basic-prof: bare lower-case hex.
    ("7f0000001000 100 LazyCompile:~first /srv/a.js:1\n", 0x7f0000001000, 0x100, None),
    # The JVM's jcmd Compiler.perfmap: 0x-prefixed 16-digit fields.
    ("0x00007f0000002000 0x0000000000000080 void pkg.Hot.spin(int)\n", 0x7f0000002000, 0x80,
     "void pkg.Hot.spin(int)"),
    # .NET: upper case, names with spaces and brackets, CRLF from a Windows-built tool.
    ("7F0000003000 40 [System.Private.CoreLib] System.String::Concat(string,string)"
     "[OptimizedTier1]\r\n", 0x7f0000003000, 0x40,
     "[System.Private.CoreLib] System.String::Concat(string,string)[OptimizedTier1]"),
    # Mono --jitmap; tabs and several spaces between fields.
    ("7f0000004000\t 3c   Hello:Main (string[])\n", 0x7f0000004000, 0x3c, "Hello:Main (string[])"),
    # Reuse among the lines already there: the later one wins.
    ("7f0000001000 100 LazyCompile:*first /srv/a.js:1\n", 0x7f0000001000, 0x100,
     "LazyCompile:*first /srv/a.js:1"),
    # Size 0 defines nothing.
    ("7f0000005000 0 empty\n", 0x7f0000005000, 0, None),
]


@h.setup
def write_maps_then_start_the_daemon():
    pid = h.sleeper()
    FIX["pre"] = pid
    h.write_file(map_path(pid), "".join(l for l, *_ in PRE_LINES).encode())
    # A process with both a jitdump and a perf map.
    both = h.sleeper()
    FIX["both"] = both
    base = time.monotonic_ns()
    w = jitdump.Writer(both)
    h.write_file(h.dump_path(both), w.header(base), w.load(base + 10, 0x7e0000001000, 0x100,
                                                           "jitdump_fn", 1))
    h.write_file(map_path(both), b"7e0000001000 100 perfmap_fn_same_place\n"
                 b"7e0000001080 100 perfmap_fn_overlapping\n"
                 b"7e0000002000 100 perfmap_only_fn\n")
    h.start_daemon()


@h.case
def lines_of_every_producer_resolve():
    pid = FIX["pre"]
    for _, start, size, name in PRE_LINES:
        if name is None:
            continue
        h.wait_resolves(pid, start, name, timeout=10)
        answers = h.lookup(pid, [(start, None), (start + size - 1, None), (start + size, None)])
        check([name_of(a) for a in answers[:2]] == [name, name],
              f"{hexaddr(start)}+{size:#x}: {answers[:2]}")
        check(answers[0].get("origin") == "perfmap" and answers[0].get("size") == size and
              answers[0].get("start") == hexaddr(start), f"answer fields: {answers[0]}")
        check(name_of(answers[2]) is None or answers[2].get("start") != hexaddr(start),
              f"{hexaddr(start + size)} is past the end of {name}: {answers[2]}")
    check(name_of(h.lookup_one(pid, 0x7f0000005000)) is None, "a size-0 line defined something")


@h.case
def lines_present_before_discovery_are_valid_from_the_process_start():
    pid = FIX["pre"]
    p = process_entry(pid)
    # The incarnation of a live process starts at its start time, read from /proc.
    start = p.get("first_time")
    check(isinstance(start, int) and start > 0, f"no first_time for a live process: {p}")
    srcs = [s for s in p.get("sources", []) if s.get("origin") == "perfmap"]
    check(srcs, f"perfmap source not listed for pid {pid}: {p}")
    addr = 0x7f0000001000
    answers = h.lookup(pid, [(addr, start - 1), (addr, start), (addr, start + 1), (addr, None)])
    got = [name_of(a) for a in answers]
    want = [None] + ["LazyCompile:*first /srv/a.js:1"] * 3
    check(got == want, f"at process start -1, start, +1, now: got {got}, want {want}")
    check(answers[1].get("loaded_at") == start, f"loaded_at should be the start: {answers[1]}")


@h.case
def a_line_written_in_two_pieces_waits_for_its_newline():
    pid = FIX["pre"]
    path = map_path(pid)
    h.append_file(path, b"7f0000006000 40 half_")
    time.sleep(0.3)
    check(name_of(h.lookup_one(pid, 0x7f0000006000)) is None,
          "a line without its newline was indexed (its name may still be growing)")
    h.append_file(path, b"written_name\n")
    h.wait_resolves(pid, 0x7f0000006000, "half_written_name", timeout=5)


@h.case
def malformed_lines_are_skipped_counted_and_logged_with_their_offset():
    pid = FIX["pre"]
    path = map_path(pid)
    offset = os.path.getsize(path)
    bad = [b"not hex at all\n", b"7f0000007000\n", b"7f0000007000 zz name\n",
           b"7f0000007000 10\n", b"1ffffffffffffffff 10 overflow\n", b"ffffffffffffffff 2 wraps\n",
           b"7f0000007000 10 " + b"x" * (70 * 1024) + b"\n"]
    offsets = []
    for line in bad:
        offsets.append(offset)
        offset += len(line)
    h.append_file(path, *bad, b"7f0000007000 10 after_the_bad_lines\n")
    h.wait_resolves(pid, 0x7f0000007000, "after_the_bad_lines", timeout=5)
    log = [l for l in h.daemon.log_lines() if path in l and "line skipped" in l]
    logged = [int(l.split(": offset ")[1].split(":")[0]) for l in log]
    # The first five are logged individually, the rest only counted.
    check(logged == offsets[:5], f"logged offsets {logged}, want {offsets[:5]}:\n" + "\n".join(log))
    check(any("further malformed lines" in l for l in log), f"no 'further' note: {log}")


@h.case
def address_reused_while_watching():
    pid = h.sleeper()
    path = map_path(pid)
    addr = 0x7d0000001000
    h.write_file(path, b"7d0000001000 200 LazyCompile:~before_reuse /srv/r.js:1\n")
    first = h.wait_resolves(pid, addr, "LazyCompile:~before_reuse /srv/r.js:1", timeout=5)
    time.sleep(0.01)
    t_before = time.monotonic_ns()  # CLOCK_MONOTONIC, the daemon's clock
    time.sleep(0.01)
    # The JIT frees the code and puts another function there (partly overlapping).
    h.append_file(path, b"7d0000001000 100 LazyCompile:*after_reuse /srv/r.js:9\n")
    second = h.wait_resolves(pid, addr, "LazyCompile:*after_reuse /srv/r.js:9", timeout=5)
    t_after = time.monotonic_ns()
    stamp = second.get("loaded_at")
    check(isinstance(stamp, int) and t_before < stamp <= t_after,
          f"the reusing line should be stamped when the daemon read it, between {t_before} and "
          f"{t_after}: {second}")
    check(first.get("loaded_at") < t_before, f"first line stamped after the reuse: {first}")
    last_time = process_entry(pid).get("last_time")
    check(last_time == stamp, f"processes last_time {last_time} is not the reuse's stamp {stamp}")
    queries = [(addr, t_before), (addr + 0x150, t_before), (addr, stamp - 1), (addr, stamp),
               (addr, t_after), (addr, None), (addr + 0x150, t_after), (addr + 0x150, None)]
    got = [name_of(a) for a in h.lookup(pid, queries)]
    old, new = "LazyCompile:~before_reuse /srv/r.js:1", "LazyCompile:*after_reuse /srv/r.js:9"
    # Past the new, shorter function the old one was never redefined.
    want = [old, old, old, new, new, new, old, old]
    check(got == want, "time-qualified answers around the reuse:\n  " + "\n  ".join(
        f"{hexaddr(a)} @ {t}: got {g!r}, want {w!r}"
        for (a, t), g, w in zip(queries, got, want) if g != w))


@h.case
def jitdump_takes_precedence_where_it_knows_the_address():
    pid = FIX["both"]
    h.wait_resolves(pid, 0x7e0000002000, "perfmap_only_fn", timeout=10)
    h.wait_resolves(pid, 0x7e0000001000, "jitdump_fn", timeout=10)
    addrs = [0x7e0000001000, 0x7e00000010ff, 0x7e0000001100, 0x7e0000002050]
    answers = [h.lookup_one(pid, a) for a in addrs]
    got = [(name_of(a), a.get("origin")) for a in answers]
    want = [("jitdump_fn", "jitdump"), ("jitdump_fn", "jitdump"),
            ("perfmap_fn_overlapping", "perfmap"), ("perfmap_only_fn", "perfmap")]
    check(got == want, f"got {got}, want {want}")
    only_pm = lookup_args(pid, "--origin", "perfmap", *map(hexaddr, addrs))
    got = [name_of(a) for a in only_pm]
    want = ["perfmap_fn_same_place", "perfmap_fn_overlapping", "perfmap_fn_overlapping",
            "perfmap_only_fn"]
    check(got == want, f"--origin perfmap: got {got}, want {want}")
    only_jd = lookup_args(pid, "--origin", "jitdump", *map(hexaddr, addrs))
    got = [name_of(a) for a in only_jd]
    check(got == ["jitdump_fn", "jitdump_fn", None, None], f"--origin jitdump: got {got}")
    origins = sorted(s.get("origin") for s in process_entry(pid).get("sources", []))
    check(origins == ["jitdump", "perfmap"], f"sources of pid {pid}: {origins}")


@h.case
def a_map_rewritten_in_place_is_read_again_from_the_start():
    # jcmd Compiler.perfmap truncates and rewrites the file; the new contents may already be
    # longer than what the daemon had read when it looks again.
    pid = h.sleeper()
    path = map_path(pid)
    h.write_file(path, b"1000 100 first_version\n2000 100 other\n")
    h.wait_resolves(pid, 0x1010, "first_version")
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(b"1000 100 second_version_with_a_longer_name\n3000 100 third\n")
    h.wait_resolves(pid, 0x3010, "third")
    h.wait_resolves(pid, 0x1010, "second_version_with_a_longer_name")
    check(any("rewritten" in l and path in l for l in h.daemon.log_lines()),
          "no log line about the rewrite")


@h.case
def names_that_only_resemble_perf_maps_are_ignored():
    pid = FIX["pre"]
    for name in (f"perf-0{pid}.map", f"perf-{pid}.map.tmp", f"perf-{pid}x.map"):
        h.write_file(os.path.join(h.watch_dir, name), b"7c0000001000 10 decoy\n")
    time.sleep(0.3)
    check(name_of(h.lookup_one(pid, 0x7c0000001000)) is None, "a decoy file was followed")


h.main()
