#!/usr/bin/env python3
"""Generated jitdumps against the real daemon: every record type in big-endian byte order,
time-qualified answers (loads, a move, overlapping reloads, a clamped out-of-order stamp), V8's
debug-entry bias, a file growing record by record, files present before start-up, a deleted
file, unusual header sizes, and random dumps with heavy address reuse checked against the
brute-force oracle."""

import os
import random
import statistics
import time

import jitdump
import oracle
from harness import Harness, check, hexaddr

h = Harness(__doc__)


def build_dump(writer, base, records):
    """records: [(kind, ts_offset, args...)] -> bytes of the whole file."""
    out = [writer.header(base)]
    for kind, off, *args in records:
        out.append(getattr(writer, kind)(base + off, *args))
    return b"".join(out)


def compare_with_oracle(pid, dump, queries, what, check_lines=True):
    """Sends every (addr, t) query and compares each answer to the oracle. Fails listing the
    first few mismatches."""
    model = oracle.Oracle(dump)
    answers = h.lookup(pid, queries)
    bad = []
    for (addr, t), ans in zip(queries, answers):
        want = model.lookup(addr, t)
        got = ans.get("name") if ans.get("found") else None
        if (want.name if want else None) != got:
            bad.append(f"{hexaddr(addr)} @ {t}: want {want.name if want else '??'!r}, "
                       f"got {got if got is not None else '??'!r}")
            continue
        if want is None:
            continue
        if ans.get("start") != hexaddr(want.start) or ans.get("size") != want.end - want.start:
            bad.append(f"{hexaddr(addr)} @ {t}: want start {hexaddr(want.start)} size "
                       f"{want.end - want.start}, got {ans.get('start')} {ans.get('size')}")
            continue
        pos = model.source_position(want, addr) if check_lines else None
        if pos and pos != "ambiguous" and (ans.get("file"), ans.get("line")) != pos[:2]:
            bad.append(f"{hexaddr(addr)} @ {t}: want {pos[0]}:{pos[1]}, got "
                       f"{ans.get('file')}:{ans.get('line')}")
    check(not bad, f"{what}: {len(bad)} of {len(queries)} answers differ from the oracle:\n  "
          + "\n  ".join(bad[:15]))
    return answers


