#!/usr/bin/env python3
"""A pid reused by a new process is a new incarnation: a real reuse, forced through
/proc/sys/kernel/ns_last_pid (root only). Each process writes its own jit-<pid>.dump with
different functions at the same addresses; lookups with a time go to the process alive then,
lookups without a time to the newest, and `processes` lists both incarnations."""

import os
import subprocess
import time

import jitdump
from harness import Harness, check, wait_until

h = Harness(__doc__)
LAST_PID = "/proc/sys/kernel/ns_last_pid"


def spawn_with_pid(pid, attempts=200):
    """Starts `sleep` as pid `pid` (the kernel hands out ns_last_pid + 1); other processes may
    take it first, so retry."""
    for _ in range(attempts):
        with open(LAST_PID, "w") as f:
            f.write(str(pid - 1))
        proc = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


STATE = {}


@h.setup
def start():
    h.start_daemon()


@h.case
def reused_pid_is_a_new_incarnation():
    if os.geteuid() != 0 or not os.access(LAST_PID, os.W_OK):
        print("SKIPPED: needs root to choose a pid through ns_last_pid")
        return
    first = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL)
    pid = first.pid
    w = jitdump.Writer(pid)
    t1 = time.monotonic_ns()
    path = h.dump_path(pid)
    h.write_file(path, w.header(t1), w.load(t1 + 10, 0x5000_0000, 0x100, "first_life", 1))
    h.wait_resolves(pid, 0x5000_0010, "first_life")
    first.kill()
    first.wait()
    os.unlink(path)  # the next process of that pid writes its own file
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 5, f"pid {pid} to disappear")

    second = spawn_with_pid(pid)
    check(second is not None, f"could not get pid {pid} again")
    try:
        t2 = time.monotonic_ns()
        h.write_file(path, w.header(t2), w.load(t2 + 10, 0x5000_0000, 0x100, "second_life", 1))
        h.wait_resolves(pid, 0x5000_0010, "second_life")
        answers = h.lookup(pid, [(0x5000_0010, t1 + 20), (0x5000_0010, t2 + 20),
                                 (0x5000_0010, None)])
        names = [a.get("name") for a in answers]
        check(names == ["first_life", "second_life", "second_life"],
              f"answers by time (t1={t1}, t2={t2}): {names}\n"
              f"{h.client('processes', '--json').stdout}")
        incarnations = {a.get("incarnation") for a in answers}
        check(len(incarnations) == 2, f"expected two incarnations, got {incarnations}")
        procs = h.client("processes", "--json")
        lines = [l for l in procs.stdout.splitlines() if f'"pid":{pid},' in l]
        check(len(lines) == 2, f"processes should list pid {pid} twice:\n{procs.stdout}")
        check(sum('"alive":false' in l for l in lines) == 1,
              f"exactly one incarnation should be exited:\n{chr(10).join(lines)}")
    finally:
        second.kill()
        second.wait()


h.main()
