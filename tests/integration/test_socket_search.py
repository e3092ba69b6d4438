#!/usr/bin/env python3
"""Where jitsym looks for jitsymd, and what it says when it cannot get in. The system socket
/run/jitsymd/jitsymd.sock (root:GROUP, 0660, as jitsymd.socket makes it) is served by the real
daemon inside a private mount namespace whose /run is a fresh tmpfs, so the host's /run is never
touched. As real users (users.py): a member of the socket's group reaches it with no option
(ping and a lookup of her own process), from the client and from the perf script helper; her
own daemon's socket wins while it listens and is passed over once it is a stale file; a user
outside the group is told both paths, the group and how to join it; one added to the group since
his login is told to log in again; --socket and JITSYM_SOCKET are the only path tried."""

import os
import pwd
import re
import shutil
import signal
import subprocess
import sys

import users
from harness import Daemon, Failure, Harness, check, read_line, wait_until

h = Harness(__doc__)
SYSTEM = "/run/jitsymd/jitsymd.sock"
GROUP = "jssock"  # the packaged socket's group is jitsym; the client names whichever it is
PERF_HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client",
                           "perf", "jitsym.py")
S = {}


def in_ns(argv):
    """argv run in the test's mount namespace (where /run/jitsymd/jitsymd.sock is ours)."""
    return ["nsenter", f"--mount=/proc/{S['ns']}/ns/mnt", "--"] + [str(a) for a in argv]


def user_env(name, **extra):
    """A login's environment without any socket named: no JITSYM_SOCKET, no XDG_RUNTIME_DIR
    unless given."""
    env = users.env(name)
    env.pop("XDG_RUNTIME_DIR", None)
    env.update(extra)
    return env


def as_user(name, args, groups=None, **extra_env):
    """Runs the client (or anything) as the user inside the namespace. `groups`: the process's
    supplementary groups, if not the ones the group database gives the user now."""
    argv = users.argv(name, args)
    if groups is not None:
        argv = [a if not a.startswith("--groups=") else "--groups=" + ",".join(map(str, groups))
                for a in argv]
    return subprocess.run(in_ns(argv), env=user_env(name, **extra_env), capture_output=True,
                          text=True, timeout=60)


def jitsym(name, *args, groups=None, **extra_env):
    return as_user(name, [S["client"]] + list(args), groups=groups, **extra_env)


def perf_helper(name, **extra_env):
    """The perf script helper's connection as perf would make it (trace_begin), without perf:
    prints the socket it reached."""
    driver = (f"import sys; sys.argv = ['jitsym.py']; sys.path.insert(0, {h.root!r}); "
              "import jitsym; jitsym.trace_begin(); print(jitsym.DAEMON.path)")
    return as_user(name, [sys.executable, "-c", driver], **extra_env)


def group_gid():
    return int(subprocess.run(["getent", "group", GROUP], capture_output=True, text=True,
                              check=True).stdout.split(":")[2])