def grid_queries(dump, extra_times=()):
    """Every placement's edges and middle, at every record time, one tick before it, and now."""
    model = oracle.Oracle(dump)
    addrs = set()
    for p in model.placements:
        addrs.update((p.start - 1, p.start, (p.start + p.end) // 2, p.end - 1, p.end))
    times = {None}
    for r in dump.records:
        times.update((r.eff_ts - 1, r.eff_ts, r.ts))
    times.update(extra_times)
    return [(a, t) for t in sorted(times, key=lambda x: -1 if x is None else x)
            for a in sorted(addrs)]


# ---- fixtures written before the daemon starts -----------------------------------------------

PRE = {}


@h.setup
def write_a_dump_then_start_the_daemon():
    PRE["pid"] = h.sleeper()
    PRE["base"] = base = time.monotonic_ns()
    PRE["data"] = build_dump(jitdump.Writer(PRE["pid"]), base, [
        ("load", 100, 0x7000_0000, 0x200, "prestart_one", 1),
        ("load", 200, 0x7000_0200, 0x100, "prestart_two", 2),
    ])
    h.write_file(h.dump_path(PRE["pid"]), PRE["data"])
    h.start_daemon()


@h.case
def files_present_before_startup_are_scanned():
    h.wait_resolves(PRE["pid"], 0x7000_0010, "prestart_one")
    dump = jitdump.parse(PRE["data"])
    compare_with_oracle(PRE["pid"], dump, grid_queries(dump), "pre-existing file")


@h.case
def big_endian_every_record_type():
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid, big_endian=True)
    unwind = bytes(range(64))
    data = build_dump(w, base, [
        ("load", 1000, 0x10000, 0x100, "gen_alpha", 1),
        ("unwinding_info", 1500, unwind, 20),
        ("debug_info", 2000, 0x10200,
         [(0x10200, 10, 1, "gen.c"), (0x10210, 11, 2, "gen.c"), (0x10240, 20, 0, "other.h")]),
        ("load", 2000, 0x10200, 0x80, "gen_beta", 2),
        ("unknown", 2500, 99, b"\x5a" * 24),         # unknown record id: skipped by its size
        ("load", 3000, 0x10400, 0x40, "gen_gamma", 3),
        ("move", 4000, 0x10000, 0x20000, 0x100, 1),  # gen_alpha moves away
        ("load", 5000, 0x10200, 0x40, "gen_delta", 4),  # covers gen_beta's first half
        ("load", 4500, 0x30000, 0x10, "gen_late_stamp", 5),  # stamp behind: valid from 5000
        ("load", 5100, 0x40000, 0, "gen_empty", 6),
        ("close", 6000),
    ])
    dump = jitdump.parse(data)
    check(dump.big_endian and dump.error is None and len(dump.records) == 11,
          f"writer/reader self-check failed: {dump and dump.error}")
    path = h.dump_path(pid)
    h.write_file(path, data)
    h.wait_resolves(pid, 0x10400, "gen_gamma", t=base + 3000)

    # Hand-written expectations first: they do not depend on the oracle being right.
    expect = [
        (0x10000, base + 999, None), (0x10000, base + 1000, "gen_alpha"),
        (0x100ff, base + 3999, "gen_alpha"), (0x10000, base + 4000, None), (0x10000, None, None),
        (0x20080, base + 3999, None), (0x20080, base + 4000, "gen_alpha"),
        (0x20080, None, "gen_alpha"),
        (0x10210, base + 2000, "gen_beta"), (0x10210, base + 4999, "gen_beta"),
        (0x10210, base + 5000, "gen_delta"), (0x10250, base + 5000, "gen_beta"),
        (0x10200, None, "gen_delta"), (0x1027f, None, "gen_beta"), (0x10280, None, None),
        (0x10400, base + 3000, "gen_gamma"), (0x1043f, None, "gen_gamma"),
        (0x30008, base + 4500, None), (0x30008, base + 5000, "gen_late_stamp"),
        (0x40000, None, None),
    ]
    answers = h.lookup(pid, [(a, t) for a, t, _ in expect])
    got = [ans.get("name") if ans.get("found") else None for ans in answers]
    bad = [f"{hexaddr(a)} @ {t}: want {n or '??'}, got {g or '??'}"
           for (a, t, n), g in zip(expect, got) if g != n]
    check(not bad, "wrong answers:\n  " + "\n  ".join(bad))

    beta = h.lookup(pid, [(0x10210, base + 2000)])[0]
    for key, want in (("offset", 0x10), ("start", "0x10200"), ("size", 0x80),
                      ("origin", "jitdump"), ("loaded_at", base + 2000),
                      ("file", "gen.c"), ("line", 11)):
        check(beta.get(key) == want, f"gen_beta answer: {key} = {beta.get(key)!r}, want "
              f"{want!r} (whole answer: {beta})")
    check(os.path.basename(str(beta.get("source", ""))) == os.path.basename(path),
          f"source {beta.get('source')!r} does not name {path}")
    check(isinstance(beta.get("incarnation"), int), f"incarnation missing: {beta}")
    other = h.lookup(pid, [(0x10240, base + 2000), (0x1023f, base + 2000),
                           (0x10200, base + 2000)])
    check([(a.get("file"), a.get("line")) for a in other] ==
          [("other.h", 20), ("gen.c", 11), ("gen.c", 10)],
          f"debug lines of gen_beta: {[(a.get('file'), a.get('line')) for a in other]}")

    compare_with_oracle(pid, dump, grid_queries(dump), "big-endian dump")


@h.case
def v8_debug_entries_are_biased_by_0x40():
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid, pad1=jitdump.V8_PAD1)
    code = 0x5_0000
    data = build_dump(w, base, [
        ("debug_info", 10, code, [(code + 0x40 + 0x00, 5, 3, "v8.js"),
                                  (code + 0x40 + 0x20, 6, 9, "v8.js")]),
        ("load", 10, code, 0x60, "JS:^v8fn v8.js:5:3", 1),
    ])
    h.write_file(h.dump_path(pid), data)
    h.wait_resolves(pid, code, "JS:^v8fn v8.js:5:3")
    answers = h.lookup(pid, [(code, None), (code + 0x1f, None), (code + 0x20, None),
                             (code + 0x5f, None)])
    got = [(a.get("file"), a.get("line")) for a in answers]
    check(got == [("v8.js", 5), ("v8.js", 5), ("v8.js", 6), ("v8.js", 6)],
          f"V8 debug lines (entry address - 0x40): got {got}")


