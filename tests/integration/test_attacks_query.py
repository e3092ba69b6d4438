#!/usr/bin/env python3
"""Attacks on the query side, replayed with two real users (jsalice the victim, jsbob the
attacker; alice's home is 0700) against the real daemon and client. Each case names the attack:
- symbols of another user's exited process: bob asks `jitsym perfmap` / `symbols` for a pid
  alice's exited process had, before and while a process of bob's holds that pid (made with
  /proc/sys/kernel/ns_last_pid);
- image path checks: a relative path, a symlink in bob's home to a binary in alice's home, a
  file that does not exist in alice's home, and a build id: all refused alike for bob, and
  answered for alice;
- a planted r2rmap: bob's map in the shared watch directory must not hide the operator's
  --r2rmap-dir map of the same image, by image or for alice's process (nor may bob's
  /tmp/perfinfo-<pid>.map place images in alice's process);
- "permission denied" vs "not found": bob gets the same answer for alice's indexed dead pid as
  for a pid the daemon never saw, and "permission denied" only for a live process of alice."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import users
from harness import MAPPER, Harness, check, hexaddr, wait_until

h = Harness(__doc__)
S = {}
SIG = "00112233445566778899AABBCCDDEEFF"

# Sends one request line on the daemon's socket and prints the response line (run as a user:
# the client itself turns relative paths into absolute ones, an attacker need not).
RAW = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
buf = b""
while not buf.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
print(buf.decode().strip())
"""


SECRET_C = r"""
#include <stdio.h>
__attribute__((noinline)) int alice_secret_function(int x) { return x * 7 + 3; }
int main(int argc, char** argv) { printf("%d\n", alice_secret_function(argc)); return 0; }
"""


def r2rmap(records):
    lines = [f"FFFFFFFF 00 {SIG}", "FFFFFFFE 00 1", "FFFFFFFD 00 2", "FFFFFFFC 00 3",
             "FFFFFFFB 00 1"]
    lines += [f"{rva:08X} {length:02X} {name}" for rva, length, name in records]
    return "".join(l + "\n" for l in lines).encode()


def client(user, *args, input=None):
    return users.client(user, S["client"], h.socket_path, *args, input=input)


def raw(user, request):
    res = users.run(user, [sys.executable, "-c", RAW, h.socket_path, json.dumps(request)])
    check(res.returncode == 0, f"raw request as {user}: {res.stderr}")
    return json.loads(res.stdout)