@h.setup
def serve_the_system_socket_in_a_private_run():
    alice, bob = users.ensure_both()
    S["alice"], S["bob"] = alice, bob
    if subprocess.run(["getent", "group", GROUP], capture_output=True).returncode != 0:
        subprocess.run(["groupadd", "--system", GROUP], check=True, capture_output=True,
                       timeout=30)
    subprocess.run(["gpasswd", "-a", users.ALICE, GROUP], check=True, capture_output=True)
    subprocess.run(["gpasswd", "-d", users.BOB, GROUP], capture_output=True)  # a rerun's
    S["client"] = users.share_like_tmp(h)
    shutil.copy(PERF_HELPER, os.path.join(h.root, "jitsym.py"))
    os.chmod(os.path.join(h.root, "jitsym.py"), 0o644)
    # A mount namespace whose /run is empty but for /run/jitsymd (0755, as systemd makes it).
    holder = h.spawn(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                      "mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0755 /run/jitsymd && "
                      "echo ready && exec sleep 3600"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    read_line(holder, 20, "the mount namespace holder")
    S["ns"] = holder.pid
    # The daemon, run through nsenter (which execs it: the same pid), on the system socket.
    wrapper = os.path.join(h.root, "jitsymd-in-ns")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec nsenter --mount=/proc/{holder.pid}/ns/mnt -- {h.jitsymd} "
                '"$@"\n')
    os.chmod(wrapper, 0o755)
    h.daemon = Daemon(wrapper, [h.watch_dir], SYSTEM, os.path.join(h.root, "jitsymd.log"))
    h.daemon.start()

    def up():
        check(h.daemon.alive(), f"jitsymd exited: {h.daemon.log()[-800:]}")
        res = subprocess.run(in_ns([h.jitsym, "--socket", SYSTEM, "ping"]), capture_output=True)
        return res.returncode == 0
    wait_until(up, 20, "jitsymd to answer on the system socket", interval=0.05)
    # As jitsymd.socket makes it: root:GROUP, 0660.
    subprocess.run(in_ns(["chown", f"root:{GROUP}", SYSTEM]), check=True)
    subprocess.run(in_ns(["chmod", "0660", SYSTEM]), check=True)
    # alice's process with a perf map she wrote.
    pid = h.sleeper(wrap=lambda argv: users.argv(users.ALICE, argv))
    users.write(users.ALICE, os.path.join(h.watch_dir, f"perf-{pid}.map"),
                "7f0000001000 40 alice_own_function\n")
    S["pid"] = pid
    # alice's runtime directory ($XDG_RUNTIME_DIR), with no socket in it yet.
    run_dir = os.path.join(h.root, "alice-run")
    os.mkdir(run_dir, 0o700)
    os.chown(run_dir, alice.pw_uid, alice.pw_gid)
    S["run_dir"] = run_dir


@h.case
def a_group_member_reaches_the_system_socket_with_no_option():
    res = jitsym(users.ALICE, "ping")
    check(res.returncode == 0, f"ping as {users.ALICE}: exit {res.returncode}: {res.stderr}")
    check(f"pong from {SYSTEM}:" in res.stdout, f"ping reached: {res.stdout!r}")

    def named():
        res = jitsym(users.ALICE, "lookup", "--pid", S["pid"], "0x7f0000001010")
        return res.returncode == 0 and "alice_own_function+0x10" in res.stdout and res
    res = wait_until(named, 10, f"{users.ALICE}'s own process to resolve with no --socket")
    # With a runtime directory that holds no socket, the same.
    res = jitsym(users.ALICE, "ping", XDG_RUNTIME_DIR=S["run_dir"])
    check(res.returncode == 0 and f"pong from {SYSTEM}:" in res.stdout,
          f"ping with XDG_RUNTIME_DIR={S['run_dir']}: {res.returncode} {res.stdout!r} "
          f"{res.stderr!r}")


