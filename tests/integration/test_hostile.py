#!/usr/bin/env python3
"""Hostile input beside a good jitdump: garbage, truncation, absurd record sizes, a name without
NUL, code larger than its record; malformed protocol requests on a raw socket; clients that
vanish mid-answer; file names that only look like jitdumps. The daemon must stay up, keep what
it read, name each bad file with a byte offset in its log, and leave the good file alone."""

import os
import random
import re
import time

import jitdump
import oracle
from harness import Harness, check, hexaddr, wait_until

h = Harness(__doc__)
GOOD = {}
BAD = {}  # label -> dict(pid, path, good=[(addr, name)], offsets=(lo, hi) of the bad record)


def loads_for(w, base, first_addr, label, n=3):
    """n good LOAD records and their (addr, name)."""
    recs, names = [], []
    for i in range(n):
        addr = first_addr + 0x100 * i
        name = f"{label}_ok{i}"
        recs.append(w.load(base + 10 * (i + 1), addr, 0x80, name, i + 1))
        names.append((addr, name))
    return recs, names


def warning_lines(path):
    return [l for l in h.daemon.log_lines() if path in l and re.search(r"offset \d+", l)]


@h.setup
def start_daemon_and_write_files():
    h.start_daemon()
    # The good file.
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    data = w.header(base) + b"".join(
        w.load(base + 100 + i, 0x5000_0000 + 0x40 * (i % 50), 0x40, f"good_{i}", i)
        for i in range(200))
    GOOD.update(pid=pid, path=h.dump_path(pid), data=data)
    h.write_file(GOOD["path"], data)

    rng = random.Random(7)

    def bad(label, build):
        pid = h.sleeper()
        base = time.monotonic_ns()
        w = jitdump.Writer(pid)
        head = w.header(base)
        good_recs, good = loads_for(w, base, 0x6000_0000 + (len(BAD) << 20), label)
        prefix = head + b"".join(good_recs)
        tail = build(w, base + 1000)
        path = h.dump_path(pid)
        h.write_file(path, prefix + tail)
        BAD[label] = dict(pid=pid, path=path, good=good, offsets=(len(prefix), len(prefix) +
                                                                   len(tail)), writer=w)

    garbage = bytes(rng.randrange(256) for _ in range(4096))
    pid = h.sleeper()
    path = h.dump_path(pid)
    h.write_file(path, b"\x00GARBAGE" + garbage)
    BAD["garbage"] = dict(pid=pid, path=path, good=[], offsets=(0, 41))

    bad("size8", lambda w, ts: w.record(jitdump.LOAD, ts, b"", total_size=8) + bytes(64) +
        w.load(ts + 1, 0x6fff_0000, 0x10, "after_size8", 99))
    bad("size2g", lambda w, ts: w.record(jitdump.LOAD, ts, bytes(128), total_size=1 << 31))
    bad("noname_nul", lambda w, ts: w.load(ts, 0x6fff_1000, 0, "name_without_terminator" * 3,
                                           99, name_nul=False) +
        w.load(ts + 1, 0x6fff_2000, 0x10, "after_noname", 100))
    bad("code_too_big", lambda w, ts: w.load(ts, 0x6fff_3000, 4096, "too_big", 99,
                                             code=b"\xcc" * 16))

    # Truncated in the middle of a record: not corrupt, just not finished yet.
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    recs, good = loads_for(w, base, 0x6800_0000, "trunc")
    last = w.load(base + 500, 0x6800_1000, 0x80, "trunc_last", 50)
    path = h.dump_path(pid)
    h.write_file(path, w.header(base) + b"".join(recs) + last[:37])
    BAD["truncated"] = dict(pid=pid, path=path, good=good, rest=last[37:], offsets=None)


@h.case
def good_records_before_each_corruption_resolve():
    for label, info in BAD.items():
        for addr, name in info["good"]:
            h.wait_resolves(info["pid"], addr + 0x7f, name)


@h.case
def each_bad_file_is_named_once_with_its_offset():
    problems = []
    for label, info in BAD.items():
        if info["offsets"] is None:
            continue
        path = info["path"]
        try:
            lines = wait_until(lambda: warning_lines(path), 5.0,
                               f"a log line naming {path} and 'offset N'")
        except AssertionError as e:
            problems.append(f"{label}: {e}")
            continue
        lo, hi = info["offsets"]
        offsets = [int(m) for l in lines for m in re.findall(r"offset (\d+)", l)]
        if not any(lo <= o <= hi for o in offsets):
            problems.append(f"{label}: offset(s) {offsets} outside the bad record [{lo}, {hi}]: "
                            f"{lines}")
    check(not problems, "\n  ".join(problems))
    # A stopped file stays stopped: more bytes bring no second report.
    info = BAD["size8"]
    h.append_file(info["path"], info["writer"].load(time.monotonic_ns(), 0x6fff_9000, 0x10,
                                                   "appended_after_corruption", 200))
    time.sleep(0.5)
    for label, info in BAD.items():
        if info["offsets"] is not None:
            n = len(warning_lines(info["path"]))
            check(n == 1, f"{label}: {n} log lines about {info['path']}, want exactly 1: "
                  f"{warning_lines(info['path'])}")


@h.case
def truncated_record_appears_when_completed():
    info = BAD["truncated"]
    ans = h.lookup_one(info["pid"], 0x6800_1000)
    check(not ans.get("found"), f"half-written record answered: {ans}")
    check(not warning_lines(info["path"]),
          f"a file cut mid-record was reported as corrupt: {warning_lines(info['path'])}")
    h.append_file(info["path"], info["rest"])
    h.wait_resolves(info["pid"], 0x6800_107f, "trunc_last")


