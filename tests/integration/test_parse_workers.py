#!/usr/bin/env python3
"""Native files are read by parse workers, one group per file owner, never by the daemon; two
real users, `jsalice` (her own native process: libc, root's) and `jsbob` (libraries of his in
his home):

- each owner's files are read by a worker of his (root's by nobody), which holds no
  capability, sets no_new_privs, filters system calls and has an address-space limit;
- bob stops his worker (it runs as him: he may) and asks again: his lookup answers
  native_failed when the deadline kills it, saying which file and which limit; a second lookup
  of his meanwhile waits holding no query thread (one person never holds every one) and
  answers native_failed too; the file is not read again for a while; alice is answered all
  along, quickly;
- a worker bob kills while it is idle is replaced: his next lookup is answered;
- the workers go with the daemon.

Against the daemon before parse workers, bob's files were read by the daemon itself, as root:
no worker, nothing to stop, and a hostile file cost everyone."""

import json
import os
import subprocess
import threading
import time

import elf_craft
import users
from harness import asan_build, Harness, check, hexaddr, wait_until

h = Harness(__doc__)
S = {}
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
TIMEOUT_MS = None  # set in setup: room for a cold libc, under load and under ASan


def lookup_as(user, *args, timeout=60):
    res = users.client(user, S["client"], h.socket_path, "--timeout", str(timeout), "lookup",
                       "--json", *[str(a) for a in args], timeout=timeout + 30)
    check(h.daemon.alive(), f"the daemon died: {h.log_tail()}")
    return res


def answers(res):
    return [json.loads(l) for l in res.stdout.splitlines() if l.startswith("{")]


def alice_lookup():
    t0 = time.monotonic()
    res = lookup_as(users.ALICE, "--pid", S["alice_pid"], hexaddr(S["malloc"]))
    elapsed = time.monotonic() - t0
    got = answers(res)
    check(res.returncode == 0 and got and "malloc" in got[0].get("name", ""),
          f"alice's lookup: {res.returncode} {res.stdout[:300]} {res.stderr[:300]}")
    return elapsed


def bob_lookup(path, name):
    res = lookup_as(users.BOB, "--image", path, hexaddr(S["addrs"][path][name]))
    got = answers(res)
    check(len(got) == 1, f"bob's lookup: {res.returncode} {res.stdout[:300]} {res.stderr[:300]}")
    return got[0]


