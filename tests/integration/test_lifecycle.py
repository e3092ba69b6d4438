#!/usr/bin/env python3
"""Lifecycle of exited processes against the real daemon: an exited process still resolves during
its retention (short here) and is evicted after it, never before; running processes are never
evicted; an evicted file left on disk is not read again by a rescan, but a new process reusing
its name is; the memory budget (changed by SIGHUP) evicts the oldest exit first; stats shows
memory, budget, exited processes and evictions."""

import json
import os
import signal
import time

import jitdump
from harness import Harness, check, wait_until

h = Harness(__doc__)
RETENTION_S = 2.0


def write_dump(pid, names, start=0x5000_0000, size=0x40, directory=None):
    w = jitdump.Writer(pid)
    base = time.monotonic_ns()
    chunks = [w.header(base)]
    for i, name in enumerate(names):
        chunks.append(w.load(base + i + 1, start + i * size, size, name, i + 1))
    h.write_file(h.dump_path(pid, directory), *chunks)
    return start


def name_at(pid, addr):
    answer = h.lookup_one(pid, addr)
    return answer.get("name") if answer.get("found") else None


def stats():
    res = h.client("stats", "--json")
    check(res.returncode == 0, f"jitsym stats failed: {res.stderr}")
    return json.loads(res.stdout)


def alive_flag(pid):
    res = h.client("processes", "--json")
    for line in res.stdout.splitlines():
        p = json.loads(line)
        if p["pid"] == pid:
            return p["alive"]
    return None


def exit_child(pid):
    """Kills a helper and waits until the daemon has seen it exit; returns the kill time."""
    h.kill_child(pid)
    t = time.monotonic()
    wait_until(lambda: alive_flag(pid) is False, 10, f"pid {pid} to be seen exiting")
    return t


@h.setup
def start():
    config = os.path.join(h.root, "jitsymd.conf")
    with open(config, "w") as f:
        f.write("retention = 0\nmemory-budget = 0\n")
    h.config = config
    h.start_daemon(["--config", config])


@h.case
def memory_budget_evicts_oldest_exit_first():
    pids = [h.sleeper() for _ in range(3)]
    live = h.sleeper()
    starts = {}
    for i, pid in enumerate(pids + [live]):
        starts[pid] = write_dump(pid, [f"budget_{i}_{j}" for j in range(3000)],
                                 start=0x6000_0000 + i * 0x100_0000)
    for pid in pids + [live]:
        h.wait_resolves(pid, starts[pid], f"budget_{(pids + [live]).index(pid)}_0", timeout=20)
    # No time limit (retention = 0), so only the budget evicts; exit the three in order.
    for pid in pids:
        exit_child(pid)
        time.sleep(0.05)  # distinct exit times

    # Let idle compaction settle, so memory_bytes is what the budget is compared with.
    def stable():
        a = stats()["memory_bytes"]
        time.sleep(1.5)
        b = stats()
        return b if b["memory_bytes"] == a else None
    s0 = wait_until(stable, 20, "memory_bytes to settle", interval=0)
    check(s0["memory_bytes"] > 0, f"{s0}")
    budget = s0["memory_bytes"] - 1
    with open(h.config, "w") as f:
        f.write(f"retention = 0\nmemory-budget = {budget}\n")
    h.daemon.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: stats()["memory_budget_bytes"] == budget, 10, "the new budget")
    wait_until(lambda: name_at(pids[0], starts[pids[0]]) is None, 10,
               "the oldest exited process to be evicted")
    s1 = stats()
    check(s1["memory_bytes"] <= budget, f"still over the budget: {s1}")
    check(name_at(pids[2], starts[pids[2]]) == "budget_2_0",
          "the newest exited process was evicted too, though the oldest sufficed")
    check(name_at(live, starts[live]) == "budget_3_0", "the running process was evicted")

    # A budget nothing can meet: every exited process goes, the running one stays, and the
    # daemon says why it is still over.
    with open(h.config, "w") as f:
        f.write("retention = 0\nmemory-budget = 1\n")
    h.daemon.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: all(name_at(p, starts[p]) is None for p in pids), 10,
               "every exited process to be evicted")
    check(name_at(live, starts[live]) == "budget_3_0", "the running process was evicted")
    wait_until(lambda: any("over the memory budget" in l for l in h.daemon.log_lines()), 10,
               "the over-budget warning")
    s2 = stats()
    check(s2["processes_exited"] == 0 and s2["evictions"] >= s1["evictions"] + 2, f"{s2}")


@h.case
def exited_process_resolves_during_retention_then_is_evicted():
    with open(h.config, "w") as f:
        f.write(f"retention = {int(RETENTION_S * 1000)}ms\nmemory-budget = 0\n")
    h.daemon.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: stats()["memory_budget_bytes"] == 0, 10, "the budget to be lifted")
    keep = h.sleeper()
    gone = h.sleeper()
    addr_keep = write_dump(keep, ["kept_alive"])
    addr_gone = write_dump(gone, ["exits_soon"])
    h.wait_resolves(keep, addr_keep, "kept_alive")
    h.wait_resolves(gone, addr_gone, "exits_soon")
    s0 = stats()
    check(s0["memory_budget_bytes"] == 0, f"budget: {s0}")
    killed = exit_child(gone)
    # Within the retention: still there, counted as exited.
    check(name_at(gone, addr_gone) == "exits_soon", "evicted right after the exit")
    check(stats()["processes_exited"] >= 1, "processes_exited does not count it")

    def evicted():
        return name_at(gone, addr_gone) is None
    wait_until(evicted, RETENTION_S + 10, "the exited process to be evicted", interval=0.05)
    after = time.monotonic() - killed
    check(after >= RETENTION_S - 0.05,
          f"evicted {after:.2f}s after the exit, before the {RETENTION_S}s retention")
    s1 = stats()
    check(s1["evictions"] >= s0["evictions"] + 1, f"evictions did not grow: {s0} -> {s1}")
    check(any(f"evicting pid {gone} " in l and "retention" in l for l in h.daemon.log_lines()),
          "no log line for the eviction")
    # The running process is never evicted, however long it has been indexed.
    time.sleep(RETENTION_S + 1.2)
    check(name_at(keep, addr_keep) == "kept_alive", "a running process was evicted")

    # The evicted file is still on disk. Opened for writing and closed unchanged (inotify
    # reports IN_CLOSE_WRITE), it is not read again; a file written after that resolves, so the
    # event has been handled when we look.
    open(h.dump_path(gone), "ab").close()
    marker = h.sleeper()
    write_dump(marker, ["after_the_close"])
    h.wait_resolves(marker, 0x5000_0000, "after_the_close")
    check(name_at(gone, addr_gone) is None, "the evicted file was read again")
    # ... but a new process reusing the name (rewritten file) is read.
    write_dump(gone, ["pid_reused_writer"], start=0x5100_0000)
    h.wait_resolves(gone, 0x5100_0000, "pid_reused_writer")


h.main()
