#!/usr/bin/env python3
"""The jitsym command line as a user meets it: exit codes and messages, text and --json
output, JITSYM_SOCKET, both time notations, stdin mode with 100k lines in order, and the
processes, stats, ping and version commands."""

import json
import os
import random
import re
import select
import subprocess
import sys
import threading
import time

import jitdump
import oracle
from harness import Harness, check, find_dicts, hexaddr, json_documents, wait_until

h = Harness(__doc__)
FIX = {}
N_FUNCS = 300


def func_addr(i):
    return 0x7100_0000 + i * 0x200


@h.setup
def start_daemon_and_write_a_dump():
    h.start_daemon()
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    out = [w.header(base)]
    for i in range(N_FUNCS):
        addr, size = func_addr(i), 0x100 + (i % 7) * 0x10  # gaps between functions
        if i % 10 == 0:
            out.append(w.debug_info(base + 1000 * (i + 1), addr,
                                    [(addr, 10 + i, 1, f"src/f{i}.c"),
                                     (addr + 0x40, 20 + i, 5, f"src/f{i}.c")]))
        out.append(w.load(base + 1000 * (i + 1), addr, size, f"cli_fn_{i}", i))
    data = b"".join(out)
    FIX.update(pid=pid, base=base, data=data, dump=jitdump.parse(data), path=h.dump_path(pid))
    FIX["oracle"] = oracle.Oracle(FIX["dump"])
    h.write_file(FIX["path"], data)
    h.wait_resolves(pid, func_addr(N_FUNCS - 1), f"cli_fn_{N_FUNCS - 1}")


@h.case
def unreachable_daemon_exits_1_with_a_helpful_message():
    missing = os.path.join(h.root, "no-such-daemon.sock")
    for args in (("ping",), ("lookup", "--pid", "1", "0x1000"), ("processes",), ("stats",)):
        res = h.client(*args, socket_path=missing)
        check(res.returncode == 1, f"jitsym {' '.join(args)} with no daemon exited "
              f"{res.returncode}, want 1 (stderr: {res.stderr.strip()!r})")
        check(missing in res.stderr, f"the message should name the socket {missing}: "
              f"{res.stderr.strip()!r}")
    res = h.client("ping", use_socket=False, env={"JITSYM_SOCKET": missing})
    check(res.returncode == 1 and missing in res.stderr,
          f"JITSYM_SOCKET pointing nowhere: exit {res.returncode}, stderr {res.stderr!r}")


@h.case
def usage_errors_exit_2():
    for args in (("lookup", "0x1000"),                        # no --pid
                 ("lookup", "--pid", "abc", "0x1000"),
                 ("lookup", "--pid", FIX["pid"], "--time", "yesterday", "0x1000"),
                 ("lookup", "--pid", FIX["pid"], "--json", "--inlines", "0x1000"),
                 ("frobnicate",),
                 ()):
        res = h.client(*args)
        check(res.returncode == 2, f"jitsym {' '.join(map(str, args))} exited {res.returncode}, "
              f"want 2 (stderr: {res.stderr.strip()!r})")
        check(res.stderr.strip(), f"jitsym {' '.join(map(str, args))}: no message on stderr")


@h.case
def conflicting_options_are_usage_errors_before_anything_is_sent():
    # With no daemon at that socket: exit 2 (not 1) shows the client stopped before connecting.
    missing = os.path.join(h.root, "no-such-daemon.sock")
    for args, words in (
            (("lookup", "--pid", "1", "--image", "Foo", "0x10"), "--pid excludes"),
            (("lookup", "--pid", "1", "--build-id", "ab" * 20, "0x10"), "--pid excludes"),
            (("lookup", "--image", "rel/no/such", "0x10"), "no such file"),
            (("lookup", "--pid", "1", "--file-offset", "0x10"), "--file-offset"),
            (("lookup", "--pid", "1", "--pid", "2", "0x10"), "more than once"),
            (("lookup", "--pid", "1", "--time", "5", "--time=6", "0x10"), "more than once"),
            (("perfmap", "--pid", "1", "-o", "/tmp/a", "--output", "/tmp/b"), "more than once"),
            (("pprof", "--pid", "1", "--text", "--folded", "p.prof"), "exclude each other"),
            (("annotate", "--batch", "5", "--batch", "6"), "more than once"),
            (("--timeout", "5", "ping", "--timeout=6"), "more than once"),
            (("ping", "--socket", "/elsewhere"), "more than once")):
        res = h.client(*args, socket_path=missing)
        check(res.returncode == 2, f"jitsym {' '.join(args)}: exit {res.returncode}, want 2 "
              f"({res.stderr.strip()!r})")
        check(words in res.stderr, f"jitsym {' '.join(args)}: {res.stderr.strip()!r}")
    # The daemon refuses the same requests sent by hand.
    conn = h.raw_connection()
    try:
        for req in ({"op": "lookup", "pid": FIX["pid"], "image": "Foo", "addrs": ["0x10"]},
                    {"op": "lookup", "pid": FIX["pid"], "build_id": "ab" * 20, "addrs": ["0x10"]},
                    {"op": "lookup", "pid": FIX["pid"], "file_offset": True, "addrs": ["0x10"]}):
            ans = conn.request(req)
            check(ans.get("ok") is False and ans.get("error", {}).get("code") == "bad_request",
                  f"{req}: {ans}")
    finally:
        conn.close()


