#!/usr/bin/env python3
"""`jitsym lookup --image PATH` says what is wrong with the path, as two real users meet it
(jsalice owns a private directory, jsbob asks): no such file, not readable, a directory, a text file (not an
ELF file), a bare name with no ReadyToRun map, a relative path naming nothing (a usage error);
and it tells bob nothing about alice's private paths: a file that exists behind a directory bob
cannot search answers exactly as one that does not exist there, and /proc's links (alice's
process's exe and cwd, /proc/self) are not followed for him."""

import os

import users
from harness import Harness, check

h = Harness(__doc__)
FIX = {}


def bob(*args):
    return users.client(users.BOB, FIX["client"], h.socket_path, "lookup", *args)


@h.setup
def users_files_and_daemon():
    users.ensure_both()
    FIX["client"] = users.share_like_tmp(h)
    h.start_daemon()
    pub = os.path.join(h.root, "pub")
    os.mkdir(pub)
    os.chmod(pub, 0o755)
    FIX["pub"] = pub
    text = os.path.join(pub, "notes.txt")
    with open(text, "w") as f:
        f.write("not an ELF file\n")
    os.chmod(text, 0o644)
    FIX["text"] = text
    # alice's private directory: bob cannot search it.
    private = os.path.join(h.root, "alice_private")
    os.mkdir(private)
    os.chown(private, users.ensure(users.ALICE).pw_uid, users.ensure(users.ALICE).pw_gid)
    os.chmod(private, 0o700)
    users.write(users.ALICE, os.path.join(private, "secret.so"), b"\x7fELF" + b"\0" * 60)
    FIX["private"] = private


@h.case
def missing_file_says_no_such_file():
    path = os.path.join(FIX["pub"], "missing.so")
    res = bob("--image", path, "0x10")
    check(res.returncode == 1 and "no such file" in res.stderr, f"{res.returncode} {res.stderr!r}")


@h.case
def directory_says_directory():
    res = bob("--image", FIX["pub"], "0x10")
    check(res.returncode == 1 and "is a directory" in res.stderr, f"{res.returncode} {res.stderr!r}")


@h.case
def text_file_says_not_an_elf_file():
    res = bob("--image", FIX["text"], "0x10")
    check(res.returncode == 1 and "not an ELF file" in res.stderr,
          f"{res.returncode} {res.stderr!r}")


@h.case
def unreadable_file_says_not_readable():
    path = os.path.join(FIX["pub"], "root_only.so")
    with open(path, "wb") as f:
        f.write(b"\x7fELF" + b"\0" * 60)
    os.chmod(path, 0o600)
    res = bob("--image", path, "0x10")
    check(res.returncode == 1 and "permission_denied" in res.stderr
          and "not readable" in res.stderr, f"{res.returncode} {res.stderr!r}")


@h.case
def bare_name_says_no_map_and_how_to_name_a_file():
    res = bob("--image", "libnothing.so", "0x10")
    check(res.returncode == 1 and "no ReadyToRun map" in res.stderr
          and "absolute path" in res.stderr, f"{res.returncode} {res.stderr!r}")


@h.case
def relative_path_naming_nothing_is_a_usage_error():
    res = bob("--image", "some/where/lib.so", "0x10")
    check(res.returncode == 2 and "no such file" in res.stderr, f"{res.returncode} {res.stderr!r}")


@h.case
def a_path_bob_cannot_search_tells_him_nothing():
    exists = bob("--image", os.path.join(FIX["private"], "secret.so"), "0x10")
    absent = bob("--image", os.path.join(FIX["private"], "absent.so"), "0x10")
    check(exists.returncode == absent.returncode and exists.returncode != 0,
          f"exit {exists.returncode} vs {absent.returncode}")
    strip = lambda s: s.replace("secret.so", "X").replace("absent.so", "X")
    check(strip(exists.stderr) == strip(absent.stderr) and exists.stdout == absent.stdout,
          f"answers differ: {exists.stderr!r} vs {absent.stderr!r}")
    check("no such file" not in exists.stderr and "ELF" not in exists.stderr,
          f"says something about the file: {exists.stderr!r}")
    # alice herself learns what is wrong with her own path.
    res = users.client(users.ALICE, FIX["client"], h.socket_path, "lookup", "--image",
                       os.path.join(FIX["private"], "absent.so"), "0x10")
    check(res.returncode == 1 and "no such file" in res.stderr, f"alice: {res.stderr!r}")


@h.case
def proc_links_are_not_followed_for_a_client():
    """/proc/PID/exe, /proc/PID/cwd/... and /proc/self/... are links the daemon would read with
    its own rights, into another user's process and its view: answered as a path that does not
    exist, whoever's process it is."""
    pid = h.sleep_as(users.ALICE)
    missing = bob("--image", os.path.join(FIX["pub"], "missing.so"), "0x10")
    for path in (f"/proc/{pid}/exe", f"/proc/{pid}/cwd/sleep", "/proc/self/exe",
                 f"/proc/{pid}/root/usr/bin/sleep"):
        res = bob("--image", path, "0x10")
        print(f"  {path}: exit {res.returncode}: {res.stderr.strip()[:100]}")
        check(res.returncode == missing.returncode and "no such file" in res.stderr,
              f"{path}: {res.returncode} {res.stdout!r} {res.stderr!r}")
    # The file itself, named, is answered as always.
    res = bob("--image", "/usr/bin/sleep", "0x10")
    check("no such file" not in res.stderr, f"/usr/bin/sleep: {res.returncode} {res.stderr!r}")


if __name__ == "__main__":
    h.main()
