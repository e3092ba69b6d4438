#!/usr/bin/env python3
"""Symbol names of 4 KiB, 20 KiB, 64 KiB and 1 MiB in every file format the daemon reads: a perf
map and a jitdump of a live process (a sleeper of the test's), an X.ni.r2rmap dropped in the
watch directory with no process at all, and a generated Mono .mlpd. Each file holds one long name
between two short ones. The daemon stays up; the long name answers cut to 16 KiB (bytes, as
docs/operations.md says; a UTF-8 character cut in two becomes U+FFFD), except where the line
is over a text format's line limit (perf map 64 KiB, r2rmap 1 MiB: that line is skipped); its
neighbours always answer; files with ordinary names are unaffected; and a restart with all the
files still there comes up and answers the same (the start-up scan reads them all again).

The long-name files are written by the attacker `jsbob` for his own processes (the r2rmaps with
no process at all), the ordinary ones by the victim `jsalice`; each asks with the real client
as themselves (tests/integration/users.py).

A name longer than the first 4 KiB block of the name arena once overflowed it (fixed in
NameTable::Intern): with that bug, this test kills the daemon."""

import json
import os
import subprocess
import time

import jitdump
import users
from mlpd import mlpd_file
from harness import Harness, check, hexaddr, wait_until

h = Harness(__doc__)
MAX_NAME = 16 * 1024  # index::NameTable::kMaxNameLength
SIZES = [4 << 10, 20000, 64 << 10, 1 << 20]
PERFMAP_MAX_LINE = 64 << 10
R2RMAP_MAX_LINE = 1 << 20
SIG = "0123456789ABCDEF0123456789ABCDEF"
# expect: (user, kind, key, addr, name or None, origin); kind "pid" (key a pid) or "image"
S = {"pids": {}, "expect": []}


