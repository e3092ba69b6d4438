#!/usr/bin/env python3
"""A binary its owner truncates while the daemon reads it. The daemon maps the ELF files it
symbolizes; a read of a mapped page past a file's new end raises SIGBUS, which would end it. A real
unprivileged user owns a copy of a large binary with DWARF (the daemon's own) and truncates it
while first lookups read it, again and again: the daemon lives, logs the file and the offset from
which it read zeros, and once the file is whole again answers exactly as before."""

import os
import random
import subprocess
import time

import users
from harness import Harness, check, hexaddr
from native_oracle import our_answers, sample_addresses

h = Harness(__doc__)
FIX = {}


@h.setup
def setup():
    if os.geteuid() != 0:
        raise SystemExit("needs root (the owner of the file is a real unprivileged user)")
    alice = users.ensure(users.ALICE)
    os.chmod(h.root, 0o755)
    d = os.path.join(h.root, "alice")
    os.mkdir(d)
    os.chown(d, alice.pw_uid, alice.pw_gid)
    FIX["path"] = os.path.join(d, "big")
    with open(h.jitsymd, "rb") as f:
        FIX["data"] = f.read()
    users.write(users.ALICE, FIX["path"], FIX["data"])
    FIX["addrs"] = sample_addresses(FIX["path"], 3000)
    h.start_daemon()


def frames(answers):
    return [(a.get("name"), a.get("frames")) for a in answers]


@h.case
def truncated_by_its_owner_while_first_lookups_read_it():
    path, data, addrs = FIX["path"], FIX["data"], FIX["addrs"]
    before = our_answers(h, path, addrs)
    found = sum(bool(a.get("found")) for a in before)
    check(found == len(addrs), f"only {found}/{len(addrs)} addresses found before")
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    rng = random.Random(7)
    rounds, deadline = 0, time.monotonic() + 120
    while "shrank while mapped" not in h.daemon.log() and time.monotonic() < deadline:
        rounds += 1
        users.write(users.ALICE, path, data)  # whole again: a new mtime, a module not read yet
        lookup = subprocess.Popen(
            [h.jitsym, "--socket", h.socket_path, "lookup", "--image", path, "--json"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            text=True)
        lookup.stdin.write(text)
        lookup.stdin.close()
        time.sleep(rng.uniform(0.0, 0.08))
        users.run(users.ALICE, ["truncate", "-s", str(len(data) // 3), path], check=True)
        lookup.wait(timeout=120)
        check(h.daemon.alive(), f"the daemon died in round {rounds}")
    log = h.daemon.log()
    print(f"{rounds} rounds of truncation under a first lookup")
    check(f"native: {path}: shrank while mapped: from offset " in log,
          f"no page read past the end in {rounds} rounds (or no log line): {h.log_tail()}")
    check(h.client("ping").returncode == 0, "the daemon no longer answers")
    users.write(users.ALICE, path, data)
    after = our_answers(h, path, addrs)
    same = sum(x == y for x, y in zip(frames(before), frames(after)))
    check(same == len(addrs), f"{same}/{len(addrs)} answers as before once the file is whole")


if __name__ == "__main__":
    h.main()
