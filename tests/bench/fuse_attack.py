#!/usr/bin/env python3
"""jsbob's FUSE mount whose server never answers root, and his process mapping
jit-<pid>.dump from it, for tests/bench/hostile_mix_bench.py (run as root):

  python3 tests/bench/fuse_attack.py DIR

Builds tests/integration/fuse/{silent_to_root,jit_mapper}.c, sets `user_allow_other` in
/etc/fuse.conf and /dev/fuse to 0666 (as Debian's udev rule makes it), mounts as jsbob under DIR,
starts his mapper, prints "ready PID" and waits; on SIGTERM or SIGINT it ends both, unmounts,
and puts /etc/fuse.conf and /dev/fuse back. Prints "unavailable: WHY" and waits likewise where
there is no /dev/fuse or fusermount3."""

import os
import shutil
import signal
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FUSE_DIR = os.path.join(HERE, "..", "integration", "fuse")
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import users  # noqa: E402

FUSE_CONF = "/etc/fuse.conf"


def main():
    root = sys.argv[1]
    state = {}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    try:
        if not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
            print("unavailable: no /dev/fuse or no fusermount3", flush=True)
        else:
            print("ready", setup(root, state), flush=True)
        while not stop:
            time.sleep(0.2)
    finally:
        put_back(state)


def setup(root, state):
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True,
                           text=True, check=True).stdout.split()
    binaries = {}
    for name, extra in (("silent_to_root", flags), ("jit_mapper", [])):
        out = os.path.join(root, name)
        subprocess.run(["gcc", "-O1", "-o", out, os.path.join(FUSE_DIR, name + ".c")] + extra,
                       check=True, capture_output=True, timeout=120)
        os.chmod(out, 0o755)
        binaries[name] = out
    state["fuse_conf"] = open(FUSE_CONF).read() if os.path.exists(FUSE_CONF) else None
    with open(FUSE_CONF, "w") as f:
        f.write((state["fuse_conf"] or "") + "\nuser_allow_other\n")
    state["dev_fuse_mode"] = stat.S_IMODE(os.stat("/dev/fuse").st_mode)
    os.chmod("/dev/fuse", 0o666)
    bob = users.ensure(users.BOB)
    base = os.path.join(root, "bob-fuse")
    os.mkdir(base)
    os.chown(base, bob.pw_uid, bob.pw_gid)
    back, mnt = os.path.join(base, "back"), os.path.join(base, "mnt")
    users.run(users.BOB, ["mkdir", back, mnt], check=True)
    users.run(users.BOB, ["cp", binaries["jit_mapper"], os.path.join(back, "jit_mapper")],
              check=True)
    state["mnt"] = mnt
    state["server"] = subprocess.Popen(users.argv(users.BOB, [binaries["silent_to_root"], back,
                                                              mnt]),
                                       env=users.env(users.BOB), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if state["server"].stdout.readline().strip() != b"mounted":
        raise RuntimeError("bob's FUSE server did not mount")
    state["mapper"] = subprocess.Popen(
        users.argv(users.BOB, [os.path.join(mnt, "jit_mapper"), back, mnt]),
        env=users.env(users.BOB), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    pid = state["mapper"].stdout.readline().split()[0].decode()
    return pid


def put_back(state):
    for key in ("mapper", "server"):
        proc = state.get(key)
        if proc is not None and proc.poll() is None:
            proc.kill()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
    if "mnt" in state:
        subprocess.run(["fusermount3", "-u", "-z", state["mnt"]], capture_output=True, timeout=30)
    if "fuse_conf" in state:
        if state["fuse_conf"] is None:
            os.unlink(FUSE_CONF)
        else:
            with open(FUSE_CONF, "w") as f:
                f.write(state["fuse_conf"])
    if "dev_fuse_mode" in state:
        os.chmod("/dev/fuse", state["dev_fuse_mode"])


if __name__ == "__main__":
    main()