@h.case
def text_output_format():
    i = 10  # has debug info
    a = func_addr(i)
    args = [hexaddr(a + 0x44), f"{a + 0x10:X}", hexaddr(a - 0x10), hexaddr(func_addr(11))]
    res = h.client("lookup", "--pid", FIX["pid"], *args)
    check(res.returncode == 0, f"lookup exited {res.returncode}: {res.stderr}")
    lines = res.stdout.splitlines()
    check(len(lines) == 4, f"want 4 lines, got {lines}")
    # FILE:LINE, then :COLUMN when the entry has one (the jitdump discriminator).
    want = [[f"cli_fn_{i}+0x44", "jitdump", f"src/f{i}.c:{20 + i}:5"],
            [f"cli_fn_{i}+0x10", "jitdump", f"src/f{i}.c:{10 + i}:1"],
            ["??"],
            ["cli_fn_11+0x0", "jitdump"]]
    for line, arg, w in zip(lines, args, want):
        fields = line.split("\t")
        check(int(fields[0], 16) == int(arg, 16), f"line {line!r} does not start with {arg}")
        if w == ["??"]:  # a miss: ?? then its reason
            check(fields[1] == "??" and len(fields) == 3 and fields[2].startswith("no_code"),
                  f"line {line!r}: want ?? and a reason")
            continue
        check(fields[1:] == w, f"line {line!r}: want fields {w}")
    # --inlines: JIT answers have no inlined frames; the position column is always there.
    res = h.client("lookup", "--pid", FIX["pid"], "--inlines", *args)
    check(res.returncode == 0, f"lookup --inlines exited {res.returncode}: {res.stderr}")
    want[3] = want[3] + ["??:0"]
    for line, w in zip(res.stdout.splitlines(), want):
        got = line.split("\t")[1:]
        check((got[:1] if w == ["??"] else got) == w, f"--inlines line {line!r}: want fields {w}")


@h.case
def bad_address_is_reported_in_place():
    a = func_addr(3)
    res = h.client("lookup", "--pid", FIX["pid"], "zzz", hexaddr(a), "0x", "1" * 40)
    check(res.returncode == 0, f"a bad address should not fail the batch: exit "
          f"{res.returncode}, {res.stderr}")
    lines = res.stdout.splitlines()
    check(len(lines) == 4, f"want 4 lines in input order, got {lines}")
    for k in (0, 2, 3):
        check("??" in lines[k] or "error" in lines[k].lower(),
              f"bad address line {k}: {lines[k]!r}")
    check(lines[1].split("\t")[1:3] == ["cli_fn_3+0x0", "jitdump"],
          f"good address after a bad one: {lines[1]!r}")
    res = h.client("lookup", "--pid", FIX["pid"], "--json", "zzz", hexaddr(a))
    docs = json_documents(res.stdout)
    check(res.returncode == 0 and len(docs) == 2, f"--json with a bad address: {res.stdout!r}")
    check(docs[0].get("found") is False and docs[1].get("name") == "cli_fn_3",
          f"--json answers: {docs}")
    # Input with no valid address at all is the script's mistake, not an answer: exit 2, said.
    res = h.client("lookup", "--pid", FIX["pid"], input="zzz\n0xg\n")
    check(res.returncode == 2 and "no valid address in the input (2 invalid lines)" in res.stderr
          and len(res.stdout.splitlines()) == 2,
          f"only invalid lines: exit {res.returncode}, {res.stdout!r} {res.stderr!r}")


