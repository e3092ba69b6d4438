#!/usr/bin/env python3
"""A FUSE server that never answers root, replayed with two real users (users.py).

jsbob mounts, with allow_other (`user_allow_other` in /etc/fuse.conf, set for the test and put
back after), a FUSE filesystem built here against Debian's libfuse3 (fuse/silent_to_root.c):
it answers his own requests and reads, but never answers, those of uid 0. A process of his
(fuse/jit_mapper.c) runs from that mount and maps a jit-<pid>.dump from it, as every jitdump
writer maps its file. The daemon's discovery finds that mapping and looks the file up as root;
before, that thread waited in the kernel for good: nothing was indexed any more, for anyone,
query threads that touched the mount hung the same way, and the daemon could never exit.

  - meanwhile jsalice's new perf map (of a live process of hers) is answerable within 2 s, and
    the daemon says why bob's file is not followed, naming it and the filesystem;
  - a jitdump on alice's FUSE mount whose server answers everyone is followed (read through
    worker processes) and answered;
  - native lookups of bob's process, whose executable lies on the mount, answer with a reason
    (image_unreadable), and alice's lookups are not stalled meanwhile; so does a lookup of an
    image path on the mount, and one naming bob's own descriptor of a file on it (the daemon
    reaches it through /proc with O_PATH, which asks the server nothing, and never holds it
    open: closing such a descriptor would ask the server, as root, and wait for good);
  - the daemon exits on SIGTERM at once, the request it gave up on still unanswered.

Lines starting with FIGURE are the measurements docs/robustness.md gives.
"""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

import users
from harness import Failure, Harness, check, hexaddr, read_line, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
FUSE_CONF = "/etc/fuse.conf"
ALICE_ADDR = 0x7F00_0000_1000

if not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
    print("SKIP: no /dev/fuse or no fusermount3 (Debian's fuse3)")
    sys.exit(77)

h = Harness(__doc__)
S = {}


