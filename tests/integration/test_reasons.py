#!/usr/bin/env python3
"""A reason with every miss, as a user sees it through the real client: `jitsym lookup` prints
`ADDR ?? REASON[: DETAIL]` and exits 3 for a process the daemon knows nothing of and 4 for one
the caller may not see; `jitsym pprof` says so on stderr. A real node --perf-prof workload that
reuses code addresses, asked with CLOCK_MONOTONIC nanoseconds (the right names), with epoch
nanoseconds and with microseconds (never a name: wrong_clock naming the clock), before the
process started (before_start), before the code was there (before_code), after it exited
(after_exit) and where nothing ever was (no_code). A corrupt jitdump and a perf map of another
user's are file_ignored, naming the file (and the offset); a stripped ELF is no_debug_info, an
address without a symbol in an ELF file no_symbol."""

import json
import os
import re
import shutil
import struct
import subprocess
import time

import jitdump
import oracle
import users
from harness import Harness, check, hexaddr, read_line, wait_until

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
RUN = {}
EXPECTED = "expected CLOCK_MONOTONIC nanoseconds, as perf record -k mono writes"


def lookup_lines(*args, input=None, user=None):
    """(exit status, [fields of each output line]) of `jitsym lookup ARGS`."""
    if user is None:
        res = h.client("lookup", *args, input=input)
    else:
        res = users.client(user, RUN["client"], h.socket_path, "lookup", *args, input=input)
    return res, [line.split("\t") for line in res.stdout.splitlines()]


def lookup_json(pid, queries):
    """The --json answers for [(addr, time)] of pid; exit status 0 expected."""
    text = "".join(f"{hexaddr(a)} {t}\n" for a, t in queries)
    res = h.client("lookup", "--pid", pid, "--json", input=text, timeout=120)
    check(res.returncode == 0, f"lookup exited {res.returncode}: {res.stderr[:300]}")
    out = [json.loads(line) for line in res.stdout.splitlines()]
    check(len(out) == len(queries), f"{len(out)} answers for {len(queries)} queries")
    return out


@h.setup
def start():
    users.ensure_both()
    RUN["client"] = users.share_like_tmp(h)
    h.start_daemon()
    node = shutil.which("node")
    check(node is not None, "node is not on PATH (./build.sh installs Debian's nodejs)")
    res = subprocess.run([node, "--perf-prof", "--expose-gc", "--allow-natives-syntax",
                          os.path.join(HERE, "node", "reuse_workload.js"), "20", "100"],
                         cwd=h.watch_dir, capture_output=True, text=True, timeout=120)
    check(res.returncode == 0, f"node failed ({res.returncode}): {res.stderr[-2000:]}")
    pids = [int(n[4:-5]) for n in os.listdir(h.watch_dir)
            if n.startswith("jit-") and n.endswith(".dump")]
    check(len(pids) == 1, f"expected one jitdump in {h.watch_dir}, found {pids}")
    pid = RUN["pid"] = pids[0]
    dump = jitdump.read_file(h.dump_path(pid))
    check(dump is not None and dump.error is None, f"our reader: {dump and dump.error}")
    RUN["oracle"] = model = oracle.Oracle(dump)
    RUN["loads"] = loads = [r for r in dump.loads() if r.code_size > 0]
    last = loads[-1]
    h.wait_resolves(pid, last.code_addr, model.lookup(last.code_addr, last.eff_ts).name,
                    t=last.eff_ts, timeout=15)

    def exited():
        res = h.client("processes", "--json")
        return any(p["pid"] == pid and not p["alive"]
                   for line in res.stdout.splitlines() for p in [json.loads(line)])
    wait_until(exited, 10, "the daemon to see node exit")