@h.case
def file_growing_record_by_record():
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    path = h.dump_path(pid)
    h.write_file(path, w.header(base))
    latencies = []
    for i in range(20):
        ts = base + 1000 * (i + 1)
        addr = 0x6000_0000 + 0x100 * (i % 8)  # reuses 8 slots: each new load replaces one
        if i % 3 == 0:
            h.append_file(path, w.debug_info(ts, addr, [(addr, 100 + i, 0, "grow.c")]))
        t0 = time.monotonic()
        h.append_file(path, w.load(ts, addr, 0x100, f"grow_{i}", i))
        h.wait_resolves(pid, addr + 0x80, f"grow_{i}", timeout=2.0, interval=0.005)
        latencies.append(time.monotonic() - t0)
    print(f"  new LOAD answerable after: median {statistics.median(latencies) * 1e3:.1f} ms, "
          f"max {max(latencies) * 1e3:.1f} ms (incl. client start)")
    check(max(latencies) < 1.0, f"a LOAD took {max(latencies):.2f}s to become answerable")

    # A record written in pieces is invisible until complete, and then answers.
    ts = base + 100_000
    rec = w.load(ts, 0x6100_0000, 0x40, "grow_split", 100)
    for cut in (5, 30):
        h.append_file(path, rec[:cut] if cut == 5 else rec[5:cut])
        time.sleep(0.3)
        ans = h.lookup_one(pid, 0x6100_0000)
        check(not ans.get("found"), f"partly written record answered: {ans}")
        check(h.lookup_one(pid, 0x6000_0080).get("name") == "grow_16",
              "earlier records stopped answering while a record was half written")
    h.append_file(path, rec[30:])
    h.wait_resolves(pid, 0x6100_003f, "grow_split", timeout=2.0)
    compare_with_oracle(pid, jitdump.read_file(path),
                        grid_queries(jitdump.read_file(path)), "grown file")
    warnings = [l for l in h.daemon.log_lines() if path in l and "offset" in l]
    check(not warnings, f"a growing file was reported as corrupt: {warnings}")


@h.case
def deleted_file_keeps_its_symbols():
    path = h.dump_path(PRE["pid"])
    os.unlink(path)
    # Events are handled in order: once a file created after the deletion answers, the
    # deletion has been seen.
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    h.write_file(h.dump_path(pid), w.header(base) + w.load(base + 1, 0x7100_0000, 0x10,
                                                          "after_delete", 1))
    h.wait_resolves(pid, 0x7100_0000, "after_delete")
    answers = h.lookup(PRE["pid"], [(0x7000_0000, None), (0x7000_02ff, None),
                                    (0x7000_0000, PRE["base"] + 100)])
    check([a.get("name") for a in answers] == ["prestart_one", "prestart_two", "prestart_one"],
          f"symbols of a deleted dump were lost: {answers}")


@h.case
def header_total_size_larger_and_smaller_than_40():
    for total_size in (60, 8):
        pid = h.sleeper()
        base = time.monotonic_ns()
        w = jitdump.Writer(pid, header_total_size=total_size)
        data = build_dump(w, base, [
            ("load", 10, 0x8000_0000, 0x40, f"hdr{total_size}_a", 1),
            ("load", 20, 0x8000_0040, 0x40, f"hdr{total_size}_b", 2),
        ])
        dump = jitdump.parse(data)
        check(len(dump.loads()) == 2, "writer/reader self-check failed")
        h.write_file(h.dump_path(pid), data)
        h.wait_resolves(pid, 0x8000_0040, f"hdr{total_size}_b")
        compare_with_oracle(pid, dump, grid_queries(dump), f"header total_size {total_size}")


