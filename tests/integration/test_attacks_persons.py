#!/usr/bin/env python3
"""Quotas per person, not per uid: `jsbob` owns 65,536 subordinate uids (/etc/subuid, as
Debian's useradd gives every user; `uidmap` lets him map them into a user namespace of his own
with `unshare --map-auto`). Acting as eight of them at once (tests/integration/subuid_crowd.py),
he must get no more than one user's share of the daemon's connections, followed files, bytes
and request memory, and `jsalice` must still be served:

- connections: bob's uids together hold at most --max-user-connections; the refused ones get a
  "busy" line that names bob and the subordinate uid; alice and root still ping;
- followed files: perf maps of bob's processes running as his subordinate uids are refused past
  his per-user files limit (the log names it); alice's file, arriving after, is followed;
- bytes: his files together read no more than --limit-user-bytes; alice's file is read whole;
- request memory: partial request lines of his uids are charged to one share; alice's long
  request is answered.

Each case fails when shares are counted per uid: bob's uids then take the totals."""

import json
import os
import shutil
import subprocess
import sys
import threading
import time

import users
from harness import Harness, check, wait_until

h = Harness(__doc__)
S = {}
CROWD = 8  # subordinate uids bob acts as
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def subuid_base(name):
    """The first subordinate uid of `name`, giving him a range if he has none (users made before
    /etc/subuid existed)."""
    def lookup():
        try:
            with open("/etc/subuid") as f:
                for line in f:
                    parts = line.strip().split(":")
                    if len(parts) == 3 and parts[0] == name:
                        return int(parts[1])
        except FileNotFoundError:
            pass
        return None
    base = lookup()
    if base is None:
        subprocess.run(["usermod", "--add-subuids", "700000-765535", "--add-subgids",
                        "700000-765535", name], check=True, capture_output=True, timeout=30)
        base = lookup()
    check(base is not None, f"{name} has no range in /etc/subuid")
    return base


def restart(*extra):
    if h.daemon is not None and h.daemon.alive():
        h.daemon.stop()
    h.start_daemon([str(a) for a in extra])


