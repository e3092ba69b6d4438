#!/usr/bin/env python3
"""Discovery of side files outside the watch directories, and what a user can do to it, with
the real jitsymd (discovery on) and client and two real users (`jsalice`, `jsbob`):

  - a jitdump bob's process maps in bob's own directory (no --watch covers it) is found and
    answered to bob, and the directory is watched: a perf map he writes there later is
    followed too;
  - bob moves the directory above it away and a symlink to a directory of root's takes its
    place, then he writes a new jitdump in the watched directory: the watch reports it under
    the old path, which now leads into root's directory. Root's jitdump named for bob's pid
    must not be read (a root-owned file is believed for any process, so bob would be answered
    root's names).
"""

import json
import os
import subprocess
import time

import jitdump
import users
from harness import Harness, check, hexaddr, wait_until

h = Harness(__doc__)
S = {}


def bob_client(*args):
    return users.client(users.BOB, S["client"], h.socket_path, *args)


def resolves(pid, addr):
    res = bob_client("lookup", "--json", "--pid", pid, hexaddr(addr))
    if res.returncode != 0:
        return None
    for line in res.stdout.splitlines():
        d = json.loads(line)
        if d.get("found"):
            return d.get("name")
    return None


@h.setup
def start():
    users.ensure_both()
    S["client"] = users.share_like_tmp(h)
    h.start_daemon(["--discovery-interval", "100ms"])


@h.case
def a_mapped_jitdump_in_a_users_own_directory_is_found_and_its_directory_watched():
    space = os.path.join(h.root, "bobspace")  # bob's own, as /home/bob is
    os.mkdir(space, 0o755)
    bob = users.ensure(users.BOB)
    os.chown(space, bob.pw_uid, bob.pw_gid)
    work = os.path.join(space, "project", "work")
    users.run(users.BOB, ["mkdir", "-p", "-m", "0755", work], check=True)
    pid = h.sleeper([work], wrap=lambda argv: users.argv(users.BOB, argv),
                    env=users.env(users.BOB))
    S["bob_pid"], S["work"] = pid, work
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    users.write(users.BOB, os.path.join(work, f"jit-{pid}.dump"),
                w.header(base) + w.load(base + 10, 0x6100_0000, 0x100, "bob_found_fn", 1))
    wait_until(lambda: resolves(pid, 0x6100_0010) == "bob_found_fn", 5,
               "bob's mapped jitdump in his own directory to be found")
    # The directory is watched now: a perf map written there later is followed as well.
    users.write(users.BOB, os.path.join(work, f"perf-{pid}.map"), "62000000 100 bob_map_fn\n")
    wait_until(lambda: resolves(pid, 0x6200_0010) == "bob_map_fn", 5,
               "a perf map written later in the found directory to be followed")


@h.case
def a_found_directory_whose_parent_is_swapped_for_a_symlink_does_not_lead_into_roots_files():
    pid, work = S["bob_pid"], S["work"]
    home = os.path.dirname(work)
    # Root's jitdump, named for bob's pid (a root-owned file is believed for any process), in
    # a directory only root can read, laid out like bob's: rootonly/work/jit-<pid>.dump.
    secret_dir = os.path.join(h.root, "rootonly")
    os.makedirs(os.path.join(secret_dir, "work"))
    os.chmod(secret_dir, 0o700)
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    with open(os.path.join(secret_dir, "work", f"jit-{pid}.dump"), "wb") as f:
        f.write(w.header(base) + w.load(base + 10, 0x6300_0000, 0x100, "root_secret_fn", 1))
    # Bob moves his home away (the watched directory itself is not moved, so its watch stays),
    # puts a symlink to root's directory in its place, and writes a new jitdump in the watched
    # directory: the watch reports it under the old path, which now leads into root's.
    moved = home + ".moved"
    users.run(users.BOB, ["mv", home, moved], check=True)
    users.run(users.BOB, ["ln", "-s", secret_dir, home], check=True)
    users.run(users.BOB, ["rm", os.path.join(moved, "work", f"jit-{pid}.dump")], check=True)
    users.write(users.BOB, os.path.join(moved, "work", f"jit-{pid}.dump"),
                w.header(base) + w.load(base + 20, 0x6400_0000, 0x100, "bob_new_fn", 1))
    time.sleep(1.5)
    check(resolves(pid, 0x6300_0010) != "root_secret_fn",
          "root's jitdump was read through the symlink put in place of bob's home")
    check(any("no longer the directory that was found there" in l
              for l in h.daemon.log_lines()), "no log line for the swapped directory")


if __name__ == "__main__":
    h.main()
