#!/usr/bin/env python3
"""A hostile (or just greedy) client of jitsymd, run as an unprivileged user by
test_attacks_server.py and tests/bench/attack_bench.py:

  attack_client.py SOCKET flood N PID ADDRS READ   N connections, each sends lookups of ADDRS
                                                   addresses of PID, over and over; READ is
                                                   "never" (send one, never read), "slow" (read
                                                   4 KiB every 50 ms) or "full" (read each answer)
  attack_client.py SOCKET hold N                   opens N connections one after the other, pings
                                                   on each (prints "ok I" or "refused I LINE"),
                                                   then keeps the admitted ones busy with a ping
                                                   every 300 ms

  attack_client.py SOCKET probe SECONDS PID ADDR   one connection: a lookup of 16 addresses
                                                   from ADDR of PID after another, for SECONDS;
                                                   prints {"times_ms": [...]} (send to whole
                                                   answer) and exits

It prints one line per event and runs until killed (probe: until done)."""

import json
import socket
import sys
import threading
import time


def lookup_line(pid, n):
    # Distinct addresses over a range the test's perf map covers.
    addrs = ",".join('"0x%x"' % (0x10000000 + (i * 64) % (1 << 24)) for i in range(n))
    return ('{"v":1,"op":"lookup","pid":%d,"addrs":[%s]}\n' % (pid, addrs)).encode()


def say(*parts):
    print(*parts, flush=True)


def flood(path, i, line, mode):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        while True:
            s.sendall(line)
            say("sent", i)
            if mode == "never":
                time.sleep(3600)
            # Streamed through: only the head, the last bytes and a count are kept.
            head, tail, size, found = b"", b"", 0, 0
            pattern = b'"found":true'
            while not tail.endswith(b"\n"):
                chunk = s.recv(4096 if mode == "slow" else 1 << 20)
                if not chunk:
                    say("closed", i)
                    return
                if len(head) < 300:
                    head += chunk[:300]
                window = tail + chunk
                found += window.count(pattern) - tail.count(pattern)
                tail = window[-len(pattern):]
                size += len(chunk)
                if mode == "slow":
                    time.sleep(0.05)
            if mode == "full" and b'"busy"' in head:
                say("busy", i, head.split(b"\n")[0].decode(errors="replace"))
                time.sleep(0.2)
            elif mode == "full":
                say("answer", i, size, found)
    except OSError as e:
        say("error", i, e)


def hold(path, n):
    held = []
    for i in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(path)
        try:
            s.sendall(b'{"v":1,"op":"ping"}\n')
        except OSError:
            pass  # refused before the ping went out: the reason is waiting to be read
        try:
            line = s.makefile("rb").readline()
        except OSError as e:
            line = str(e).encode()
        if b'"pong"' in line:
            held.append(s)
            say("ok", i)
        else:
            say("refused", i, line.decode(errors="replace").strip())
            s.close()
    say("holding", len(held))
    while True:
        time.sleep(0.3)
        for s in held:
            s.sendall(b'{"v":1,"op":"ping"}\n')
            s.recv(4096)


def probe(path, seconds, pid, addr):
    line = ('{"v":1,"op":"lookup","pid":%d,"addrs":[%s]}\n' % (
        pid, ",".join('"0x%x"' % (addr + 64 * i) for i in range(16)))).encode()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    f = s.makefile("rb")
    times = []
    errors = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        s.sendall(line)
        answer = f.readline()
        times.append((time.monotonic() - t0) * 1000)
        errors += b'"ok":true' not in answer[:100]
        time.sleep(0.01)
    print(json.dumps({"times_ms": times, "errors": errors}), flush=True)


def main():
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "probe":
        probe(path, float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5], 0))
        return
    if mode == "hold":
        hold(path, int(sys.argv[3]))
        return
    n, pid, addrs, read = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    line = lookup_line(pid, addrs)
    say("request bytes", len(line))
    reads = read.split(",")  # one mode per connection, cycled
    threads = [threading.Thread(target=flood, args=(path, i, line, reads[i % len(reads)]),
                                daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(3600)


if __name__ == "__main__":
    main()
