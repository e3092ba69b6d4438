#!/usr/bin/env python3
"""Attacks on the daemon's socket by a local user, replayed with two real unprivileged users:
`jsbob` attacks, `jsalice` (and root) must still be served.

- Answer memory: bob sends 2^20-address lookups on several connections that never read (or
  read slowly) their answers; alice's lookups still answer fast and the daemon's peak RSS stays
  bounded (answers stream in slices; requests are charged to a memory budget with a per-user
  share, beyond which bob is answered "busy").
- Connection slots: bob opens connections up to his per-user quota; the next one gets a "busy"
  line naming the per-user limit, and `jitsym ping` as bob prints it (exit 1, no "Broken
  pipe"); alice and root still ping.
- Descriptors: the daemon raises its soft RLIMIT_NOFILE to the hard limit and fits its
  connection budget into it (a reserve for itself), so bob's connections are refused at his
  quota, well before the last descriptor, and a restart works.
- Timeouts: an idle connection is closed after --idle-timeout with a "timeout" line; a request
  line that trickles in is cut after --request-timeout (slowloris).
- Client: `jitsym --timeout 1 ping` against a SIGSTOPped daemon gives up with a clear message
  and exit status 1."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import users
from harness import asan_build, Harness, check, wait_until

h = Harness(__doc__)
S = {}
USER_CONNECTIONS = 8
BIG = 1 << 20  # addresses per request: the documented maximum
# The users cannot run an interpreter installed under /root.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def daemon_pid():
    return h.daemon.proc.pid


def restart(*extra):
    if h.daemon is not None and h.daemon.alive():
        h.daemon.stop()
    h.start_daemon([str(a) for a in extra])


def write_map(user, pid, base, n, prefix):
    lines = "".join("%x 40 %s_%d\n" % (base + i * 64, prefix, i) for i in range(n))
    users.write(user, os.path.join(h.watch_dir, f"perf-{pid}.map"), lines)


def attacker(*args):
    """attack_client.py as bob; its output lines are collected in a list."""
    proc = h.spawn(users.argv(users.BOB, [PYTHON, S["attack"], h.socket_path] +
                              [str(a) for a in args]),
                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                   env=users.env(users.BOB))
    lines = []

    def pump():
        for line in proc.stdout:
            lines.append(line.strip())
    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


def stop(proc):
    proc.kill()
    proc.wait()


def alice_named():
    """Whether alice's map answers yet (for waiting on it: nothing fails before it does)."""
    res = users.client(users.ALICE, S["client"], h.socket_path, "lookup", "--pid",
                       S["alice_pid"], "--json", "0x20000010", timeout=60)
    return res.returncode == 0 and '"alice_fn_0"' in res.stdout


def alice_lookup():
    """One lookup as alice through the real client; returns (seconds, answer)."""
    t0 = time.monotonic()
    res = users.client(users.ALICE, S["client"], h.socket_path, "lookup", "--pid",
                       S["alice_pid"], "--json", "0x20000010", timeout=60)
    elapsed = time.monotonic() - t0
    check(res.returncode == 0, f"alice's lookup failed: {res.stderr.strip()}")
    answer = json.loads(res.stdout.splitlines()[0])
    check(answer.get("name") == "alice_fn_0", f"alice's answer: {answer}")
    return elapsed, answer


def ping_as(user):
    if user == "root":
        return h.client("--timeout", "10", "ping", timeout=30)
    return users.client(user, S["client"], h.socket_path, "--timeout", "10", "ping", timeout=30)