def json_lines(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def warned(*parts):
    return [l for l in h.daemon.log_lines() if all(str(p) in l for p in parts)]


def compile_c(name, libs=()):
    out = os.path.join(h.root, name)
    subprocess.run(["gcc", "-O1", "-Wall", "-o", out, os.path.join(HERE, "fuse", name + ".c")]
                   + list(libs), check=True, capture_output=True, timeout=120)
    os.chmod(out, 0o755)
    return out


def allow_other():
    """user_allow_other in /etc/fuse.conf (Debian ships it commented out), and /dev/fuse open to
    users as Debian's udev rule makes it; both put back by put_back()."""
    S["fuse_conf"] = open(FUSE_CONF).read() if os.path.exists(FUSE_CONF) else None
    with open(FUSE_CONF, "w") as f:
        f.write((S["fuse_conf"] or "") + "\nuser_allow_other\n")
    S["dev_fuse_mode"] = stat.S_IMODE(os.stat("/dev/fuse").st_mode)
    os.chmod("/dev/fuse", 0o666)


def put_back():
    """Ends the users' processes and mounts, and puts the FUSE settings back, whatever happened."""
    for key in ("mapper", "server", "alice_mapper", "alice_server"):
        proc = S.get(key)
        if proc is not None and proc.poll() is None:
            proc.kill()  # the server's end: the kernel fails its pending requests
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
    for key in ("mnt", "alice_mnt"):
        if key in S:
            subprocess.run(["fusermount3", "-u", "-z", S[key]], capture_output=True, timeout=30)
    if "fuse_conf" in S:
        if S["fuse_conf"] is None:
            os.unlink(FUSE_CONF)
        else:
            with open(FUSE_CONF, "w") as f:
                f.write(S["fuse_conf"])
    if "dev_fuse_mode" in S:
        os.chmod("/dev/fuse", S["dev_fuse_mode"])


def sleeper_as(user):
    pid = h.sleeper(wrap=lambda argv: users.argv(user, argv), env=users.env(user))
    uid = users.ensure(user).pw_uid
    wait_until(lambda: os.stat(f"/proc/{pid}").st_uid == uid, 5, f"{user}'s sleeper")
    return pid


def lookup_as(user, pid, addr, timeout=60):
    res = users.client(user, S["client"], h.socket_path, "--timeout", "30", "lookup", "--pid", pid,
                       "--json", hexaddr(addr), timeout=timeout)
    docs = json_lines(res.stdout)
    return docs[0] if docs else {"stderr": res.stderr, "rc": res.returncode}


def stop_daemon():
    """SIGTERM, then at most 10 s: a daemon with a thread waiting for bob's server would never
    exit; then bob's server is ended (which lets that thread go) and the case fails."""
    proc = h.daemon.proc
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        put_back()
        proc.kill()
        proc.wait(60)
        h.daemon.stop()
        raise Failure("jitsymd did not exit within 10 s of SIGTERM: a thread of it waits for "
                      "bob's FUSE server")
    took = time.monotonic() - t0
    h.daemon.stop()
    return took, proc.returncode


def alice_answered():
    a = lookup_as(users.ALICE, S["alice_pid"], ALICE_ADDR + 0x10)
    return a if a.get("found") and a.get("name") == "alices_function" else None


@h.setup
def mount_and_start():
    users.ensure_both()
    S["client"] = users.share_like_tmp(h)
    fuse = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True,
                          text=True, check=True).stdout.split()
    server_bin = compile_c("silent_to_root", fuse)
    mapper_bin = compile_c("jit_mapper")
    allow_other()
    # Each user's directories: the one the server serves (back) and the mount point (mnt).
    # Bob's server never answers root; alice's answers everyone.
    for user, prefix, extra in ((users.BOB, "", []), (users.ALICE, "alice_", ["--answer-root"])):
        entry = users.ensure(user)
        base = os.path.join(h.root, user)
        os.mkdir(base)
        os.chown(base, entry.pw_uid, entry.pw_gid)
        back, mnt = os.path.join(base, "back"), os.path.join(base, "mnt")
        S[prefix + "back"], S[prefix + "mnt"] = back, mnt
        users.run(user, ["mkdir", back, mnt], check=True)
        users.run(user, ["cp", mapper_bin, os.path.join(back, "jit_mapper")], check=True)
        server = h.spawn(users.argv(user, [server_bin, back, mnt] + extra), env=users.env(user),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=open(os.path.join(h.root, f"{user}-fuse.log"), "wb"))
        S[prefix + "server"] = server
        check(read_line(server, 20, f"{user}'s FUSE server").strip() == "mounted",
              f"{user}'s FUSE server did not mount")
    # Discovery on (every 200 ms): it finds the jitdump bob's process maps from the mount.
    h.start_daemon(["--discovery-interval", "200ms"])


@h.case
def alices_new_perf_map_is_answered_within_2s_while_bobs_server_hangs():
    mnt = S["mnt"]
    S["alice_pid"] = sleeper_as(users.ALICE)
    S["mapper"] = h.spawn(users.argv(users.BOB, [os.path.join(mnt, "jit_mapper"), S["back"], mnt]),
                          env=users.env(users.BOB), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE)
    pid, addr = read_line(S["mapper"], 20, "bob's jit_mapper").split()
    S["bob_pid"], S["bob_addr"] = int(pid), int(addr, 16)
    S["bob_dump"] = os.path.join(mnt, f"jit-{pid}.dump")
    # Discovery reads bob's maps within its interval and asks for his file (before: its thread
    # then waits for good; now: for its timeout, 1 s). Alice writes her map meanwhile.
    time.sleep(0.3)
    perf_map = os.path.join(h.watch_dir, f"perf-{S['alice_pid']}.map")
    t0 = time.monotonic()
    users.write(users.ALICE, perf_map, f"{ALICE_ADDR:x} 100 alices_function\n")
    answered = None
    while time.monotonic() - t0 < 10 and not answered:
        answered = alice_answered()
        if not answered:
            time.sleep(0.05)
    took = time.monotonic() - t0
    print(f"FIGURE alice's new perf map answerable after {took:.2f} s with bob's FUSE server "
          "hung", flush=True)
    check(answered, f"alice's perf map was not answered within {took:.1f} s: the ingest thread "
          "waits for bob's FUSE server")
    check(took < 2.0, f"alice's perf map took {took:.2f} s to be answered (at most 2 s)")