def crowd(where, mode, arg):
    """subuid_crowd.py as bob, inside a user namespace mapping his subordinate uids; its output
    lines are collected."""
    argv = ["unshare", "--user", "--map-auto", "--map-root-user", PYTHON, S["crowd"], str(CROWD),
            where, mode, str(arg)]
    proc = h.spawn(users.argv(users.BOB, argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, text=True, env=users.env(users.BOB))
    lines = []

    def pump():
        for line in proc.stdout:
            lines.append(line.strip())
    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


def stop(proc):
    proc.kill()
    proc.wait()
    subprocess.run(["pkill", "-KILL", "-f", S["crowd"]], capture_output=True)


def reported(lines, word, count, what):
    wait_until(lambda: sum(l.split()[1:2] == [word] for l in lines) >= count, 30, what)


def ping_as(user):
    if user == "root":
        return h.client("--timeout", "10", "ping", timeout=30)
    return users.client(user, S["client"], h.socket_path, "--timeout", "10", "ping", timeout=30)


def files_seen():
    """Side files the daemon followed or refused for a limit so far."""
    stats = json.loads(h.client("stats", "--json").stdout)
    return stats.get("files_followed", 0) + stats.get("files_over_limit", 0)


def alice_map(lines):
    pid = h.sleep_as(users.ALICE)
    text = "".join("%x 40 alice_fn_%d\n" % (0x20000000 + i * 64, i) for i in range(lines))
    users.write(users.ALICE, os.path.join(h.watch_dir, f"perf-{pid}.map"), text)
    return pid


def alice_resolves(pid, index):
    res = users.client(users.ALICE, S["client"], h.socket_path, "lookup", "--pid", pid, "--json",
                       hex(0x20000000 + index * 64), timeout=30)
    if res.returncode != 0 or not res.stdout.strip():
        return False
    return json.loads(res.stdout.splitlines()[0]).get("name") == f"alice_fn_{index}"


@h.setup
def setup():
    users.ensure_both()
    check(shutil.which("newuidmap") is not None, "newuidmap (Debian's uidmap) is not installed")
    S["bob_uid"] = users.ensure(users.BOB).pw_uid
    S["bob_base"] = subuid_base(users.BOB)
    os.chmod(h.root, 0o755)
    os.chmod(h.watch_dir, 0o1777)
    for name, src in (("client", h.jitsym),
                      ("crowd", os.path.join(os.path.dirname(__file__), "subuid_crowd.py"))):
        S[name] = os.path.join(h.root, os.path.basename(src))
        shutil.copy(src, S[name])
        os.chmod(S[name], 0o755)
    # The namespace bob will make: its uid k is his subordinate uid base + k - 1.
    res = users.run(users.BOB, ["unshare", "--user", "--map-auto", "--map-root-user", "cat",
                                "/proc/self/uid_map"])
    check(res.returncode == 0, f"bob cannot map his subordinate uids: {res.stderr.strip()}")
    check(str(S["bob_base"]) in res.stdout, f"bob's namespace maps: {res.stdout!r}")


@h.case
def connections_of_subordinate_uids_count_as_their_owner():
    per_user = 8
    restart("--max-connections", 64, "--max-user-connections", per_user)
    proc, lines = crowd(h.socket_path, "hold", per_user)
    try:
        reported(lines, "holding", CROWD, "bob's uids to open their connections")
        ok = [l for l in lines if l.split()[1] == "ok"]
        refused = [l for l in lines if l.split()[1] == "refused"]
        print(f"  bob's {CROWD} uids: {len(ok)} connections admitted, {len(refused)} refused")
        check(len(ok) == per_user, f"bob's uids were admitted {len(ok)} times (share {per_user})")
        sample = refused[0] if refused else ""
        check(f"uid {S['bob_uid']} (with its subordinate uids; this is uid " in sample and
              "per-user connection limit" in sample, f"a refused connection said: {sample}")
        for user in (users.ALICE, "root"):
            res = ping_as(user)
            check(res.returncode == 0, f"{user}'s ping while bob's uids hold: {res.stderr}")
    finally:
        stop(proc)


@h.case
def followed_files_of_subordinate_uids_count_as_their_owner():
    # A live process's map costs two of its owner's files: the map and the process's pidfd.
    restart("--limit-total-files", 16, "--limit-user-files", 4)
    proc, lines = crowd(h.watch_dir, "map", 10)
    try:
        reported(lines, "mapped", CROWD, "bob's uids to write their maps")
        wait_until(lambda: files_seen() >= CROWD, 10, "the daemon to take or refuse bob's maps")
        pid = alice_map(10)
        wait_until(lambda: alice_resolves(pid, 3), 10, "alice's map to be followed")
        check("per-user files limit (4 for uid %d and its subordinate uids" % S["bob_uid"]
              in h.daemon.log(), "no log line names bob's per-user files limit")
    finally:
        stop(proc)


@h.case
def bytes_of_subordinate_uids_count_as_their_owner():
    restart("--limit-user-bytes", "256K", "--limit-total-bytes", "1M")
    # ~190 KB per map: two of bob's uids take his share; eight would take the total.
    proc, lines = crowd(h.watch_dir, "map", 7000)
    try:
        reported(lines, "mapped", CROWD, "bob's uids to write their maps")
        wait_until(lambda: files_seen() >= CROWD, 10, "the daemon to take bob's maps")
        wait_until(lambda: "bytes limit (" in h.daemon.log(), 10, "a byte limit to stop bob")
        time.sleep(0.5)  # let the ingester read all it will of bob's maps
        pid = alice_map(5000)
        wait_until(lambda: alice_resolves(pid, 4999), 10, "alice's whole map to be read")
        check("per-user bytes limit (262144 for uid %d and its subordinate uids" % S["bob_uid"]
              in h.daemon.log(), "no log line names bob's per-user bytes limit")
    finally:
        stop(proc)


@h.case
def request_memory_of_subordinate_uids_counts_as_their_owner():
    restart("--request-memory", "16M", "--user-request-memory", "6M")
    # A 3 MB partial line takes a 4 MiB buffer: one fits a 6 MiB share, two do not; four would
    # take the total.
    proc, lines = crowd(h.socket_path, "partial", 3 << 20)
    try:
        wait_until(lambda: sum(l.split()[1] in ("held", "busy") for l in lines) >= CROWD, 30,
                   "bob's partial requests")
        held = [l for l in lines if l.split()[1] == "held"]
        busy = [l for l in lines if l.split()[1] == "busy"]
        print(f"  bob's {CROWD} uids: {len(held)} partial 3 MB lines held, {len(busy)} busy")
        check(len(held) == 1, f"bob's uids hold {len(held)} partial lines (one fits his share)")
        check(busy and "per-user request memory limit" in busy[0] and
              f"uid {S['bob_uid']} (with its subordinate uids" in busy[0], f"busy: {busy[:1]}")
        # Alice's own long request (20,000 addresses: about 3.5 MiB charged) is answered.
        pid = alice_map(10)
        wait_until(lambda: alice_resolves(pid, 1), 10, "alice's map")
        text = "".join("0x%x\n" % (0x20000000 + (i % 10) * 64) for i in range(20000))
        res = users.client(users.ALICE, S["client"], h.socket_path, "lookup", "--pid", pid,
                           "--batch", 20000, input=text, timeout=60)
        check(res.returncode == 0 and res.stdout.count("alice_fn_") == 20000,
              f"alice's long request: exit {res.returncode}, {res.stderr.strip()[:300]}")
    finally:
        stop(proc)


if __name__ == "__main__":
    h.main()