@h.case
def unknown_process_exits_3():
    pid = 999999
    check(not os.path.exists(f"/proc/{pid}"), "pid 999999 exists")
    res, lines = lookup_lines("--pid", pid, "0x1234", "0x5678")
    check(res.returncode == 3, f"exit {res.returncode}, want 3: {res.stderr}")
    check(len(lines) == 2 and all(l[:2] == [hexaddr(a), "??"] and len(l) == 3 and
                                  l[2].startswith("unknown_process: ")
                                  for l, a in zip(lines, (0x1234, 0x5678))),
          f"want ADDR ?? unknown_process: ...: {res.stdout!r}")
    # --json passes the reason through.
    res = h.client("lookup", "--pid", pid, "--json", "0x1234")
    doc = json.loads(res.stdout)
    check(res.returncode == 3 and doc["reason"] == "unknown_process" and not doc["found"],
          f"--json: {res.returncode} {res.stdout!r}")


def write_profile(path, pcs):
    """A gperftools CPU profile (64-bit, little endian) of one sample with these pcs and no
    mappings: every pc is asked of jitsymd by pid."""
    words = [0, 3, 0, 10000, 0, 1, len(pcs)] + pcs + [0, 1, 0]
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{len(words)}Q", *words))


@h.case
def pprof_reports_the_unknown_pid_and_the_unnamed_pcs():
    prof = os.path.join(h.root, "unknown.prof")
    write_profile(prof, [0x7000_1000, 0x7000_2000, 0x7000_3000])
    res = h.client("pprof", prof, "--pid", 999999)
    check(res.returncode == 3, f"exit {res.returncode}, want 3: {res.stderr!r}")
    check("knows nothing about pid 999999" in res.stderr, f"stderr: {res.stderr!r}")
    check(re.search(r"3 JIT pcs \(by pid\) to name, 0 named, 3 left unknown", res.stderr) and
          "reason unknown_process: 3" in res.stderr, f"stderr: {res.stderr!r}")
    check("0x0000000070001000" in res.stdout, f"the pcs still print in hex: {res.stdout!r}")
    # A known process: the pcs it does not know are counted by reason, exit 0.
    res = h.client("pprof", prof, "--pid", RUN["pid"])
    check(res.returncode == 0 and "reason no_code: 3" in res.stderr,
          f"known pid: {res.returncode} {res.stderr!r}")


@h.case
def another_users_live_process_is_permission_denied_exit_4():
    proc = users.spawn(users.ALICE, ["sleep", "600"])
    try:
        wait_until(lambda: os.stat(f"/proc/{proc.pid}").st_uid ==
                   users.ensure(users.ALICE).pw_uid, 5, "alice's sleeper")
        res, lines = lookup_lines("--pid", proc.pid, "0x1234", user=users.BOB)
        check(res.returncode == 4, f"exit {res.returncode}, want 4: {res.stderr}")
        check(lines == [["0x1234", "??", "permission_denied"]], f"{res.stdout!r}")
        # Alice herself: her process is known (running), the address is not.
        res, lines = lookup_lines("--pid", proc.pid, "0x1234", user=users.ALICE)
        check(res.returncode == 0 and lines and lines[0][2].startswith("no_code"),
              f"alice: {res.returncode} {res.stdout!r}")
    finally:
        proc.kill()
        proc.wait()


@h.case
def monotonic_times_answer_the_right_names():
    pid, model, loads = RUN["pid"], RUN["oracle"], RUN["loads"]
    queries = [(r.code_addr, r.eff_ts) for r in loads[::7]]
    answers = lookup_json(pid, queries)
    bad = [(hexaddr(a), t, ans.get("name"), model.lookup(a, t).name)
           for (a, t), ans in zip(queries, answers) if ans.get("name") != model.lookup(a, t).name]
    check(not bad, f"{len(bad)} of {len(queries)} wrong: {bad[:5]}")


def reused_queries():
    """LOADs at addresses that other code had earlier or later: where a time picks the name."""
    model, loads = RUN["oracle"], RUN["loads"]
    out = [(r.code_addr, r.eff_ts) for r in loads
           if model.lookup(r.code_addr, r.eff_ts).name != model.lookup(r.code_addr).name]
    check(len(out) >= 50, f"only {len(out)} LOADs in reused ranges")
    return out


