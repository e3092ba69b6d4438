#!/usr/bin/env python3
"""`--image` files are opened by the client, with its user's rights, and read by the daemon
through the client's own descriptor ("image_fd": /proc/<client>/fd/N), never by the path the
client names. Two real users, jsalice and jsbob, each with raw clients of their own:

- alice's client opens her library, then another library is renamed over its path: the answer
  is the opened file's (by path, the other one's), and `jitsym lookup --image` sends the
  descriptor (the daemon opens the /proc link, not the path: strace);
- bob holds alice's 0600 library only as O_PATH (its directory is searchable): refused, and so
  is a write-only descriptor of his own file; a descriptor his process does not hold is a bad
  request; a path naming alice's file beside his own descriptor answers from his file only,
  and without a descriptor her path is refused as before;
- a daemon that may not look at the client's descriptors (alice's own, unprivileged, asked by
  root) checks the path instead, as before descriptors.

Against the daemon before descriptors, the path was walked as the client and opened again
by the daemon: the renamed file answered, whatever the client had opened."""

import json
import os
import shutil
import subprocess
import sys
import time

import elf_craft
import users
from harness import Harness, check, hexaddr

h = Harness(__doc__)
S = {}

# A raw client: opens argv[2] (flags argv[3]), optionally renames argv[4] over it, then sends a
# lookup of argv[5] with "image_fd" (argv[6]: a descriptor number to name instead) and prints
# the answer line. argv[7], when given, is the "image" to name instead of argv[2].
RAW = r"""
import json, os, socket, sys
path, flags = sys.argv[2], sys.argv[3]
fd = os.open(path, {"r": os.O_RDONLY, "path": os.O_PATH, "w": os.O_WRONLY}[flags])
if sys.argv[4] != "-":
    os.rename(sys.argv[4], path)
name = sys.argv[7] if len(sys.argv) > 7 else path
req = {"op": "lookup", "image": name, "addrs": [sys.argv[5]]}
if sys.argv[6] != "none":
    req["image_fd"] = fd if sys.argv[6] == "mine" else int(sys.argv[6])
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall((json.dumps(req) + "\n").encode())
buf = b""
while not buf.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
print(buf.decode().strip())
"""


def raw(user, path, flags, addr, fd="mine", rename="-", name=None):
    args = [sys.executable, "-c", RAW, h.socket_path, path, flags, rename, hexaddr(addr), fd]
    if name:
        args.append(name)
    res = users.run(user, args, timeout=60)
    check(res.returncode == 0, f"{user}'s raw client: {res.returncode} {res.stderr[-400:]}")
    check(h.daemon.alive(), f"the daemon died: {h.log_tail()}")
    return json.loads(res.stdout.splitlines()[-1])


def first(answer):
    check(answer.get("ok"), f"not answered: {answer}")
    return answer["results"][0]


def library(user, directory, name, functions, mode=0o644):
    entry = users.ensure(user)
    path = os.path.join(directory, name)
    addrs = elf_craft.library(path, functions)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    os.chmod(path, mode)
    return path, addrs


@h.setup
def setup():
    S["alice"], S["bob"] = users.ensure_both()
    S["client"] = users.share_like_tmp(h)
    h.start_daemon()
    # alice's directory: searchable by everyone, her files in it hers.
    d = os.path.join(h.root, "alice")
    os.mkdir(d)
    os.chown(d, S["alice"].pw_uid, S["alice"].pw_gid)
    os.chmod(d, 0o755)
    S["alice_dir"] = d
    S["one"], S["one_addrs"] = library(users.ALICE, d, "libone.so",
                                       [f"alice_one_{i}" for i in range(6)])
    S["two"], S["two_addrs"] = library(users.ALICE, d, "libtwo.so",
                                       [f"alice_two_{i}" for i in range(6)])
    S["secret"], S["secret_addrs"] = library(users.ALICE, d, "libsecret.so",
                                             [f"alice_secret_{i}" for i in range(6)], 0o600)
    b = os.path.join(h.root, "bob")
    os.mkdir(b)
    os.chown(b, S["bob"].pw_uid, S["bob"].pw_gid)
    os.chmod(b, 0o755)
    S["bob_lib"], S["bob_addrs"] = library(users.BOB, b, "libbob.so",
                                           [f"bob_fn_{i}" for i in range(6)])