def random_dump(rng, pid, big_endian, n_loads=400, space=0x4000):
    """Loads of random sizes packed into a small space (heavy reuse), equal and backwards
    stamps, debug info and unwinding info for some loads, and moves.

    Only live, intact code moves, as a runtime would move it: functions loaded at addresses of
    their own in a sparse region, which nothing else overlaps. A move takes one to another
    fresh sparse address, or into the dense region, where it hides older code and may itself be
    overwritten later, but never moves again. (Whether code hidden by a function that later
    moved away shows through again is a question the contract leaves open.)"""
    w = jitdump.Writer(pid, big_endian=big_endian)
    base = time.monotonic_ns()
    out = [w.header(base)]
    ts = base + 1000
    sparse = iter(range(0x2000_0000, 0x3000_0000, 0x1000))
    movable = {}  # code_index -> (start, size) of functions alone at their address
    for i in range(n_loads):
        ts += rng.choice((0, 0, 1, 7, 100))
        stamp = ts - rng.choice((0, 0, 0, 0, 0, 0, 0, 0, 3, 50))  # sometimes behind
        size = rng.choice((1, 2, 16, 64, 100, 256, 1024))
        if movable and rng.random() < 0.1:
            idx = rng.choice(sorted(movable))
            start, size = movable.pop(idx)
            if rng.random() < 0.5:
                new = next(sparse)
                movable[idx] = (new, size)
            else:
                new = 0x1000_0000 + rng.randrange(space)
            out.append(w.move(stamp, start, new, size, idx))
            continue
        if rng.random() < 0.15:
            addr = next(sparse)
            movable[i] = (addr, size)
        else:
            addr = 0x1000_0000 + rng.randrange(space)
        if rng.random() < 0.3:
            out.append(w.debug_info(stamp, addr, [(addr + k * 4, 10 + k, 0, "r.c")
                                                  for k in range(rng.randrange(1, 5))]))
        if rng.random() < 0.05:
            out.append(w.unwinding_info(stamp, bytes(40), 16))
        out.append(w.load(stamp, addr, size, f"rnd_{i}", i))
    return b"".join(out)


@h.case
def random_dumps_with_heavy_reuse_match_the_oracle():
    rng = random.Random(20240601)
    for big_endian in (False, True):
        pid = h.sleeper()
        data = random_dump(rng, pid, big_endian)
        dump = jitdump.parse(data)
        check(dump.error is None, f"writer/reader self-check failed: {dump.error}")
        h.write_file(h.dump_path(pid), data)
        last = dump.loads()[-1]
        h.wait_resolves(pid, last.code_addr, last.name, t=last.eff_ts)
        times = sorted({r.eff_ts for r in dump.records})
        queries = []
        for rec in dump.loads():  # every LOAD at its own time, first and last byte
            queries += [(rec.code_addr, rec.eff_ts),
                        (rec.code_addr + rec.code_size - 1, rec.eff_ts)]
        model = oracle.Oracle(dump)
        for rec in dump.records:  # moved code: new place, and old place, just before and at
            if rec.kind == jitdump.MOVE:
                for t in (rec.eff_ts - 1, rec.eff_ts, None):
                    queries += [(rec.new_code_addr, t), (rec.old_code_addr, t)]
        sparse = [p.start for p in model.placements if p.start >= 0x2000_0000]
        for _ in range(3000):
            t = rng.choice(times + [None]) if rng.random() < 0.9 else \
                rng.randrange(times[0] - 5, times[-1] + 5)
            if rng.random() < 0.8:
                queries.append((0x1000_0000 - 16 + rng.randrange(0x4000 + 0x500), t))
            else:
                queries.append((rng.choice(sparse) + rng.randrange(-2, 1030), t))
        compare_with_oracle(pid, dump, queries,
                            f"random {'big' if big_endian else 'little'}-endian dump")


h.main()
