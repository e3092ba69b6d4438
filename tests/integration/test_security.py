#!/usr/bin/env python3
"""Who may ask and which files are believed, with real users: the tests run as root and act as
`nobody` through setpriv. A second user plants a jitdump for root's process (ignored, logged with
both owners); a symlink named jit-<pid>.dump (not followed); a non-owner queries root's process
(per-address "permission denied", not listed by `processes`); a member of --trusted-group may;
an image whose map the client cannot read is refused; a file for a pid that does not exist yet
waits, is followed once that pid appears with the file's owner, and is dropped after the timeout;
per-user file and per-file byte limits are enforced and counted in `stats`; after a restart, the
files of another user's exited process are kept as that user's."""

import json
import os
import pwd
import shutil
import subprocess
import sys
import time

import jitdump
from harness import Failure, Harness, check, hexaddr, wait_until

h = Harness(__doc__)
NOBODY = pwd.getpwnam("nobody")
PENDING_MS = 1500
USER_FILES = 12
FILE_BYTES = 64 << 20
S = {}


def as_nobody(args, groups=None, **kwargs):
    """argv running `args` as nobody (uid, gid and supplementary groups all nobody's, or the
    given groups)."""
    g = ["--groups=" + ",".join(groups)] if groups else ["--clear-groups"]
    return ["setpriv", f"--reuid={NOBODY.pw_uid}", f"--regid={NOBODY.pw_gid}"] + g + args


def write_as_nobody(path, data):
    """nobody writes the file itself (it owns it, as it would in /tmp)."""
    subprocess.run(as_nobody(["sh", "-c", 'cat > "$1"', "_", path]), input=data, check=True,
                   timeout=30)