@h.case
def explain_exit_status_matches_lookup():
    res = h.client("explain", "--pid", "4194303", "0x1000")
    check(res.returncode == 3 and "unknown_process" in res.stdout,
          f"explain of an unknown pid: exit {res.returncode} {res.stdout!r} {res.stderr!r}")
    res = h.client("explain", "--pid", FIX["pid"], hexaddr(func_addr(3)))
    check(res.returncode == 0, f"explain of a known address: exit {res.returncode} {res.stderr!r}")


@h.case
def json_fields_and_types():
    i = 20
    a = func_addr(i)
    t = FIX["base"] + 1000 * (i + 1)
    res = h.client("lookup", "--pid", FIX["pid"], "--json", "--time", t, hexaddr(a + 0x41),
                   hexaddr(a - 1))
    check(res.returncode == 0, f"exit {res.returncode}: {res.stderr}")
    docs = [json.loads(l) for l in res.stdout.splitlines()]
    check(len(docs) == 2, f"want one JSON object per line, got {res.stdout!r}")
    found, missing = docs
    types = {"addr": str, "found": bool, "name": str, "offset": int, "start": str, "size": int,
             "origin": str, "source": str, "loaded_at": int, "incarnation": int, "file": str,
             "line": int}
    for key, typ in types.items():
        value = found.get(key)
        check(isinstance(value, typ) and not (typ is int and isinstance(value, bool)),
              f"{key} should be {typ.__name__}: {found}")
    want = {"addr": hexaddr(a + 0x41), "found": True, "name": f"cli_fn_{i}", "offset": 0x41,
            "start": hexaddr(a), "size": 0x100 + (i % 7) * 0x10, "origin": "jitdump",
            "loaded_at": t, "file": f"src/f{i}.c", "line": 20 + i}
    diff = {k: (found.get(k), v) for k, v in want.items() if found.get(k) != v}
    check(not diff, f"wrong values (got, want): {diff}")
    check(os.path.basename(found["source"]) == os.path.basename(FIX["path"]),
          f"source {found['source']!r} is not the dump file")
    check(missing.get("addr") == hexaddr(a - 1) and missing.get("found") is False,
          f"unknown address: {missing}")
    check(re.fullmatch(r"0x[0-9a-f]+", found["addr"]) is not None, "addr is not lower-case hex")


@h.case
def jitsym_socket_environment_variable():
    env = {"JITSYM_SOCKET": h.socket_path}
    res = h.client("ping", use_socket=False, env=env)
    check(res.returncode == 0, f"ping via JITSYM_SOCKET: exit {res.returncode} {res.stderr}")
    res = h.client("lookup", "--pid", FIX["pid"], hexaddr(func_addr(5)), use_socket=False,
                   env=env)
    check(res.returncode == 0 and "cli_fn_5+0x0" in res.stdout,
          f"lookup via JITSYM_SOCKET: {res.returncode} {res.stdout!r} {res.stderr!r}")
    res = h.client("ping", env={"JITSYM_SOCKET": os.path.join(h.root, "bogus.sock")})
    check(res.returncode == 0, "--socket should win over JITSYM_SOCKET")