@h.case
def the_daemon_says_why_bobs_file_is_not_followed():
    lines = wait_until(lambda: warned(S["bob_dump"], "fuse.silent_to_root", "did not answer"), 5,
                       "a log line naming bob's file and his filesystem")
    check("not followed now" in lines[0], f"the line does not say what became of it: {lines[0]}")
    # Said once; bob's mount is not asked again for a while (refusals cost nothing).
    time.sleep(1)
    check(len(warned(S["bob_dump"], "not followed now")) == 1,
          f"said more than once: {warned(S['bob_dump'])}")
    check(not warned("following", S["bob_dump"]), "bob's file was followed")


@h.case
def a_jitdump_on_a_fuse_mount_that_answers_is_followed_through_workers():
    mnt, back = S["alice_mnt"], S["alice_back"]
    S["alice_mapper"] = h.spawn(
        users.argv(users.ALICE, [os.path.join(mnt, "jit_mapper"), back, mnt, "alice_on_fuse",
                                 "0x5a000000"]),
        env=users.env(users.ALICE), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    pid = int(read_line(S["alice_mapper"], 20, "alice's jit_mapper").split()[0])
    t0 = time.monotonic()

    def answered():
        a = lookup_as(users.ALICE, pid, 0x5A00_0010)
        return a if a.get("found") and a.get("name") == "alice_on_fuse" else None

    wait_until(answered, 10, "alice's jitdump on her FUSE mount to be answered")
    print(f"FIGURE a jitdump on a FUSE mount that answers: answerable {time.monotonic() - t0:.2f} s"
          " after its process started", flush=True)
    check(warned("following", f"jit-{pid}.dump", "read through a worker process"),
          "the daemon does not say it reads alice's file through workers")


@h.case
def native_lookups_of_bobs_process_answer_with_a_reason_and_alice_is_not_stalled():
    # A daemon that has not asked bob's mount anything yet (discovery off): the first native
    # lookup of his process waits for his server, until it gives up.
    check(S["server"].poll() is None, "bob's server is gone")
    stop_daemon()
    h.start_daemon([])
    wait_until(alice_answered, 5, "alice's perf map, read again at the restart")
    # Bob asks as many lookups at once as there are query threads and more: before, each held
    # a query thread for good.
    answers, took = [], []

    def bobs_lookup():
        t0 = time.monotonic()
        answers.append(lookup_as(users.BOB, S["bob_pid"], S["bob_addr"], timeout=40))
        took.append(time.monotonic() - t0)

    bobs = [threading.Thread(target=bobs_lookup) for _ in range(max(4, os.cpu_count() + 1))]
    for t in bobs:
        t.start()
    time.sleep(0.1)
    worst, asked = 0.0, 0
    while any(t.is_alive() for t in bobs) and asked < 100:
        t0 = time.monotonic()
        a = alice_answered()
        worst = max(worst, time.monotonic() - t0)
        asked += 1
        check(a, "alice's lookup was not answered while bob's were")
    for t in bobs:
        t.join(60)
    check(not any(t.is_alive() for t in bobs), "bob's lookups did not end")
    print(f"FIGURE bob's {len(bobs)} native lookups answered within {max(took):.2f} s; alice's "
          f"{asked} lookups meanwhile took at most {worst:.2f} s", flush=True)
    for a in answers:
        check(a.get("found") is False and a.get("reason") == "image_unreadable",
              f"bob's lookup: {a}")
        check("fuse.silent_to_root" in a.get("detail", ""), f"the detail names no filesystem: {a}")
    check(max(took) < 5, f"bob's lookups took up to {max(took):.2f} s")
    check(worst < 0.5, f"alice's lookups took up to {worst:.2f} s while bob's were answered")
    # Asked again: his mount is not asked for a while, the answer comes at once.
    t0 = time.monotonic()
    a = lookup_as(users.BOB, S["bob_pid"], S["bob_addr"])
    again = time.monotonic() - t0
    check(a.get("reason") == "image_unreadable" and "did not answer before" in a.get("detail", ""),
          f"bob's lookup asked again: {a}")
    check(again < 1.0, f"bob's lookup asked again took {again:.2f} s")


@h.case
def an_image_path_through_bobs_mount_is_answered_with_a_reason():
    # The client names a path on the mount (--image): the daemon walks it as the client would,
    # and that walk reaches bob's server too.
    t0 = time.monotonic()
    res = users.client(users.BOB, S["client"], h.socket_path, "--timeout", "30", "lookup",
                       "--image", os.path.join(S["mnt"], "jit_mapper"), "0x1000", timeout=60)
    took = time.monotonic() - t0
    check(res.returncode != 0 and "fuse.silent_to_root" in res.stderr and "timeout" in res.stderr,
          f"bob's --image lookup: status {res.returncode}, {res.stderr.strip()!r}")
    check(took < 2, f"bob's --image lookup took {took:.2f} s")
    check(alice_answered(), "alice's lookup was not answered after bob's")


# bob opens a file of his mount himself (his server answers him) and names the descriptor in
# lookups ("image_fd"), as `jitsym lookup --image` does, keeping it open until answered.
RAW_FD = r"""
import json, os, socket, sys
fd = os.open(sys.argv[2], os.O_RDONLY)
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
req = json.dumps({"op": "lookup", "image": sys.argv[2], "image_fd": fd, "addrs": ["0x1000"]})
s.sendall(((req + "\n") * int(sys.argv[3])).encode())
buf = b""
while buf.count(b"\n") < int(sys.argv[3]):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
print(buf.decode().strip())
"""


@h.case
def a_descriptor_of_a_file_on_bobs_mount_is_answered_and_never_held():
    path = os.path.join(S["mnt"], "jit_mapper")
    for _ in range(3):
        t0 = time.monotonic()
        res = users.run(users.BOB, [sys.executable, "-c", RAW_FD, h.socket_path, path, "4"],
                        timeout=60)
        took = time.monotonic() - t0
        check(res.returncode == 0, f"bob's raw lookups: {res.returncode} {res.stderr[-300:]}")
        answers = json_lines(res.stdout)
        check(len(answers) == 4, f"bob's lookups with descriptors: {res.stdout[-500:]!r}")
        # Not read: the daemon's reads of it go to workers, which his server never answers;
        # and said so, naming the mount.
        check(all(not a.get("ok") and a["error"]["code"] == "timeout" and
                  "fuse.silent_to_root" in a["error"]["message"] for a in answers),
              f"bob's lookups with descriptors: {answers}")
        check(took < 10, f"bob's lookups with descriptors took {took:.2f} s")
    print(f"  bob's descriptors: {answers[0]}"[:300])
    check(alice_answered(), "alice's lookup was not answered after bob's descriptors")
    check(h.daemon.alive(), f"the daemon died: {h.log_tail()}")


@h.case
def the_daemon_exits_at_once_while_bobs_server_still_hangs():
    check(S["server"].poll() is None, "bob's server is gone: the case would prove nothing")
    took, status = stop_daemon()
    print(f"FIGURE jitsymd exited {took:.2f} s after SIGTERM (status {status}) with bob's FUSE "
          "server still hung", flush=True)
    check(status == 0, f"jitsymd exited with status {status}")
    check(took < 3, f"jitsymd took {took:.2f} s to exit")
    check(S["server"].poll() is None, "bob's server is gone")
    h.daemon = None  # stopped on purpose: the harness is not to stop it again


try:
    h.main()
finally:
    put_back()
