#!/usr/bin/env python3
"""One user acting as many: run by a user inside `unshare --user --map-auto --map-root-user`
(so uids 1..N of the namespace are his subordinate uids on the host), it forks one child per
uid 1..N that drops to that uid and does one thing against jitsymd, printing a line per event,
prefixed by the namespace uid. Used by test_attacks_persons.py:

  subuid_crowd.py N SOCKET hold K           each uid opens K connections (a ping on each),
                                            prints "K ok I" or "K refused I LINE", then holds
  subuid_crowd.py N SOCKET partial BYTES    each uid sends BYTES of a request line without its
                                            end, prints "K held" (or "K busy LINE") and holds
  subuid_crowd.py N DIR map LINES           each uid writes DIR/perf-<its pid>.map with LINES
                                            ranges of its own, prints "K mapped PID" and sleeps

The children run until killed (the parent waits for them)."""

import ctypes
import os
import select
import socket
import sys
import time


def say(k, *parts):
    print(k, *parts, flush=True)


def ping_line(s):
    try:
        s.sendall(b'{"v":1,"op":"ping"}\n')
    except OSError:
        pass  # refused before the ping went out: the reason is waiting to be read
    return s.makefile("rb").readline()


def hold(k, path, count):
    held = []
    for i in range(count):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(path)
            line = ping_line(s)
        except OSError as e:
            line = str(e).encode()
        if b'"pong"' in line:
            held.append(s)
            say(k, "ok", i)
        else:
            say(k, "refused", i, line.decode(errors="replace").strip())
            s.close()
    say(k, "holding", len(held))
    while True:
        time.sleep(3600)


def partial(k, path, size):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    head = b'{"v":1,"op":"lookup","pid":1,"addrs":['
    body = b'"0x1",' * ((size - len(head)) // 6)
    try:
        s.sendall(head + body)
    except OSError:
        pass  # refused while sending: the reason is waiting to be read
    # The daemon answers "busy" (and closes) once the line outgrows this uid's share.
    ready, _, _ = select.select([s], [], [], 1.0)
    if ready:
        say(k, "busy", s.makefile("rb").readline().decode(errors="replace").strip())
    else:
        say(k, "held", len(head) + len(body))
    while True:
        time.sleep(3600)


def write_map(k, directory, lines):
    pid = os.getpid()
    text = "".join("%x 40 crowd_%d_%d\n" % (0x30000000 + i * 64, k, i) for i in range(lines))
    with open(os.path.join(directory, f"perf-{pid}.map"), "w") as f:
        f.write(text)
    say(k, "mapped", pid)
    while True:
        time.sleep(3600)


def main():
    n, where, mode, arg = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    children = []
    for k in range(1, n + 1):
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setresgid(k, k, k)
                os.setresuid(k, k, k)
                # Changing uids made the process undumpable, which gives its /proc/PID to the
                # namespace's root (bob): dumpable again, it is the subordinate uid's, as any
                # process started as that uid is.
                ctypes.CDLL(None, use_errno=True).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
                {"hold": hold, "partial": partial, "map": write_map}[mode](k, where, arg)
            except Exception as e:  # one line, not a traceback per child
                say(k, "error", repr(e))
            os._exit(1)
        children.append(pid)
        time.sleep(0.05)  # in order: the lines say which uid came first
    for pid in children:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