@h.case
def time_in_nanoseconds_and_in_seconds():
    pid = h.sleeper()
    base = (time.monotonic_ns() // 1000) * 1000
    w = jitdump.Writer(pid)
    t1, t2 = base + 1_000_000, base + 2_000_000_000  # the second load 2 s later, same place
    h.write_file(h.dump_path(pid), w.header(base) +
                 w.load(t1, 0x7200_0000, 0x100, "first_tenant", 1) +
                 w.load(t2, 0x7200_0000, 0x100, "second_tenant", 2))
    h.wait_resolves(pid, 0x7200_0000, "second_tenant")

    def secs(ns):  # as perf script prints them: microseconds
        return f"{ns // 1_000_000_000}.{(ns % 1_000_000_000) // 1000:06d}"

    cases = [(t1, "first_tenant"), (secs(t1), "first_tenant"), (t2 - 1, "first_tenant"),
             (secs(t2 - 1000), "first_tenant"), (t2, "second_tenant"),
             (secs(t2), "second_tenant"), (t1 - 1, None)]
    for t, want in cases:
        res = h.client("lookup", "--pid", pid, "--json", "--time", t, "0x72000010")
        check(res.returncode == 0, f"--time {t}: exit {res.returncode} {res.stderr}")
        ans = json.loads(res.stdout.splitlines()[0])
        got = ans.get("name") if ans.get("found") else None
        check(got == want, f"--time {t}: got {got}, want {want}")
    # Per-line times in stdin mode override --time.
    text = "".join(f"0x72000010 {t}\n" for t, _ in cases)
    res = h.client("lookup", "--pid", pid, "--json", "--time", t2, input=text)
    got = [(d.get("name") if d.get("found") else None) for d in json_documents(res.stdout)]
    check(got == [w for _, w in cases], f"stdin per-line times: got {got}")


@h.case
def stdin_mode_100k_lines_in_order():
    rng = random.Random(99)
    model, dump, base = FIX["oracle"], FIX["dump"], FIX["base"]
    # A time far past the last record (still answered by the code known last): not one within
    # 10% of the wall clock in milliseconds, which the daemon refuses as the wrong clock (a
    # machine 10 to 16 minutes after boot puts base + 10**12 there).
    later = base + 10**12
    if abs(later - time.time_ns() // 10**6) < time.time_ns() // 10**6 // 5:
        later = base + 3 * 10**12
    times = [None] * 4 + [r.eff_ts for r in dump.records] + [base, later]
    queries = []
    for _ in range(100_000):
        i = rng.randrange(N_FUNCS)
        addr = func_addr(i) + rng.randrange(-0x40, 0x1c0)  # found, gap, or neighbour
        queries.append((addr, rng.choice(times)))
    queries.append((0xffff_ffff_ffff_fff0, None))
    text = "".join(hexaddr(a) + ("" if t is None else f" {t}") + "\n" for a, t in queries)
    t0 = time.monotonic()
    res = h.client("lookup", "--pid", FIX["pid"], input=text, timeout=120)
    elapsed = time.monotonic() - t0
    check(res.returncode == 0, f"exit {res.returncode}: {res.stderr[:300]}")
    lines = res.stdout.splitlines()
    check(len(lines) == len(queries), f"{len(lines)} lines out for {len(queries)} in")
    bad, found = [], 0
    for (addr, t), line in zip(queries, lines):
        fields = line.split("\t")
        p = model.lookup(addr, t)
        if p is None:
            want = [hexaddr(addr), "??"]
        else:
            found += 1
            want = [hexaddr(addr), f"{p.name}+0x{addr - p.start:x}", "jitdump"]
        pos = model.source_position(p, addr)
        if pos and pos != "ambiguous":
            want.append(f"{pos[0]}:{pos[1]}" + (f":{pos[2]}" if pos[2] else ""))
        got = [hexaddr(int(fields[0], 16))] + fields[1:] if fields and re.fullmatch(
            r"(0x)?[0-9a-fA-F]+", fields[0]) else fields
        if p is None and len(got) == 3:
            got = got[:2]  # the reason of the miss
        if got != want:
            bad.append(f"{hexaddr(addr)} @ {t}: got {line!r}, want {chr(9).join(want)!r}")
    print(f"  {len(queries)} lines ({found} found) in {elapsed:.2f}s "
          f"({len(queries) / elapsed:,.0f} lines/s incl. client start)")
    check(not bad, f"{len(bad)} wrong lines, e.g.:\n  " + "\n  ".join(bad[:10]))


def queries_made():
    return json.loads(h.client("stats", "--json").stdout)["queries"]


@h.case
def piped_input_is_cut_by_size_and_pauses_not_by_pipe_reads():
    # A producer writing through a pipe (perf script: some forty lines a write) left the pipe
    # empty between writes, and every write became a request of its own. Now a batch waits up
    # to 10 ms for more; only a real pause sends it early.
    addrs = [func_addr(i % N_FUNCS) + 8 for i in range(8000)]
    writer = ("import sys, time\n"
              "lines = sys.stdin.read().splitlines(keepends=True)\n"
              "for i in range(0, len(lines), 40):\n"
              "    sys.stdout.write(''.join(lines[i:i + 40]))\n"
              "    sys.stdout.flush()\n"
              "    time.sleep(0.0005)\n")
    before = queries_made()
    producer = subprocess.Popen([sys.executable, "-c", writer], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
    consumer = subprocess.Popen([h.jitsym, "--socket", h.socket_path, "lookup", "--pid",
                                 str(FIX["pid"])], stdin=producer.stdout, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    producer.stdout.close()
    t0 = time.monotonic()
    feed = threading.Thread(target=producer.communicate,
                            args=("".join(hexaddr(a) + "\n" for a in addrs).encode(),))
    feed.start()
    out, err = consumer.communicate(timeout=60)  # read while the producer writes
    feed.join()
    elapsed = time.monotonic() - t0
    requests = queries_made() - before - 1  # the stats request itself
    print(f"  {len(addrs)} lines in 200 writes over {elapsed:.2f}s: {requests} requests")
    check(consumer.returncode == 0, f"exit {consumer.returncode}: {err[:300]}")
    lines = out.splitlines()
    check(len(lines) == len(addrs), f"{len(lines)} lines out for {len(addrs)} in")
    wrong = [l for a, l in zip(addrs, lines)
             if not l.startswith(hexaddr(a) + "\t" + f"cli_fn_{(a - 0x7100_0000) // 0x200}+")]
    check(not wrong, f"{len(wrong)} wrong lines, e.g. {wrong[:3]}")
    # One request per 10 ms of input at most (and per 8,192 lines), not one per write.
    check(requests <= elapsed / 0.010 + 2 and requests < 100,
          f"{requests} requests for 200 writes in {elapsed:.2f}s")


@h.case
def interactive_input_is_answered_before_more_comes():
    # A person (or a script holding the pipe open) gets each answer without closing stdin.
    p = subprocess.Popen([h.jitsym, "--socket", h.socket_path, "lookup", "--pid", str(FIX["pid"])],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        for i in (3, 5):
            t0 = time.monotonic()
            p.stdin.write(hexaddr(func_addr(i) + 4) + "\n")
            p.stdin.flush()
            ready, _, _ = select.select([p.stdout], [], [], 10)
            check(ready, "no answer within 10 s with stdin still open")
            line = p.stdout.readline()
            waited = time.monotonic() - t0
            check(line.startswith(hexaddr(func_addr(i) + 4) + f"\tcli_fn_{i}+0x4"),
                  f"answer {line!r}")
            check(waited < 2.0, f"the answer took {waited:.2f}s with stdin still open")
    finally:
        p.stdin.close()
        p.wait(10)


@h.case
def processes_lists_the_pid_and_notices_exit():
    res = h.client("processes")
    check(res.returncode == 0 and str(FIX["pid"]) in res.stdout,
          f"processes: exit {res.returncode}, pid {FIX['pid']} not in {res.stdout[:500]!r}")

    def entry():
        res = h.client("processes", "--json")
        check(res.returncode == 0, f"processes --json: exit {res.returncode} {res.stderr}")
        mine = [p for p in find_dicts(json_documents(res.stdout), "pid")
                if p.get("pid") == FIX["pid"]]
        check(len(mine) == 1, f"want one entry for pid {FIX['pid']}: {res.stdout[:800]}")
        return mine[0]

    p = entry()
    check(p.get("alive") is True, f"pid {FIX['pid']} is alive: {p}")
    check(p.get("ranges") == N_FUNCS, f"ranges {p.get('ranges')}, want {N_FUNCS}: {p}")
    check(isinstance(p.get("incarnation"), int), f"incarnation: {p}")
    check(p.get("first_time") == FIX["base"] + 1000 and
          p.get("last_time") == FIX["base"] + 1000 * N_FUNCS,
          f"first/last timestamps: {p.get('first_time')} {p.get('last_time')}")
    paths = [s.get("path") for s in p.get("sources", [])]
    check(any(os.path.basename(str(x)) == os.path.basename(FIX["path"]) for x in paths),
          f"sources {paths} should name {FIX['path']}")
    # The process exits: its code stays queryable and it is shown as exited.
    h.kill_child(FIX["pid"])
    wait_until(lambda: entry().get("alive") is False, 10.0, "processes to show the exit")
    ans = h.lookup_one(FIX["pid"], func_addr(7))
    check(ans.get("name") == "cli_fn_7", f"symbols of an exited process were lost: {ans}")


@h.case
def stats_ping_version():
    res = h.client("stats")
    check(res.returncode == 0 and res.stdout.strip(), f"stats: {res.returncode} {res.stderr}")
    res = h.client("stats", "--json")
    check(res.returncode == 0, f"stats --json: {res.returncode} {res.stderr}")
    docs = json_documents(res.stdout)
    stats = (find_dicts(docs, "ranges") or [{}])[0]
    for key, least in (("ranges", N_FUNCS), ("queries", 1), ("files_followed", 1),
                       ("processes", 1), ("memory_bytes", 1), ("bytes_ingested", len(FIX["data"]))):
        check(isinstance(stats.get(key), int) and stats[key] >= least,
              f"stats {key} = {stats.get(key)!r}, want >= {least}: {res.stdout[:500]}")
    res = h.client("ping")
    check(res.returncode == 0, f"ping: {res.returncode} {res.stderr}")
    res = h.client("version")
    check(res.returncode == 0 and re.search(r"\d+\.\d+\.\d+", res.stdout),
          f"version: {res.returncode} {res.stdout!r} {res.stderr!r}")


h.main()