@h.case
def the_file_the_client_opened_answers_not_the_path():
    # Both libraries put their functions at the same addresses (elf_craft lays them out alike).
    addr = S["one_addrs"]["alice_one_3"]
    check(S["two_addrs"]["alice_two_3"] == addr, "the two libraries differ in layout")
    got = first(raw(users.ALICE, S["one"], "r", addr, rename=S["two"]))
    check(got.get("name") == "alice_one_3", f"through her descriptor: {got}")
    # The path now names the other file: by path alone, that one answers.
    got = first(raw(users.ALICE, S["one"], "r", addr, fd="none"))
    check(got.get("name") == "alice_two_3", f"by path: {got}")


@h.case
def jitsym_lookup_passes_its_descriptor_and_the_daemon_opens_no_path():
    if shutil.which("strace") is None:
        print("  (no strace: the daemon's opens are not traced)")
        return
    path, addrs = library(users.ALICE, S["alice_dir"], "libtraced.so",
                          [f"alice_traced_{i}" for i in range(4)])
    trace = os.path.join(h.root, "daemon.strace")
    tracer = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o",
                               trace, "-p", str(h.daemon.proc.pid)], stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)  # attached
        res = users.client(users.ALICE, S["client"], h.socket_path, "lookup", "--json",
                           "--image", path, hexaddr(addrs["alice_traced_2"]))
        got = json.loads(res.stdout.splitlines()[0])
        check(got.get("name") == "alice_traced_2", f"alice's lookup: {got} {res.stderr}")
    finally:
        tracer.terminate()
        tracer.wait(10)
    opens = open(trace).read()
    check("libtraced.so" not in opens, f"the daemon opened the path: {opens[-2000:]}")
    check("/fd/" in opens, f"the daemon did not open the client's descriptor: {opens[-2000:]}")


@h.case
def bob_reads_nothing_through_a_descriptor_he_may_not_read_from():
    addr = S["secret_addrs"]["alice_secret_2"]
    # Her file is 0600, its directory searchable: O_PATH is all he can have of it.
    got = raw(users.BOB, S["secret"], "path", addr)
    check(not got.get("ok") and got["error"]["code"] == "permission_denied" and
          "not open for reading" in got["error"]["message"], f"bob's O_PATH descriptor: {got}")
    check("alice_secret" not in json.dumps(got), f"a name of hers: {got}")
    # A write-only descriptor of his own file is no read either.
    got = raw(users.BOB, S["bob_lib"], "w", S["bob_addrs"]["bob_fn_1"])
    check(not got.get("ok") and got["error"]["code"] == "permission_denied", f"write-only: {got}")
    # A number his process does not hold.
    got = raw(users.BOB, S["bob_lib"], "r", S["bob_addrs"]["bob_fn_1"], fd="977")
    check(not got.get("ok") and got["error"]["code"] == "bad_request" and
          "not open in your process" in got["error"]["message"], f"no such descriptor: {got}")
    # His own readable file, named by her path: his file answers, her file is not touched.
    got = first(raw(users.BOB, S["bob_lib"], "r", S["bob_addrs"]["bob_fn_4"], name=S["secret"]))
    check(got.get("name") == "bob_fn_4", f"his descriptor under her name: {got}")


@h.case
def the_path_is_refused_as_before_without_a_descriptor():
    got = raw(users.BOB, S["bob_lib"], "r", S["secret_addrs"]["alice_secret_2"], fd="none",
              name=S["secret"])
    check(not got.get("ok") and got["error"]["code"] == "permission_denied",
          f"bob naming her file by path: {got}")


@h.case
def a_daemon_that_may_not_look_at_the_clients_descriptors_checks_the_path():
    # alice's own daemon (no privileges) cannot read root's /proc/PID/fdinfo: root's client
    # still gets its answer, the path checked as without a descriptor.
    d = os.path.join(h.root, "alices-daemon")
    os.mkdir(d)
    os.chown(d, S["alice"].pw_uid, S["alice"].pw_gid)
    sock = os.path.join(d, "j.sock")
    daemon = h.spawn(users.argv(users.ALICE, [h.jitsymd, "--watch", d, "--socket", sock,
                                              "--log-level", "warning"]),
                     env=users.env(users.ALICE), stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not os.path.exists(sock) and time.monotonic() < deadline and daemon.poll() is None:
        time.sleep(0.05)
    check(os.path.exists(sock), "alice's daemon did not start")
    res = subprocess.run([h.jitsym, "--socket", sock, "lookup", "--json", "--image", S["bob_lib"],
                          hexaddr(S["bob_addrs"]["bob_fn_5"])], capture_output=True, text=True,
                         timeout=60)
    daemon.terminate()
    daemon.wait(10)
    check(res.returncode == 0 and json.loads(res.stdout.splitlines()[0]).get("name") ==
          "bob_fn_5", f"root's lookup through alice's daemon: {res.returncode} {res.stdout} "
          f"{res.stderr}")


h.main()