@h.case
def her_own_daemon_wins_while_it_listens_and_its_stale_socket_is_passed_over():
    run_dir = S["run_dir"]
    own = os.path.join(run_dir, "jitsymd.sock")
    empty = os.path.join(run_dir, "watch")
    users.run(users.ALICE, ["mkdir", empty])
    log_path = os.path.join(h.root, "alice-jitsymd.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(in_ns(users.argv(users.ALICE, [
            h.jitsymd, "--watch", empty, "--discovery-interval", "0"])),
            env=user_env(users.ALICE, XDG_RUNTIME_DIR=run_dir), stdin=subprocess.DEVNULL,
            stdout=log, stderr=log, start_new_session=True)
    try:
        def own_answers():
            if proc.poll() is not None:
                raise Failure(f"alice's jitsymd exited: {open(log_path).read()[-500:]}")
            # Until it listens, the system socket answers.
            res = jitsym(users.ALICE, "ping", XDG_RUNTIME_DIR=run_dir)
            return res.returncode == 0 and f"pong from {own}:" in res.stdout
        wait_until(own_answers, 20, "alice's own jitsymd to answer her ping", interval=0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no clean-up: the socket file stays behind
        proc.wait()
    check(os.path.exists(own), "SIGKILL should leave the socket file behind")
    res = jitsym(users.ALICE, "ping", XDG_RUNTIME_DIR=run_dir)
    check(res.returncode == 0 and f"pong from {SYSTEM}:" in res.stdout,
          f"a stale {own} should be passed over: {res.returncode} {res.stdout!r} "
          f"{res.stderr!r}")


@h.case
def a_user_outside_the_group_is_told_both_paths_the_group_and_how_to_join():
    res = jitsym(users.BOB, "ping")
    own = f"/tmp/jitsymd-{S['bob'].pw_uid}.sock"
    check(res.returncode == 1, f"exit {res.returncode}, want 1: {res.stderr!r}")
    err = res.stderr.strip()
    check(f"{own}: No such file or directory" in err, f"the per-user path and why: {err!r}")
    check(f"{SYSTEM}: Permission denied" in err, f"the system path and why: {err!r}")
    check(f"members of the group {GROUP}" in err and f"usermod -aG {GROUP} {users.BOB}" in err,
          f"the group and how to join it: {err!r}")
    check(err.count("\n") == 0, f"one line: {err!r}")
    print(f"  {err}")


@h.case
def a_user_added_since_his_login_is_told_to_log_in_again():
    before = users.groups_of(users.BOB)
    subprocess.run(["gpasswd", "-a", users.BOB, GROUP], check=True, capture_output=True)
    try:
        res = jitsym(users.BOB, "ping", groups=before)
        check(res.returncode == 1 and "log in again" in res.stderr and
              f"newgrp {GROUP}" in res.stderr and "usermod" not in res.stderr,
              f"exit {res.returncode}: {res.stderr!r}")
        print(f"  {res.stderr.strip()}")
        res = jitsym(users.BOB, "ping", groups=before + [group_gid()])
        check(res.returncode == 0, f"after a new login: {res.returncode} {res.stderr!r}")
    finally:
        subprocess.run(["gpasswd", "-d", users.BOB, GROUP], capture_output=True)


@h.case
def the_perf_script_helper_searches_and_words_it_the_same():
    res = perf_helper(users.ALICE)
    check(res.returncode == 0 and res.stdout.strip() == SYSTEM,
          f"as {users.ALICE}: {res.returncode} {res.stdout!r} {res.stderr[-500:]!r}")
    res = perf_helper(users.BOB)
    check(res.returncode == 1 and f"{SYSTEM}: Permission denied" in res.stderr and
          f"usermod -aG {GROUP} {users.BOB}" in res.stderr,
          f"as {users.BOB}: {res.returncode} {res.stderr[-500:]!r}")
    res = perf_helper(users.ALICE, JITSYM_SOCKET=os.path.join(h.root, "nowhere.sock"))
    check(res.returncode == 1 and "nowhere.sock" in res.stderr and SYSTEM not in res.stderr,
          f"JITSYM_SOCKET is the only path: {res.stderr[-500:]!r}")


@h.case
def a_named_socket_is_the_only_one_tried():
    nowhere = os.path.join(h.root, "nowhere.sock")
    for res in (jitsym(users.ALICE, "--socket", nowhere, "ping"),
                jitsym(users.ALICE, "ping", JITSYM_SOCKET=nowhere)):
        check(res.returncode == 1, f"exit {res.returncode}: {res.stderr!r}")
        check(f"at {nowhere}: No such file or directory" in res.stderr and
              SYSTEM not in res.stderr, f"only the named path: {res.stderr!r}")


@h.case
def root_looks_only_at_the_system_socket_and_help_lists_the_search():
    res = subprocess.run(in_ns([h.jitsym, "ping"]), capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != "JITSYM_SOCKET"})
    check(res.returncode == 0 and f"pong from {SYSTEM}:" in res.stdout,
          f"root: {res.returncode} {res.stdout!r} {res.stderr!r}")
    res = jitsym(users.ALICE, "--help")
    own = f"/tmp/jitsymd-{S['alice'].pw_uid}.sock"
    check(re.search(rf"else {re.escape(own)},\s+or {re.escape(SYSTEM)} when no daemon listens",
                    res.stdout), f"--help: {res.stdout!r}")


h.main()