@h.case
def epoch_nanoseconds_never_answer_a_name():
    offset = time.time_ns() - time.monotonic_ns()
    queries = reused_queries()
    answers = lookup_json(RUN["pid"], [(a, t + offset) for a, t in queries])
    named = [a for a in answers if a.get("found")]
    check(not named, f"{len(named)} of {len(answers)} epoch times got a name, e.g. {named[:3]}")
    for a in answers:
        check(a.get("reason") == "wrong_clock" and
              "CLOCK_REALTIME nanoseconds (a wall-clock epoch)" in a.get("detail", "") and
              EXPECTED in a["detail"], f"epoch answer: {a}")
    # Text output: the third column.
    a, t = queries[0]
    res, lines = lookup_lines("--pid", RUN["pid"], input=f"{hexaddr(a)} {t + offset}\n")
    check(res.returncode == 0 and lines[0][1] == "??" and
          lines[0][2].startswith("wrong_clock: time ") and EXPECTED in lines[0][2],
          f"text: {res.returncode} {res.stdout!r}")


@h.case
def microseconds_never_answer_a_name():
    queries = reused_queries()
    answers = lookup_json(RUN["pid"], [(a, t // 1000) for a, t in queries])
    named = [a for a in answers if a.get("found")]
    check(not named, f"{len(named)} of {len(answers)} microsecond times got a name: {named[:3]}")
    for a in answers:
        check(a.get("reason") == "wrong_clock" and
              "CLOCK_MONOTONIC microseconds" in a.get("detail", "") and EXPECTED in a["detail"],
              f"microseconds answer: {a}")
    # Epoch microseconds too.
    offset = time.time_ns() - time.monotonic_ns()
    answers = lookup_json(RUN["pid"], [(a, (t + offset) // 1000) for a, t in queries[:20]])
    for a in answers:
        check(not a.get("found") and a.get("reason") == "wrong_clock" and
              "microseconds" in a.get("detail", ""), f"epoch microseconds answer: {a}")


@h.case
def before_start_before_code_after_exit_no_code():
    pid, model, loads = RUN["pid"], RUN["oracle"], RUN["loads"]
    t0 = min(r.eff_ts for r in loads)
    first = loads[0]
    # A minute before the process started.
    a = lookup_json(pid, [(first.code_addr, t0 - 60 * 10**9)])[0]
    check(not a["found"] and a.get("reason") == "before_start" and "started at" in a["detail"],
          f"before the start: {a}")
    # In the process's life, before any code was at the address.
    later = [r for r in loads if model.lookup(r.code_addr, t0) is None][:20]
    check(later, "no LOAD at an address empty at the first LOAD's time")
    for r, a in zip(later, lookup_json(pid, [(r.code_addr, t0) for r in later])):
        first_def = min(x.eff_ts for x in loads
                        if x.code_addr <= r.code_addr < x.code_addr + x.code_size)
        check(not a["found"] and a.get("reason") == "before_code" and
              f"known from {first_def} " in a["detail"], f"before the code: {a} ({first_def})")
    # Only perf maps asked for (--origin): the jitdump's later code explains nothing.
    r = later[0]
    res = h.client("lookup", "--pid", pid, "--origin", "perfmap", "--json", "--time", t0,
                   hexaddr(r.code_addr))
    a = json.loads(res.stdout)
    check(res.returncode == 0 and a.get("reason") == "no_code", f"--origin perfmap: {a}")
    # After node exited (the daemon has seen it), where no code was at the end. (Where code
    # was, a time a little after the exit answers with the code of the end, as before.)
    a = lookup_json(pid, [(0x10, time.monotonic_ns())])[0]
    check(not a["found"] and a.get("reason") == "after_exit" and "exited at" in a["detail"],
          f"after the exit: {a}")
    # Where nothing ever was.
    a = lookup_json(pid, [(0x10, first.eff_ts)])[0]
    check(not a["found"] and a.get("reason") == "no_code", f"no code: {a}")


@h.case
def a_corrupt_jitdump_is_file_ignored_with_its_offset():
    pid = h.sleeper()
    w = jitdump.Writer(pid)
    t = time.monotonic_ns()
    good = w.header(t) + w.load(t + 1, 0x6100_0000, 0x100, "good_fn", 1)
    bad = w.record(jitdump.LOAD, t + 2, b"", total_size=8)  # smaller than a record header
    path = h.dump_path(pid)
    h.write_file(path, good + bad)
    h.wait_resolves(pid, 0x6100_0010, "good_fn")
    res, lines = lookup_lines("--pid", pid, "--time", t + 10, "0x62000000")
    check(res.returncode == 0 and len(lines) == 1 and lines[0][1] == "??", f"{res.stdout!r}")
    why = lines[0][2]
    check(why.startswith("file_ignored: ") and path in why and
          f"offset {len(good)}" in why, f"want file_ignored naming {path} and offset "
          f"{len(good)}: {why!r}")


@h.case
def another_users_perf_map_is_file_ignored():
    proc = users.spawn(users.ALICE, ["sleep", "600"])
    try:
        wait_until(lambda: os.stat(f"/proc/{proc.pid}").st_uid ==
                   users.ensure(users.ALICE).pw_uid, 5, "alice's sleeper")
        planted = os.path.join(h.watch_dir, f"perf-{proc.pid}.map")
        users.write(users.BOB, planted, "70000000 100 bobs_lie\n")
        deadline = time.monotonic() + 5
        while True:
            res, lines = lookup_lines("--pid", proc.pid, "0x70000010", user=users.ALICE)
            if lines and lines[0][2].startswith("file_ignored") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        check(res.returncode == 0 and lines[0][1] == "??" and
              lines[0][2].startswith("file_ignored: ") and planted in lines[0][2] and
              "owned by" in lines[0][2], f"alice's lookup: {res.stdout!r}")
    finally:
        proc.kill()
        proc.wait()


PROG = r"""
#include <unistd.h>
__attribute__((noinline)) int jitsym_reason_fn(int x) { return x * 3 + 1; }
int main(int argc, char** argv) {
  if (argc > 1) { write(1, "ready\n", 6); pause(); }
  return jitsym_reason_fn(argc);
}
"""


@h.case
def stripped_elf_is_no_debug_info_and_no_symbol():
    cc = shutil.which("cc") or shutil.which("gcc")
    check(cc is not None, "no C compiler")
    src = os.path.join(h.root, "prog.c")
    with open(src, "w") as f:
        f.write(PROG)
    prog, stripped = os.path.join(h.root, "prog"), os.path.join(h.root, "prog.stripped")
    subprocess.run([cc, "-O1", "-g", "-o", prog, src], check=True, timeout=120)
    shutil.copy(prog, stripped)
    subprocess.run(["strip", "--strip-all", stripped], check=True, timeout=60)
    nm = subprocess.run(["nm", prog], capture_output=True, text=True, check=True).stdout
    fn = int(next(l.split()[0] for l in nm.splitlines() if l.endswith(" jitsym_reason_fn")), 16)
    # Unstripped: named; an address in the file that no symbol covers: no_symbol.
    res, lines = lookup_lines("--image", prog, hexaddr(fn), "0x10")
    check(res.returncode == 0 and lines[0][1].startswith("jitsym_reason_fn+"), f"{res.stdout!r}")
    check(lines[1][1] == "??" and lines[1][2].startswith("no_symbol: "), f"{res.stdout!r}")
    # Stripped: nothing to name anything by.
    res, lines = lookup_lines("--image", stripped, hexaddr(fn))
    check(res.returncode == 0 and lines[0][1] == "??" and
          lines[0][2] == f"no_debug_info: {stripped} is stripped: no .symtab and no debug info, "
          "and no exported symbol covers this address",
          f"{res.stdout!r}")
    # A live process of the stripped file, by pid: the same reason, found through its mappings.
    proc = h.spawn([stripped, "wait"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        read_line(proc, 10, "the stripped program")
        base = None
        with open(f"/proc/{proc.pid}/maps") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 6 and fields[5] == stripped and fields[1].startswith("r-xp"):
                    base = int(fields[0].split("-")[0], 16) - int(fields[2], 16)
        check(base is not None, "no executable mapping of the stripped program")
        res, lines = lookup_lines("--pid", proc.pid, hexaddr(base + fn))
        check(res.returncode == 0 and lines[0][1] == "??" and
              lines[0][2].startswith("no_debug_info: ") and stripped in lines[0][2],
              f"by pid: {res.stdout!r}")
    finally:
        proc.kill()
        proc.wait()


h.main()