@h.case
def good_file_is_unaffected():
    dump = jitdump.parse(GOOD["data"])
    model = oracle.Oracle(dump)
    h.wait_resolves(GOOD["pid"], 0x5000_0000 + 0x40 * 49, "good_199")
    queries = [(r.code_addr + k, t) for r in dump.loads() for k in (0, 0x3f)
               for t in (r.eff_ts, None)]
    answers = h.lookup(GOOD["pid"], queries)
    bad = [(hexaddr(a), t, ans) for (a, t), ans in zip(queries, answers)
           if (ans.get("name") if ans.get("found") else None) !=
           (model.lookup(a, t).name if model.lookup(a, t) else None)]
    check(not bad, f"{len(bad)} wrong answers for the good file, e.g. {bad[:5]}")
    check(h.client("ping").returncode == 0, "daemon stopped answering ping")


def expect_error(conn, request, codes, what):
    if isinstance(request, str):
        conn.send_line(request)
    else:
        conn.send(request)
    resp = conn.read_line()
    check(resp.get("ok") is False, f"{what}: expected an error response, got {resp}")
    err = resp.get("error") or {}
    check(err.get("code") in codes and isinstance(err.get("message"), str),
          f"{what}: error {err}, want code in {codes} and a message")
    return resp


@h.case
def malformed_requests_get_errors_and_the_connection_stays_usable():
    conn = h.raw_connection()
    try:
        expect_error(conn, '{"v":1,"op":', ("bad_request",), "truncated JSON")
        expect_error(conn, "this is not json", ("bad_request",), "not JSON")
        expect_error(conn, "[1,2,3]", ("bad_request",), "JSON that is not an object")
        resp = expect_error(conn, {"v": 1, "id": 7, "op": "frobnicate"}, ("unknown_op",),
                            "unknown op")
        check(resp.get("id") == 7, f"id not echoed on error: {resp}")
        expect_error(conn, {"v": 1, "id": 8, "op": 5}, ("bad_request", "unknown_op"),
                     "op of the wrong type")
        expect_error(conn, {"v": 1, "id": 9, "op": "lookup", "pid": "abc",
                            "addrs": ["0x1"]}, ("bad_request",), "pid of the wrong type")
        expect_error(conn, {"v": 1, "id": 10, "op": "lookup", "pid": GOOD["pid"],
                            "addrs": 12}, ("bad_request",), "addrs of the wrong type")
        expect_error(conn, {"v": 99, "id": 11, "op": "ping"},
                     ("unsupported_version", "bad_request"), "unsupported version")
        resp = conn.request({"v": 1, "id": "after", "op": "ping"})
        check(resp.get("ok") is True and resp.get("id") == "after",
              f"ping on the same connection after errors: {resp}")
    finally:
        conn.close()


@h.case
def clients_that_vanish_mid_answer_hurt_nobody():
    n = 100_000
    addrs = [hexaddr(0x5000_0000 + (i * 0x11) % 0x1000) for i in range(n)]
    request = {"v": 1, "id": 1, "op": "lookup", "pid": GOOD["pid"], "addrs": addrs}
    # First a well-behaved client, so we know the request itself is right.
    conn = h.raw_connection(timeout=60)
    try:
        resp = conn.request(request)
    finally:
        conn.close()
    check(resp.get("ok") is True, f"big raw lookup failed: {str(resp)[:300]}")
    results = resp.get("results")
    check(isinstance(results, list) and len(results) == n,
          f"big raw lookup returned {len(results) if isinstance(results, list) else results!r}")
    for i in range(20):
        conn = h.raw_connection()
        conn.send(request)
        if i % 2:
            conn.sock.recv(100)  # read a little of the answer, then vanish
        conn.close()
    check(h.client("ping").returncode == 0, "daemon stopped answering after vanishing clients")
    h.wait_resolves(GOOD["pid"], 0x5000_0000, "good_150")


@h.case
def names_that_only_look_like_jitdumps_are_ignored():
    decoys = {}
    for name_fmt in ("jit-abc.dump", "jit-{pid}.dump.tmp", "xjit-{pid}.dump", "jit-{pid}.dumpx"):
        pid = h.sleeper()
        base = time.monotonic_ns()
        w = jitdump.Writer(pid)
        path = os.path.join(h.watch_dir, name_fmt.format(pid=pid))
        h.write_file(path, w.header(base) + w.load(base + 1, 0x4000_0000, 0x40, "decoy", 1))
        decoys[pid] = path
    # A real file written after the decoys: once it answers, the decoys had their chance.
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    h.write_file(h.dump_path(pid), w.header(base) + w.load(base + 1, 0x4000_0000, 0x40,
                                                          "sentinel", 1))
    h.wait_resolves(pid, 0x4000_0000, "sentinel")
    time.sleep(0.3)
    for dpid, path in decoys.items():
        ans = h.lookup_one(dpid, 0x4000_0000)
        check(not ans.get("found"), f"{os.path.basename(path)} was indexed: {ans}")
        check(not warning_lines(path), f"{os.path.basename(path)} was parsed: "
              f"{warning_lines(path)}")
    res = h.client("processes", "--json")
    check(res.returncode == 0, f"processes failed: {res.stderr}")
    for dpid in decoys:
        check(not re.search(rf'"pid"\s*:\s*{dpid}\b', res.stdout),
              f"decoy pid {dpid} listed by processes: {res.stdout[:500]}")


h.main()