def json_lines(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def lookup_json(user, *args):
    res = client(user, "lookup", "--json", *args)
    # 3 and 4 (the process unknown, or denied) answer every address too.
    return res, json_lines(res.stdout) if res.returncode in (0, 3, 4) else []


def without_numbers(text, *numbers):
    for n in numbers:
        text = text.replace(str(n), "N")
    return text


def unused_pid():
    """A pid no process has and the daemon never indexed."""
    known = {p["pid"] for p in json_lines(h.client("processes", "--json").stdout)}
    for pid in range(30000, 300, -7):
        if pid not in known and not os.path.exists(f"/proc/{pid}"):
            return pid
    raise AssertionError("no unused pid")


def spawn_at_pid(user, pid, args):
    """Starts `args` as `user` with exactly `pid` (free by now): the next pid is set through
    /proc/sys/kernel/ns_last_pid, retried if another process took it first."""
    for _ in range(200):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError:
            break
        proc = users.spawn(user, args)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    # Without ns_last_pid: start processes until the pid before it comes around.
    for _ in range(200000):
        proc = subprocess.Popen(["true"])
        proc.wait()
        if proc.pid == pid - 1:
            p = users.spawn(user, args)
            if p.pid == pid:
                return p
            p.kill()
            p.wait()
    raise AssertionError(f"could not get pid {pid}")


def bob_is_told_nothing(pid, when, lookup_ref=None):
    """Bob is told about alice's exited process exactly what he is told about a pid the daemon
    never saw: by perfmap, the symbols op and lookup. `lookup_ref`: while bob's own process
    holds the pid, lookups (whose reasons tell a running process from an unknown one) compare
    with another live process of bob's the daemon never indexed."""
    other = unused_pid()
    res = client(users.BOB, "perfmap", "--pid", pid, "-o", "-")
    ref = client(users.BOB, "perfmap", "--pid", other, "-o", "-")
    check("alice_secret_jit" not in res.stdout, f"{when}: bob listed alice's symbols")
    check(res.returncode == ref.returncode == 1 and "not_found" in res.stderr,
          f"{when}: bob's perfmap: {res.returncode} {res.stderr!r}")
    check(without_numbers(res.stderr, pid) == without_numbers(ref.stderr, other),
          f"{when}: indexed {res.stderr!r} vs never seen {ref.stderr!r}")
    a, b = raw(users.BOB, {"op": "symbols", "pid": pid}), raw(users.BOB,
                                                               {"op": "symbols", "pid": other})
    check(not a.get("ok") and a["error"]["code"] == b["error"]["code"] == "not_found",
          f"{when}: symbols op: {a} vs {b}")
    check(without_numbers(a["error"]["message"], pid) ==
          without_numbers(b["error"]["message"], other), f"{when}: {a} vs {b}")
    _, docs = lookup_json(users.BOB, "--pid", pid, hexaddr(0x4000_0010))
    ref = lookup_ref or other
    _, ref_docs = lookup_json(users.BOB, "--pid", ref, hexaddr(0x4000_0010))
    check(docs and not docs[0]["found"] and "error" not in docs[0],
          f"{when}: bob's lookup: {docs}")
    check(ref_docs and json.loads(without_numbers(json.dumps(docs[0]), pid)) ==
          json.loads(without_numbers(json.dumps(ref_docs[0]), ref)),
          f"{when}: {docs} vs {ref_docs}")


def alive_in_daemon(pid):
    procs = [p for p in json_lines(h.client("processes", "--json").stdout) if p["pid"] == pid]
    return procs and procs[-1]["alive"]


@h.setup
def start():
    alice, bob = users.ensure_both()
    S["alice"], S["bob"] = alice, bob
    S["client"] = users.share_like_tmp(h)
    # The operator's map directory (root's) and a readable place for an image file.
    S["opdir"] = os.path.join(h.root, "r2r")
    S["app"] = os.path.join(h.root, "app")
    os.mkdir(S["opdir"])
    os.mkdir(S["app"])
    h.write_file(os.path.join(S["opdir"], "Corp.ni.r2rmap"),
                 r2rmap([(0x1000, 0x40, "Corp.Real::Run()")]))
    dll = os.path.join(S["app"], "Corp.dll")
    with open(dll, "wb") as f:
        f.write(b"MZ" + b"\0" * (0x10000 - 2))
    os.chmod(dll, 0o644)
    S["dll"] = dll
    # A binary inside alice's private home, with symbols and DWARF.
    check(shutil.which("gcc"), "gcc is needed")
    secret_dir = os.path.join(alice.pw_dir, "secret")
    os.makedirs(secret_dir, exist_ok=True)
    src = os.path.join(h.root, "secret.c")
    with open(src, "w") as f:
        f.write(SECRET_C)
    prog = os.path.join(secret_dir, "prog")
    subprocess.run(["gcc", "-O1", "-g", "-Wl,--build-id", "-o", prog, src], check=True,
                   timeout=120)
    for p in (secret_dir, prog):
        os.chown(p, alice.pw_uid, alice.pw_gid)
    os.chmod(secret_dir, 0o755)  # only the home (0700) keeps bob out
    os.chmod(prog, 0o755)
    S["prog"] = prog
    nm = subprocess.run(["nm", prog], capture_output=True, text=True, check=True).stdout
    S["func"] = int(next(l.split()[0] for l in nm.splitlines()
                         if l.endswith(" alice_secret_function")), 16)
    notes = subprocess.run(["readelf", "-n", prog], capture_output=True, text=True).stdout
    S["build_id"] = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    # bob's symlink to it, in bob's own home.
    link = os.path.join(bob.pw_dir, "link")
    if os.path.lexists(link):
        os.unlink(link)
    users.run(users.BOB, ["ln", "-s", prog, link])
    S["link"] = link
    # The daemon's working directory is / as under systemd: a relative path would name files
    # there.
    os.chdir("/")
    h.start_daemon(["--r2rmap-dir", S["opdir"]])


@h.case
def symbols_of_alices_exited_process_stay_hers_when_bob_holds_the_pid():
    proc = users.spawn(users.ALICE, ["sleep", "600"])
    pid = proc.pid
    wait_until(lambda: os.stat(f"/proc/{pid}").st_uid == S["alice"].pw_uid, 5, "alice's sleeper")
    users.write(users.ALICE, os.path.join(h.watch_dir, f"perf-{pid}.map"),
                "40000000 100 alice_secret_jit\n")
    h.wait_resolves(pid, 0x4000_0010, "alice_secret_jit")
    proc.kill()
    proc.wait()
    wait_until(lambda: not alive_in_daemon(pid), 10, "the daemon to see alice's process exit")
    holder = spawn_at_pid(users.BOB, pid, ["sleep", "600"])
    try:
        wait_until(lambda: os.stat(f"/proc/{pid}").st_uid == S["bob"].pw_uid, 5, "bob's holder")
        # The pid is bob's process now, the symbols alice's incarnation's.
        res = client(users.BOB, "perfmap", "--pid", pid, "-o", "-")
        check("alice_secret_jit" not in res.stdout and res.returncode != 0,
              f"bob holding the pid listed alice's symbols: {res.returncode} {res.stdout!r}")
        sym = raw(users.BOB, {"op": "symbols", "pid": pid})
        check(not sym.get("ok") and "alice_secret_jit" not in json.dumps(sym),
              f"bob holding the pid, symbols op: {sym}")
        other = users.spawn(users.BOB, ["sleep", "600"])
        try:
            wait_until(lambda: os.stat(f"/proc/{other.pid}").st_uid == S["bob"].pw_uid, 5,
                       "bob's other sleeper")
            bob_is_told_nothing(pid, "while bob holds the pid", lookup_ref=other.pid)
        finally:
            other.kill()
            other.wait()
        # Alice still lists her own exited process's symbols (not refused for bob's process).
        res = client(users.ALICE, "perfmap", "--pid", pid, "-o", "-")
        check(res.returncode == 0 and "alice_secret_jit" in res.stdout,
              f"alice's own exited process: {res.returncode} {res.stderr!r}")
        res = h.client("perfmap", "--pid", pid, "-o", "-")
        check(res.returncode == 0 and "alice_secret_jit" in res.stdout, f"root: {res.stderr!r}")
    finally:
        holder.kill()
        holder.wait()


@h.case
def image_paths_bob_may_not_read_are_refused_alike():
    func = hexaddr(S["func"])
    # Alice may: by her path and by build id.
    res, docs = lookup_json(users.ALICE, "--image", S["prog"], func)
    check(res.returncode == 0 and docs and docs[0].get("name") == "alice_secret_function",
          f"alice by path: {res.returncode} {res.stderr!r} {docs}")
    res, docs = lookup_json(users.ALICE, "--build-id", S["build_id"], func)
    check(res.returncode == 0 and docs and docs[0].get("name") == "alice_secret_function",
          f"alice by build id: {res.returncode} {res.stderr!r} {docs}")
    # Bob: through a symlink in his own home, by the real path, and a file that does not exist
    # in alice's home: the same refusal, naming no path.
    answers = []
    for path in (S["link"], S["prog"], os.path.join(S["alice"].pw_dir, "no-such-file")):
        res, docs = lookup_json(users.BOB, "--image", path, func)
        check("alice_secret_function" not in res.stdout, f"bob read {path}: {res.stdout!r}")
        check(res.returncode == 1 and "permission_denied" in res.stderr,
              f"bob, {path}: {res.returncode} {res.stderr!r}")
        check(S["alice"].pw_dir not in res.stderr and "secret" not in res.stderr,
              f"bob, {path}: the error names a private path: {res.stderr!r}")
        answers.append(res.stderr.replace(path, "P"))
    check(len(set(answers)) == 1, f"bob can tell the cases apart: {answers}")
    # A relative path would be resolved against the daemon's working directory.
    rel = os.path.relpath(S["prog"], "/")
    for image in (rel, "dev/null", "root/.bashrc"):
        r = raw(users.BOB, {"op": "lookup", "image": image, "addrs": [func]})
        check(not r.get("ok") and r["error"]["code"] == "bad_request",
              f"relative image {image!r}: {r}")
    # By build id: the same answer as for a build id no file has, naming no path.
    res, docs = lookup_json(users.BOB, "--build-id", S["build_id"], func)
    ref, _ = lookup_json(users.BOB, "--build-id", "ab" * 20, func)
    check("alice_secret_function" not in res.stdout, f"bob by build id: {res.stdout!r}")
    check(res.returncode == ref.returncode == 1 and "not_found" in res.stderr,
          f"bob by build id: {res.returncode} {res.stderr!r}")
    check(without_numbers(res.stderr, S["build_id"]) == without_numbers(ref.stderr, "ab" * 20),
          f"build id known vs unknown: {res.stderr!r} vs {ref.stderr!r}")
    check("/" not in res.stderr.split("not_found", 1)[-1], f"a path in {res.stderr!r}")


@h.case
def a_planted_r2rmap_does_not_hide_the_operators():
    planted = os.path.join(h.watch_dir, "Corp.ni.r2rmap")
    users.write(users.BOB, planted, r2rmap([(0x1000, 0x40, "Corp.Planted::Steal()")]))
    wait_until(lambda: any(planted in l and "following" in l for l in h.daemon.log_lines()), 5,
               "the daemon to index bob's map")
    time.sleep(0.2)
    for user in (None, users.ALICE, users.BOB):
        if user is None:
            res = h.client("lookup", "--json", "--image", "Corp", "0x1010")
        else:
            res = client(user, "lookup", "--json", "--image", "Corp", "0x1010")
        docs = json_lines(res.stdout)
        check(docs and docs[0].get("name") == "Corp.Real::Run()",
              f"{user or 'root'} by image: {res.returncode} {res.stderr!r} {docs}")
    # Alice's process maps Corp.dll: its addresses are answered from the operator's map.
    proc = users.spawn(users.ALICE, [sys.executable, "-c", MAPPER, S["dll"]],
                       stdout=subprocess.PIPE, text=True)
    perfinfo = f"/tmp/perfinfo-{proc.pid}.map"
    try:
        base = int(proc.stdout.readline())
        # Bob also plants a perfinfo file placing Corp.dll where alice's process has no image.
        fake = 0x7f00_0000_0000
        users.write(users.BOB, perfinfo, f"ImageLoad;/x/Corp.dll;{{{SIG}}};{hexaddr(fake)};\n")
        _, docs = lookup_json(users.ALICE, "--pid", proc.pid, hexaddr(base + 0x1010),
                              hexaddr(fake + 0x1010))
        check(docs and docs[0].get("name") == "Corp.Real::Run()", f"alice's process: {docs}")
        check(not docs[1]["found"], f"bob's perfinfo placed an image in alice's process: {docs}")
        res = client(users.ALICE, "perfmap", "--pid", proc.pid, "-o", "-")
        check(res.returncode == 0 and "Corp.Real::Run()" in res.stdout
              and "Planted" not in res.stdout, f"alice's perfmap: {res.stderr!r} {res.stdout!r}")
    finally:
        proc.kill()
        proc.wait()
        if os.path.exists(perfinfo):
            os.unlink(perfinfo)


@h.case
def denied_only_for_live_processes_of_others():
    proc = users.spawn(users.ALICE, ["sleep", "600"])
    pid = proc.pid
    try:
        wait_until(lambda: os.stat(f"/proc/{pid}").st_uid == S["alice"].pw_uid, 5, "sleeper")
        # Live and alice's, indexed or not: visible in /proc, so "permission denied".
        _, docs = lookup_json(users.BOB, "--pid", pid, hexaddr(0x5000_0010))
        check(docs and docs[0].get("error") == "permission denied", f"unindexed live: {docs}")
        users.write(users.ALICE, os.path.join(h.watch_dir, f"perf-{pid}.map"),
                    "50000000 100 alice_other_jit\n")
        h.wait_resolves(pid, 0x5000_0010, "alice_other_jit")
        _, docs = lookup_json(users.BOB, "--pid", pid, hexaddr(0x5000_0010),
                              hexaddr(0x6000_0000))
        check(len(docs) == 2 and all(d.get("error") == "permission denied" for d in docs),
              f"indexed live, inside and outside its ranges: {docs}")
    finally:
        proc.kill()
        proc.wait()
    wait_until(lambda: not alive_in_daemon(pid), 10, "the exit")
    bob_is_told_nothing(pid, "after the exit")
    # Dead: the same as a pid never seen, and `stats` counts no denial for it.
    other = unused_pid()
    before = json.loads(h.client("stats", "--json").stdout)["denied"]
    _, docs = lookup_json(users.BOB, "--pid", pid, hexaddr(0x5000_0010))
    _, ref = lookup_json(users.BOB, "--pid", other, hexaddr(0x5000_0010))
    check(docs == ref and not docs[0]["found"] and "error" not in docs[0],
          f"indexed dead {docs} vs never seen {ref}")
    after = json.loads(h.client("stats", "--json").stdout)["denied"]
    check(after == before, f"stats.denied moved from {before} to {after}")


h.main()