def long_name(size, tag):
    """`size` bytes of UTF-8: ASCII up to the cut, then two-byte characters, so that the cut at
    16 KiB falls inside one (names under 16 KiB are ASCII)."""
    head = f"{tag}.Long{size}::Method(".encode()
    filler = b"Ns.Outer`1+Inner[System.__Canon]::M(int32, string) "
    ascii_len = min(size, MAX_NAME - 1)
    name = (head + filler * (ascii_len // len(filler) + 1))[:ascii_len]
    name += "é".encode() * ((size - len(name)) // 2)
    name += b"x" * (size - len(name))
    check(len(name) == size, f"name of {len(name)} bytes, wanted {size}")
    return name


def shown(name):
    """What a lookup prints for a name: its first 16 KiB, bytes that are not UTF-8 as U+FFFD."""
    return name[:MAX_NAME].decode("utf-8", "replace")


# ---- writers ------------------------------------------------------------------------------------

def perfmap_file(base, name):
    return (f"{base:x} 100 before_{base:x}\n".encode() +
            f"{base + 0x100:x} 100 ".encode() + name + b"\n" +
            f"{base + 0x200:x} 100 after_{base:x}\n".encode())


def jitdump_file(pid, base, name):
    w = jitdump.Writer(pid)
    t = time.monotonic_ns()
    return (w.header(t) + w.load(t + 1, base, 0x100, f"before_{base:x}", 1) +
            w.load(t + 2, base + 0x100, 0x100, name, 2) +
            w.load(t + 3, base + 0x200, 0x100, f"after_{base:x}", 3))


def r2rmap_file(name):
    header = (f"FFFFFFFF 00 {SIG}\nFFFFFFFE 00 1\nFFFFFFFD 00 2\nFFFFFFFC 00 3\n"
              "FFFFFFFB 00 1\n").encode()
    return (header + b"00001000 100 Before()\n00001100 100 " + name + b"\n" +
            b"00001200 100 After()\n")


# ---- checks -------------------------------------------------------------------------------------

def answers(user, kind, key, addrs):
    """The real client's answers, run as `user`, one dict per address in order."""
    if kind == "pid":
        args = ["lookup", "--pid", key, "--json"]
    else:
        args = ["lookup", "--image", key, "--json"]
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    res = users.client(user, S["client"], h.socket_path, *args, input=text, timeout=120)
    check(res.returncode == 0,
          f"{user}: jitsym {' '.join(map(str, args))}: exit {res.returncode}: {res.stderr[:300]}")
    out = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    check(len(out) == len(addrs) and all(int(a["addr"], 16) == x for a, x in zip(out, addrs)),
          f"{user}: {len(out)} answers for {len(addrs)} addresses, or out of order")
    return out


def expected_ok(expect):
    """Every expected answer, grouped per user and process or image; returns the mismatches."""
    groups = {}
    for user, kind, key, addr, name, origin in expect:
        groups.setdefault((user, kind, key), []).append((addr, name, origin))
    bad = []
    for (user, kind, key), items in groups.items():
        got = answers(user, kind, key, [a for a, _, _ in items])
        for (addr, name, origin), a in zip(items, got):
            if name is None:
                if a.get("found"):
                    bad.append(f"{kind} {key} {hexaddr(addr)}: found {a.get('name', '')[:60]!r}, "
                               "expected nothing (line over the format's limit)")
            elif not (a.get("found") and a.get("name") == name and a.get("origin") == origin):
                bad.append(f"{kind} {key} {hexaddr(addr)}: got {str(a)[:200]}, expected "
                           f"{origin} {name[:60]!r}... ({len(name)} chars)")
    return bad


def wait_expected(expect, what, timeout=20):
    """Polls until every expected answer is there; a failed lookup fails at once."""
    deadline = time.monotonic() + timeout
    while bad := expected_ok(expect):
        check(time.monotonic() < deadline,
              f"{what}: {len(bad)} wrong answers after {timeout} s: " + "; ".join(bad[:4]))
        time.sleep(0.1)


def alive():
    check(h.daemon.alive(), f"jitsymd exited with status {h.daemon.proc.returncode}")
    res = h.client("ping", timeout=10)
    check(res.returncode == 0, f"ping: exit {res.returncode}: {res.stderr[:300]}")


def sleeper(user):
    """A process of `user`'s, killed when the run ends."""
    pid = h.sleeper(wrap=lambda argv: users.argv(user, argv), env=users.env(user))
    uid = users.ensure(user).pw_uid
    wait_until(lambda: os.stat(f"/proc/{pid}").st_uid == uid, 5, f"{user}'s sleeper")
    return pid


def add_format(fmt, write):
    """Writes one file per size with write(size, index) -> [(kind, key, addr, name, origin)],
    then checks the daemon, these answers, and every earlier file's."""
    new = []
    for i, size in enumerate(SIZES):
        new += [(users.BOB,) + e for e in write(size, i)]
    wait_expected(new, f"{fmt} files with long names to answer")
    alive()
    bad = expected_ok(S["expect"])
    check(not bad, f"after the {fmt} files, earlier files changed: " + "; ".join(bad[:4]))
    S["expect"] += new


@h.setup
def start():
    users.ensure_both()
    # Like /tmp: the watch directory is writable by everyone, the socket reachable by everyone.
    S["client"] = users.share_like_tmp(h)
    # The victim's files, with ordinary names, there before the long ones: they must not change.
    control = sleeper(users.ALICE)
    users.write(users.ALICE, os.path.join(h.watch_dir, f"perf-{control}.map"),
                b"9000000 100 control_a\n9000100 100 control_b\n")
    users.write(users.ALICE, os.path.join(h.watch_dir, "Control.ni.r2rmap"),
                r2rmap_file(b"Control::Middle()").replace(SIG.encode(), b"AB" * 16))
    h.start_daemon()
    S["expect"] = [(users.ALICE, "pid", control, 0x9000000, "control_a", "perfmap"),
                   (users.ALICE, "pid", control, 0x9000150, "control_b", "perfmap"),
                   (users.ALICE, "image", "Control", 0x1150, "Control::Middle()", "r2rmap")]
    wait_expected(S["expect"], "the victim's files to answer")
    # The attacker's processes, one per name size.
    for size in SIZES:
        S["pids"][size] = sleeper(users.BOB)


@h.case
def perfmap_lines():
    def write(size, i):
        pid, base = S["pids"][size], 0x10000000 + i * 0x100000
        name = long_name(size, "P")
        users.write(users.BOB, os.path.join(h.watch_dir, f"perf-{pid}.map"),
                    perfmap_file(base, name))
        line = len(f"{base + 0x100:x} 100 ") + size
        return [("pid", pid, base + 0x10, f"before_{base:x}", "perfmap"),
                ("pid", pid, base + 0x1ff, shown(name) if line <= PERFMAP_MAX_LINE else None,
                 "perfmap"),
                ("pid", pid, base + 0x210, f"after_{base:x}", "perfmap")]
    add_format("perf map", write)
    # The lines over 64 KiB are reported, not silently lost.
    check(h.daemon.log().count("line longer than 64 KiB; line skipped") >= 2,
          "no log line for the perf map lines over 64 KiB")


@h.case
def jitdump_loads():
    def write(size, i):
        pid, base = S["pids"][size], 0x20000000 + i * 0x100000
        name = long_name(size, "J")
        users.write(users.BOB, h.dump_path(pid), jitdump_file(pid, base, name))
        return [("pid", pid, base, f"before_{base:x}", "jitdump"),
                ("pid", pid, base + 0x180, shown(name), "jitdump"),
                ("pid", pid, base + 0x2ff, f"after_{base:x}", "jitdump")]
    add_format("jitdump", write)


@h.case
def r2rmap_without_process():
    def write(size, i):
        name = long_name(size, "R")
        image = f"Long{i}"
        users.write(users.BOB, os.path.join(h.watch_dir, f"{image}.ni.r2rmap"),
                    r2rmap_file(name).replace(SIG.encode(), f"{i:032X}".encode()))
        line = len("00001100 100 ") + size
        return [("image", image, 0x1000, "Before()", "r2rmap"),
                ("image", image, 0x1110, shown(name) if line <= R2RMAP_MAX_LINE else None,
                 "r2rmap"),
                ("image", image, 0x12ff, "After()", "r2rmap")]
    add_format("r2rmap", write)


@h.case
def mlpd_jit_events():
    def write(size, i):
        pid, base = S["pids"][size], 0x30000000 + i * 0x100000
        name = long_name(size, "M")
        users.write(users.BOB, os.path.join(h.watch_dir, f"long{i}.mlpd"),
                    mlpd_file(pid, base, [(base, 0x100, f"Before:M{i} ()".encode()),
                                          (base + 0x100, 0x100, name),
                                          (base + 0x200, 0x100, f"After:M{i} ()".encode())]))
        return [("pid", pid, base + 0x20, f"Before:M{i} ()", "mlpd"),
                ("pid", pid, base + 0x100, shown(name), "mlpd"),
                ("pid", pid, base + 0x2f0, f"After:M{i} ()", "mlpd")]
    add_format("mlpd", write)


@h.case
def restart_with_the_files_still_there():
    check(len(S["expect"]) == 3 + 4 * 3 * len(SIZES), f"{len(S['expect'])} answers to check")
    status = h.daemon.stop()
    check(status in (0, -15, 143), f"jitsymd exited with status {status} on SIGTERM")
    t0 = time.monotonic()
    h.start_daemon()
    wait_expected(S["expect"], "every answer again after a restart")
    alive()
    print(f"FIGURE restart with {len(os.listdir(h.watch_dir))} files (names up to 1 MiB): "
          f"all answers back in {time.monotonic() - t0:.2f} s", flush=True)


if __name__ == "__main__":
    h.main()