def client_as_nobody(*args, groups=None):
    cmd = as_nobody([S["client"], "--socket", h.socket_path] + [str(a) for a in args], groups)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def json_lines(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def stats():
    res = h.client("stats", "--json")
    check(res.returncode == 0, f"stats: {res.stderr}")
    return json.loads(res.stdout)


def sleeper_as_nobody():
    return h.sleeper(wrap=as_nobody)


def jitdump_bytes(pid, addr, name, n=1):
    w = jitdump.Writer(pid)
    base = time.monotonic_ns()
    return w.header(base) + b"".join(
        w.load(base + 10 + i, addr + 0x100 * i, 0x80, f"{name}{i}" if n > 1 else name, i + 1)
        for i in range(n))


def warned(*parts):
    return [l for l in h.daemon.log_lines() if all(p in l for p in parts)]


@h.setup
def start_daemon():
    # Like /tmp: the watch directory is writable by everyone, the socket reachable by everyone.
    os.chmod(h.root, 0o755)
    os.chmod(h.watch_dir, 0o1777)
    S["client"] = os.path.join(h.root, "jitsym")
    shutil.copy(h.jitsym, S["client"])
    os.chmod(S["client"], 0o755)
    S["daemon_args"] = ["--trusted-group", "adm", "--pending-timeout", f"{PENDING_MS}ms",
                        "--limit-user-files", str(USER_FILES), "--limit-file-bytes",
                        str(FILE_BYTES)]
    h.start_daemon(S["daemon_args"])
    # Root's process with root's jitdump: the reference.
    S["root_pid"] = h.sleeper()
    h.write_file(h.dump_path(S["root_pid"]), jitdump_bytes(S["root_pid"], 0x4000_0000, "root_fn"))
    h.wait_resolves(S["root_pid"], 0x4000_0000, "root_fn")
    # nobody's process with nobody's jitdump.
    S["nobody_pid"] = sleeper_as_nobody()
    wait_until(lambda: os.stat(f"/proc/{S['nobody_pid']}").st_uid == NOBODY.pw_uid, 5,
               "the sleeper to run as nobody")
    write_as_nobody(h.dump_path(S["nobody_pid"]),
                    jitdump_bytes(S["nobody_pid"], 0x5000_0000, "nobody_fn"))
    h.wait_resolves(S["nobody_pid"], 0x5000_0000, "nobody_fn")


@h.case
def after_a_restart_an_exited_users_files_are_kept_as_that_users_process():
    # nobody's process writes its jitdump and exits; the daemon restarts afterwards. The pid
    # exists no more, so the owner cannot be checked against it: the file is kept as an exited
    # process of the file's owner (answered to it and to root, to no one else), not held
    # pending and dropped, which would lose symbols a restart must keep.
    pid = h.sleeper(wrap=as_nobody)
    proc = next(p for p in h._children if p.pid == pid)
    wait_until(lambda: os.stat(f"/proc/{pid}").st_uid == NOBODY.pw_uid, 5, "nobody's sleeper")
    write_as_nobody(h.dump_path(pid), jitdump_bytes(pid, 0x6000_0000, "exited_fn"))
    h.wait_resolves(pid, 0x6000_0000, "exited_fn")
    proc.kill()
    proc.wait()
    h.daemon.stop()
    time.sleep(0.05)  # the file's last write is now well before the next start
    h.start_daemon(S["daemon_args"])
    h.wait_resolves(pid, 0x6000_0000, "exited_fn")
    res = client_as_nobody("lookup", "--pid", pid, "--json", hexaddr(0x6000_0010))
    docs = json_lines(res.stdout)
    check(docs and docs[0].get("name") == "exited_fn" and docs[0].get("offset") == 0x10,
          f"the owner after the restart: {res.stdout!r} {res.stderr!r}")
    res = h.client("processes", "--json")
    mine = [p for p in json_lines(res.stdout) if p["pid"] == pid]
    check(len(mine) == 1 and mine[0].get("uid") == NOBODY.pw_uid and not mine[0]["alive"],
          f"the process after the restart: {mine}")
    check(warned(h.dump_path(pid), "kept as an exited process"), "no log line for it")
    # nobody's live process from the setup is its own, live, process again.
    check(h.lookup_one(S["nobody_pid"], 0x5000_0000).get("name") == "nobody_fn",
          "the live process's file after the restart")


@h.case
def a_second_user_planting_a_jitdump_for_roots_process_is_ignored():
    victim = h.sleeper()
    path = h.dump_path(victim)
    before = stats()["files_untrusted"]
    write_as_nobody(path, jitdump_bytes(victim, 0x6000_0000, "planted"))
    wait_until(lambda: warned(path, "owned by uid 65534 (nobody)", f"pid {victim}",
                              "owned by uid 0 (root)", "ignored"), 5,
               "the warning naming the planted file and both owners")
    check(not h.lookup_one(victim, 0x6000_0000).get("found"), "the planted symbol answered")
    wait_until(lambda: stats()["files_untrusted"] == before + 1, 5, "files_untrusted to count it")
    # More writes to the planted file are not logged again.
    with open(path, "ab") as f:
        f.write(b"\0" * 64)
    time.sleep(0.3)
    check(len(warned(path, "ignored")) == 1, f"warned more than once: {warned(path, 'ignored')}")


@h.case
def a_symlink_named_like_a_jitdump_is_not_followed():
    secret = os.path.join(h.root, "secret.dump")
    victim = h.sleeper()
    h.write_file(secret, jitdump_bytes(victim, 0x6100_0000, "through_symlink"))
    link = h.dump_path(victim)
    subprocess.run(as_nobody(["ln", "-s", secret, link]), check=True)
    wait_until(lambda: warned(link, "symbolic link"), 5, "the log line about the symlink")
    check(not h.lookup_one(victim, 0x6100_0000).get("found"), "a symlink was followed")


@h.case
def a_hard_link_to_roots_file_is_not_answered_for_another_users_process():
    secret = os.path.join(h.root, "secret.map")
    h.write_file(secret, b"7f0000009000 10 root_secret_line\n")
    os.chmod(secret, 0o600)
    link = os.path.join(h.watch_dir, f"perf-{S['nobody_pid']}.map")
    os.link(secret, link)  # what a user could do where fs.protected_hardlinks is off
    wait_until(lambda: warned(link, "hard links", "ignored"), 5, "the hard link warning")
    res = client_as_nobody("lookup", "--pid", S["nobody_pid"], "--json", "0x7f0000009000")
    check(not json_lines(res.stdout)[0].get("found"), f"leaked: {res.stdout!r}")
    os.unlink(link)


@h.case
def the_owner_and_root_may_query_a_process():
    res = client_as_nobody("lookup", "--pid", S["nobody_pid"], "--json", hexaddr(0x5000_0000))
    docs = json_lines(res.stdout)
    check(res.returncode == 0 and docs and docs[0].get("name") == "nobody_fn",
          f"nobody querying its own process: {res.returncode} {res.stdout} {res.stderr}")
    check(h.lookup_one(S["nobody_pid"], 0x5000_0000).get("name") == "nobody_fn",
          "root querying nobody's process")


@h.case
def a_non_owner_is_denied_per_address_and_does_not_see_the_process():
    res = client_as_nobody("lookup", "--pid", S["root_pid"], "--json", hexaddr(0x4000_0000),
                           "0x1")
    docs = json_lines(res.stdout)
    check(len(docs) == 2 and all(d.get("error") == "permission denied" and not d.get("found")
                                 and "name" not in d for d in docs),
          f"nobody querying root's process: {res.stdout!r} {res.stderr!r}")
    # Scripts tell a denial by the exit status (4), and the user is told what to do about it.
    check(res.returncode == 4 and "trusted group" in res.stderr and "sudo" in res.stderr,
          f"lookup denied: exit {res.returncode}, stderr {res.stderr!r}")
    res = client_as_nobody("explain", "--pid", S["root_pid"], hexaddr(0x4000_0000))
    check(res.returncode == 4 and "permission_denied" in res.stderr,
          f"explain of a process nobody may not see: exit {res.returncode} {res.stderr!r}")
    # A live process of root's that the index does not know: denied too, not a silent miss.
    res = client_as_nobody("lookup", "--pid", 1, "--json", "0x1000")
    docs = json_lines(res.stdout)
    check(docs and docs[0].get("error") == "permission denied", f"pid 1: {res.stdout!r}")
    res = client_as_nobody("processes", "--json")
    pids = {p["pid"] for p in json_lines(res.stdout)}
    check(S["nobody_pid"] in pids and S["root_pid"] not in pids,
          f"nobody's `processes` shows {sorted(pids)}")
    mine = [p for p in json_lines(res.stdout) if p["pid"] == S["nobody_pid"]]
    check(mine and mine[0].get("uid") == NOBODY.pw_uid, f"owner not shown: {mine}")
    check(stats()["denied"] >= 3, "denied not counted")  # counted before answering


@h.case
def a_trusted_group_member_may_query_every_process():
    res = client_as_nobody("lookup", "--pid", S["root_pid"], "--json", hexaddr(0x4000_0000),
                           groups=["adm"])
    docs = json_lines(res.stdout)
    check(docs and docs[0].get("name") == "root_fn", f"adm member: {res.stdout!r}")
    res = client_as_nobody("processes", "--json", groups=["adm"])
    check(S["root_pid"] in {p["pid"] for p in json_lines(res.stdout)}, "adm member: processes")


@h.case
def an_image_map_the_client_cannot_read_is_refused():
    path = os.path.join(h.watch_dir, "Secret.ni.r2rmap")
    lines = [f"FFFFFFFF 00 {'AB' * 16}", "FFFFFFFE 00 1", "FFFFFFFD 00 2", "FFFFFFFC 00 3",
             "FFFFFFFB 00 1", "00001000 20 Secret.Type::Method()"]
    h.write_file(path, "".join(l + "\n" for l in lines).encode())
    os.chmod(path, 0o600)

    def root_sees():
        res = h.client("lookup", "--json", "--image", "Secret", "0x1010")
        docs = json_lines(res.stdout)
        return docs and docs[0].get("name") == "Secret.Type::Method()"
    wait_until(root_sees, 5, "root to resolve the image")
    res = client_as_nobody("lookup", "--json", "--image", "Secret", "0x1010")
    docs = json_lines(res.stdout)
    check(docs and docs[0].get("error") == "permission denied" and "name" not in docs[0],
          f"nobody, unreadable r2rmap: {res.stdout!r} {res.stderr!r}")
    os.chmod(path, 0o644)
    res = client_as_nobody("lookup", "--json", "--image", "Secret", "0x1010")
    docs = json_lines(res.stdout)
    check(docs and docs[0].get("name") == "Secret.Type::Method()", f"readable: {res.stdout!r}")
    # An image named by path: the whole request is refused.
    private = os.path.join(h.root, "private.dll")
    h.write_file(private, b"MZ")
    os.chmod(private, 0o600)
    res = client_as_nobody("lookup", "--json", "--image", private, "0x10")
    check(res.returncode != 0 and "permission_denied" in res.stderr + res.stdout,
          f"image path nobody cannot read: {res.returncode} {res.stdout!r} {res.stderr!r}")


# Runs as nobody: on a line from stdin, forks `sleep` (nobody's from birth, so the daemon never
# sees the pid owned by anyone else) and prints the child's pid.
FORKER = r"""
import ctypes, os, sys
for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG: SIGKILL when the forker dies
        os.execvp("sleep", ["sleep", "600"])
    print(pid, flush=True)
"""


@h.case
def an_image_map_planted_by_another_user_is_not_believed():
    lines = [f"FFFFFFFF 00 {'CD' * 16}", "FFFFFFFE 00 1", "FFFFFFFD 00 2", "FFFFFFFC 00 3",
             "FFFFFFFB 00 1", "00001000 20 Planted.Type::Fake()"]
    path = os.path.join(h.watch_dir, "Planted.ni.r2rmap")
    write_as_nobody(path, "".join(l + "\n" for l in lines).encode())
    wait_until(lambda: any(path in l and "following" in l for l in h.daemon.log_lines()), 5,
               "the planted map to be read")
    res = h.client("lookup", "--json", "--image", "Planted", "0x1010")  # root asks
    # Treated as absent: the image is unknown to root, exactly as if there were no map.
    check(res.returncode == 1 and "not_found" in res.stderr and "Fake" not in res.stdout,
          f"root got a planted answer: {res.returncode} {res.stdout!r} {res.stderr!r}")
    res = client_as_nobody("lookup", "--json", "--image", "Planted", "0x1010")  # its owner
    docs = json_lines(res.stdout)
    check(docs and docs[0].get("name") == "Planted.Type::Fake()", f"owner: {res.stdout!r}")


def fork_with_pid(target):
    """Starts `sleep` as nobody with pid `target` (through ns_last_pid); None if another fork on
    the machine took that pid first."""
    if "forker" not in S:
        S["forker"] = h.spawn(as_nobody([sys.executable, "-c", FORKER]), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(target - 1))
    S["forker"].stdin.write("fork\n")
    S["forker"].stdin.flush()
    pid = int(S["forker"].stdout.readline())
    return pid if pid == target else None


@h.case
def a_file_for_a_pid_not_there_yet_waits_for_it():
    # Dropped after the timeout.
    ghost = 4_000_000 - 17
    path = h.dump_path(ghost)
    write_as_nobody(path, jitdump_bytes(ghost, 0x7000_0000, "ghost"))
    wait_until(lambda: warned(path, "does not exist (yet)"), 5, "the pending log line")
    wait_until(lambda: stats()["files_pending"] >= 1, 5, "files_pending to count it")
    wait_until(lambda: warned(path, "did not appear within"), PENDING_MS / 1000 + 5,
               "the file to be dropped after the timeout")
    # Followed once the pid appears with the file's owner: pick a free pid, write the file,
    # then start nobody's process with exactly that pid (other forks on the machine may take it
    # first; try again then).
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    for attempt in range(30):
        target = min(pid_max - 10, 3_000_000) - 1000 * attempt - (os.getpid() % 500)
        if os.path.exists(f"/proc/{target}"):
            continue
        path = h.dump_path(target)
        write_as_nobody(path, jitdump_bytes(target, 0x7100_0000, "arrived"))
        wait_until(lambda: warned(path, "does not exist (yet)"), 5, "the pending log line")
        if fork_with_pid(target):
            h.wait_resolves(target, 0x7100_0000, "arrived", timeout=PENDING_MS / 1000 + 5)
            res = client_as_nobody("lookup", "--pid", target, "--json", hexaddr(0x7100_0000))
            check(json_lines(res.stdout)[0].get("name") == "arrived", "its owner may query it")
            return
        os.unlink(path)
    raise Failure("could not start a process with a chosen pid in 30 attempts")


@h.case
def per_user_file_limit_refuses_with_a_log_line():
    before = stats()["files_over_limit"]
    # nobody's image maps stay open (followed), each counting against nobody's file limit.
    for i in range(USER_FILES + 5):
        lines = [f"FFFFFFFF 00 {'%032X' % i}", "FFFFFFFE 00 1", "FFFFFFFD 00 2",
                 "FFFFFFFC 00 3", "FFFFFFFB 00 1", "00001000 20 M()"]
        write_as_nobody(os.path.join(h.watch_dir, f"Many{i}.ni.r2rmap"),
                        "".join(l + "\n" for l in lines).encode())
    wait_until(lambda: len(warned("per-user files limit", "uid 65534")) >= 5, 5,
               "the per-user files limit log lines")
    wait_until(lambda: stats()["files_over_limit"] >= before + 5, 5, "files_over_limit to count")
    # root's files are not affected.
    victim = h.sleeper()
    h.write_file(h.dump_path(victim), jitdump_bytes(victim, 0x7200_0000, "roots_still_fine"))
    h.wait_resolves(victim, 0x7200_0000, "roots_still_fine")


@h.case
def per_file_byte_limit_stops_a_huge_sparse_perf_map():
    victim = h.sleeper()
    path = os.path.join(h.watch_dir, f"perf-{victim}.map")
    with open(path, "wb") as f:
        f.write(b"7f0000001000 10 first_line\n")
        f.truncate(10 << 30)  # 10 GB, sparse
    wait_until(lambda: warned(path, "per-file bytes limit"), 60, "the per-file limit log line")
    check(h.lookup_one(victim, 0x7f00_0000_1000).get("name") == "first_line",
          "the line before the limit")
    res = h.client("processes", "--json")
    states = [s["state"] for p in json_lines(res.stdout) for s in p.get("sources", [])
              if s["path"] == path]
    check(states == ["limit"], f"source state {states}")
    os.unlink(path)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("SKIP: needs root (acts as nobody through setpriv)")
        sys.exit(0)
    h.main()