def workers():
    """{pid: (uid, group it reads for, /proc status fields)} of this test's daemon's parse
    workers (other tests' daemons may run beside it)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            if not cmdline or cmdline[0] != b"jitsymd-parse-worker":
                continue
            status = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status").read().splitlines()
                          if ":" in l)
        except OSError:
            continue
        if h.daemon.proc is None or int(status["PPid"]) != h.daemon.proc.pid:
            continue
        group = next((a[4:].decode() for a in cmdline if a.startswith(b"for=")), "")
        out[int(pid)] = (int(status["Uid"].split()[1]), group,
                         {k: status[k].strip() for k in ("CapEff", "CapPrm", "NoNewPrivs", "Seccomp")})
    return out


def bobs_worker():
    uid = S["bob"].pw_uid
    mine = [pid for pid, (_, group, _) in workers().items() if group == f"uid {uid}"]
    check(len(mine) == 1, f"bob's workers: {mine} of {workers()}")
    return mine[0]


@h.setup
def setup():
    S["alice"], S["bob"] = users.ensure_both()
    os.chmod(h.root, 0o755)
    S["client"] = os.path.join(h.root, "jitsym")
    subprocess.run(["cp", h.jitsym, S["client"]], check=True)
    os.chmod(S["client"], 0o755)
    global TIMEOUT_MS
    TIMEOUT_MS = 30000 if asan_build(h.jitsymd) else 8000
    h.start_daemon(["--parse-worker-timeout", f"{TIMEOUT_MS}ms"])
    S["alice_pid"] = h.sleep_as(users.ALICE)
    base = None
    for line in open(f"/proc/{S['alice_pid']}/maps"):
        parts = line.split()
        if len(parts) >= 6 and parts[5].endswith("libc.so.6") and int(parts[2], 16) == 0:
            base = int(parts[0].split("-")[0], 16)
            break
    nm = subprocess.run(["nm", "-D", "--defined-only", LIBC], capture_output=True, text=True,
                        check=True).stdout
    malloc = next(int(l.split()[0], 16) for l in nm.splitlines()
                  if l.split()[-1].split("@")[0] == "malloc")
    S["malloc"] = base + malloc
    S["addrs"] = {}
    for name in ("one.so", "two.so"):
        path = os.path.join(S["bob"].pw_dir, name)
        S["addrs"][path] = elf_craft.library(path, [f"bob_{name[:3]}_{i}" for i in range(8)])
        os.chown(path, S["bob"].pw_uid, S["bob"].pw_gid)
    S["one"], S["two"] = sorted(S["addrs"])
    alice_lookup()


@h.case
def each_owners_files_are_read_by_a_worker_of_his_without_privileges():
    got = bob_lookup(S["one"], "bob_one_3")
    check(got.get("name") == "bob_one_3", f"bob's own function: {got}")
    found = workers()
    by_group = {group: (uid, fields) for uid, group, fields in found.values()}
    bob_group = f"uid {S['bob'].pw_uid}"
    check(set(by_group) == {"root", bob_group}, f"worker groups: {found}")
    check(by_group[bob_group][0] == S["bob"].pw_uid, f"bob's worker runs as {by_group[bob_group]}")
    check(by_group["root"][0] == 65534, f"root's files' worker runs as {by_group['root']}")
    for group, (uid, fields) in by_group.items():
        check(fields == {"CapEff": "0000000000000000", "CapPrm": "0000000000000000",
                         "NoNewPrivs": "1", "Seccomp": "2"}, f"{group}: {fields}")
    if not asan_build(h.jitsymd):
        for pid in found:
            limits = open(f"/proc/{pid}/limits").read()
            check("Max address space         4294967296" in limits, f"{pid}: {limits}")
    print(f"  workers: {sorted((g, u) for g, (u, _) in by_group.items())}, no capabilities, "
          f"no_new_privs, seccomp")


@h.case
def a_hung_worker_costs_only_its_owners_answers():
    pid = bobs_worker()
    # bob's own process, as far as the kernel is concerned: he may stop it.
    res = users.run(users.BOB, ["kill", "-STOP", str(pid)])
    check(res.returncode == 0, f"bob could not stop his worker: {res.stderr}")
    first, second = {}, {}
    t = threading.Thread(target=lambda: first.update(bob_lookup(S["one"], "bob_one_1")))
    t0 = time.monotonic()
    t.start()
    time.sleep(0.3)  # bob's first lookup is waiting for his stopped worker
    # His second waits too, holding no query thread: one of the daemon's two is his at most.
    t2 = threading.Thread(target=lambda: second.update(bob_lookup(S["one"], "bob_one_2")))
    t2.start()
    alice = [alice_lookup() for _ in range(20)]
    t.join()
    t2.join()
    bob_s = time.monotonic() - t0
    check(first.get("found") is False and first.get("reason") == "native_failed" and
          f"took longer than {TIMEOUT_MS} ms" in first.get("detail", "") and
          S["one"] in first.get("detail", ""), f"bob's lookup: {first}")
    check(second.get("reason") == "native_failed" and S["one"] in second.get("detail", ""),
          f"bob's second lookup: {second}")
    check(max(alice) < 1.0, f"alice waited {max(alice):.2f} s while bob's worker hung")
    check(not os.path.exists(f"/proc/{pid}"), f"the stopped worker {pid} is still there")
    # At once again: not read, and said why, without a new worker.
    again = bob_lookup(S["one"], "bob_one_1")
    check(again.get("reason") == "native_failed" and "not read again for" in again.get("detail", ""),
          f"bob's lookup right after: {again}")
    # His other file, once the backoff (250 ms) is over: a new worker answers.
    time.sleep(0.5)
    other = bob_lookup(S["two"], "bob_two_5")
    check(other.get("name") == "bob_two_5", f"bob's other file: {other}")
    logged = [l for l in h.daemon.log_lines() if "took longer than" in l and S["one"] in l]
    check(logged, "the killed worker is not logged")
    res = subprocess.run([h.jitsym, "--socket", h.socket_path, "stats", "--json"],
                         capture_output=True, text=True, timeout=30)
    stats = json.loads(res.stdout)
    stats = stats.get("stats", stats)
    check(stats.get("parse_failures") == 1 and stats.get("parse_refused", 0) >= 1 and
          stats.get("parse_workers") == 2 and stats.get("parse_workers_started") == 3,
          f"stats: {stats}")
    print(f"  bob: native_failed after {bob_s:.1f} s ({first['detail']}); his second: "
          f"{second['detail']}; alice: 20 lookups meanwhile, at most {max(alice) * 1000:.0f} ms")


@h.case
def a_worker_killed_while_idle_is_replaced():
    bob_lookup(S["two"], "bob_two_1")
    pid = bobs_worker()
    res = users.run(users.BOB, ["kill", "-KILL", str(pid)])
    check(res.returncode == 0, f"bob could not kill his worker: {res.stderr}")
    wait_until(lambda: not os.path.exists(f"/proc/{pid}/cmdline") or
               not open(f"/proc/{pid}/cmdline", "rb").read(), 5, "the worker to die")
    got = bob_lookup(S["two"], "bob_two_2")
    check(got.get("name") == "bob_two_2", f"bob's lookup after his idle worker died: {got}")
    check(bobs_worker() != pid, "the dead worker was not replaced")
    alice_lookup()


@h.case
def the_workers_go_with_the_daemon():
    pids = list(workers())
    check(pids, "no workers")
    h.daemon.stop()
    check(h.daemon.exit_code in (0, -15, 143), f"jitsymd exited with {h.daemon.exit_code}")
    wait_until(lambda: not any(os.path.exists(f"/proc/{p}/cmdline") and
                               open(f"/proc/{p}/cmdline", "rb").read() for p in pids), 10,
               "the workers to go with the daemon")
    h.start_daemon(["--parse-worker-timeout", f"{TIMEOUT_MS}ms"])  # for the harness's own end


if __name__ == "__main__":
    h.main()