@h.setup
def setup():
    users.ensure_both()
    os.chmod(h.root, 0o755)
    os.chmod(h.watch_dir, 0o1777)
    for name, src in (("client", h.jitsym),
                      ("attack", os.path.join(os.path.dirname(__file__), "attack_client.py"))):
        S[name] = os.path.join(h.root, os.path.basename(src))
        shutil.copy(src, S[name])
        os.chmod(S[name], 0o755)
    restart("--max-user-connections", USER_CONNECTIONS)
    S["alice_pid"] = h.sleep_as(users.ALICE)
    S["bob_pid"] = h.sleep_as(users.BOB)
    write_map(users.ALICE, S["alice_pid"], 0x20000000, 100, "alice_fn")
    # Bob's map covers every address his requests ask for: every answer is found and long.
    write_map(users.BOB, S["bob_pid"], 0x10000000, (1 << 24) // 64, "bob_has_a_long_symbol_name")
    wait_until(alice_named, 20, "alice's map to be indexed")
    wait_until(lambda: "bob_has" in users.client(users.BOB, S["client"], h.socket_path,
                                                  "lookup", "--pid", S["bob_pid"], "--json",
                                                  "0x10000040").stdout, 60, "bob's map")


@h.case
def huge_unread_answers_stay_bounded_and_alice_is_served():
    restart("--max-user-connections", USER_CONNECTIONS)
    wait_until(alice_named, 20, "the maps after the restart")
    rss_before = h.daemon_kb("VmRSS")
    # Bounded is not refused: alone, a request of the maximum size is answered whole.
    proc, lines = attacker("flood", 1, S["bob_pid"], BIG, "full")
    try:
        wait_until(lambda: any(l.startswith(("answer", "busy")) for l in lines), 60,
                   "bob's first answer")
    finally:
        stop(proc)
    answer = next(l for l in lines if l.startswith(("answer", "busy"))).split()
    check(answer[0] == "answer" and int(answer[3]) == BIG,
          f"bob's lone 2^20-address lookup: {' '.join(answer)[:300]}")
    # 8 connections: 2^20 addresses each, a third never reading, a third reading slowly.
    proc, lines = attacker("flood", 8, S["bob_pid"], BIG, "never,slow,full")
    try:
        wait_until(lambda: sum(l.startswith("sent") for l in lines) >= 3, 60,
                   "bob's requests to be sent")
        times = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            times.append(alice_lookup()[0])
            time.sleep(0.1)
        peak = h.daemon_kb("VmHWM")
        check(proc.poll() is None, "the attacker is still running")
    finally:
        stop(proc)
    times.sort()
    print(f"  RSS before {rss_before >> 10} MiB, peak {peak >> 10} MiB; alice's lookups "
          f"(client start to exit): median {times[len(times) // 2] * 1000:.0f} ms, "
          f"max {times[-1] * 1000:.0f} ms over {len(times)}; bob: "
          f"{sum(l.startswith('busy') for l in lines)} busy answers, "
          f"{sum(l.startswith('answer') for l in lines)} whole answers")
    limit = 300 * (4 if asan_build(h.jitsymd) else 1)  # ASan: quarantine and shadow memory
    check(peak < limit << 10, f"peak RSS {peak >> 10} MiB while bob floods (limit {limit} MiB)")

    check(times[len(times) // 2] < 1.0, f"alice's median lookup took {times[len(times) // 2]} s")
    wait_until(lambda: ping_as("root").returncode == 0, 10, "root's ping after the flood")


@h.case
def per_user_connection_quota_is_a_clear_busy_and_others_still_ping():
    restart("--max-user-connections", USER_CONNECTIONS)  # no session of the flood left
    proc, lines = attacker("hold", USER_CONNECTIONS + 3)
    try:
        wait_until(lambda: any(l.startswith("holding") for l in lines), 30, "bob's connections")
        ok = [l for l in lines if l.startswith("ok")]
        refused = [l for l in lines if l.startswith("refused")]
        check(len(ok) == USER_CONNECTIONS, f"bob was admitted {len(ok)} times: {lines}")
        check(len(refused) == 3 and all('"busy"' in l and "per-user" in l for l in refused),
              f"bob's extra connections: {refused}")
        res = ping_as(users.BOB)
        check(res.returncode == 1, f"bob's ping exited {res.returncode}")
        check("per-user connection limit" in res.stderr and "Broken pipe" not in res.stderr,
              f"bob's ping said {res.stderr.strip()!r}")
        for user in (users.ALICE, "root"):
            res = ping_as(user)
            check(res.returncode == 0, f"{user}'s ping while bob holds his quota: {res.stderr}")
    finally:
        stop(proc)


@h.case
def descriptor_limit_is_raised_and_budgeted():
    # A hard limit above the soft one, as a login shell has it: the daemon raises the soft one.
    wrapper = os.path.join(h.root, "jitsymd-limited")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec prlimit --nofile=256:600 -- "{h.jitsymd}" "$@"\n')
    os.chmod(wrapper, 0o755)
    real = h.jitsymd
    h.jitsymd = wrapper
    try:
        restart()
    finally:
        h.jitsymd = real
    with open(f"/proc/{daemon_pid()}/limits") as f:
        limit = next(l for l in f if l.startswith("Max open files")).split()
    check(limit[3] == "600", f"soft descriptor limit {limit[3]}, wanted the hard limit 600")
    log = h.daemon.log()
    check("raised the descriptor limit (RLIMIT_NOFILE) from 256 to 600" in log, "the raise logged")
    # 600 - 256 reserved: 86 connections, at most 43 for one user.
    check("descriptor budget: nofile 600 (reserve 256): 86 connections (43 per user)" in log,
          "the budget logged: " + "".join(l for l in log.splitlines() if "budget" in l))
    proc, lines = attacker("hold", 50)
    try:
        wait_until(lambda: any(l.startswith("holding") for l in lines), 60, "bob's connections")
        ok = [l for l in lines if l.startswith("ok")]
        check(len(ok) == 43, f"bob holds {len(ok)} connections, wanted his share of 43")
        for user in (users.ALICE, "root"):
            res = ping_as(user)
            check(res.returncode == 0, f"{user}'s ping while bob holds his share: {res.stderr}")
        fds = len(os.listdir(f"/proc/{daemon_pid()}/fd"))
        check(fds < 600 - 200, f"the daemon holds {fds} descriptors of 600")
    finally:
        stop(proc)
    restart("--max-user-connections", USER_CONNECTIONS)  # and it restarts fine


@h.case
def idle_connection_is_closed_after_the_idle_timeout():
    restart("--idle-timeout", "1s")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(h.socket_path)
    t0 = time.monotonic()
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    elapsed = time.monotonic() - t0
    check(0.9 <= elapsed < 3, f"closed after {elapsed:.2f} s, idle timeout 1 s")
    answer = json.loads(data.splitlines()[0])
    check(answer["error"]["code"] == "timeout" and "idle" in answer["error"]["message"],
          f"the closing line: {data!r}")


@h.case
def request_line_trickling_in_is_cut_after_the_request_timeout():
    restart("--request-timeout", "1s")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(h.socket_path)
    t0 = time.monotonic()
    data = b""
    try:
        for c in b'{"v":1,"op":"lookup","pid":1,"addrs":["0x1","0x2","0x3","0x4","0x5","0x6"':
            s.send(bytes([c]))  # one byte every 100 ms: never idle
            time.sleep(0.1)
            s.setblocking(False)
            try:
                data += s.recv(4096)
            except BlockingIOError:
                pass
            s.setblocking(True)
            if data:
                break
    except OSError:
        pass
    s.settimeout(5)
    try:
        while b"\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    elapsed = time.monotonic() - t0
    check(data and json.loads(data.splitlines()[0])["error"]["code"] == "timeout",
          f"the closing line: {data!r}")
    check(elapsed < 3, f"cut after {elapsed:.2f} s, request timeout 1 s")


@h.case
def client_times_out_on_a_stopped_daemon():
    restart()
    os.kill(daemon_pid(), signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        res = h.client("--timeout", "1", "ping", timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        os.kill(daemon_pid(), signal.SIGCONT)
    check(res.returncode == 1, f"exit status {res.returncode}")
    check("did not answer within 1 s" in res.stderr, f"stderr {res.stderr!r}")
    check(elapsed < 5, f"gave up after {elapsed:.1f} s")
    check(h.client("ping").returncode == 0, "the daemon answers once continued")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("SKIP: needs root (acts as jsalice and jsbob through setpriv)")
        sys.exit(0)
    h.main()
