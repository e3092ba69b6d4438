#!/usr/bin/env python3
"""`jitsym annotate` on perf script text written by the test around a generated jitdump that
reuses one address (no perf needed): the exact expected bytes, sample times choosing the code,
no time meaning the latest code, hostile lines (binary bytes, CR, very long, frames before any
sample, unknown pids) passed through untouched, and large input streamed in batches."""

import subprocess
import sys
import threading
import time

import jitdump
from harness import Harness, check

h = Harness(__doc__)
FIX = {}
A = 0x7f0000200000
T0 = 100_000_000_000  # 100 s, CLOCK_MONOTONIC ns


def annotate(data, *args):
    res = subprocess.run([h.jitsym, "--socket", h.socket_path, "annotate"] + list(args),
                         input=data, capture_output=True, timeout=120)
    check(res.returncode == 0, f"annotate exited {res.returncode}: {res.stderr[-500:]}")
    return res.stdout


@h.setup
def dump():
    h.start_daemon()
    pid = h.sleeper()
    w = jitdump.Writer(pid)
    h.write_file(h.dump_path(pid), w.header(T0),
                 w.load(T0, A, 0x100, "old_fn", 1),
                 w.load(T0 + 500_000, A, 0x100, "new_fn", 2))  # same address 0.5 ms later
    h.wait_resolves(pid, A + 1, "new_fn")
    FIX.update(pid=pid, path=h.dump_path(pid))


def sample(pid, secs, frames, comm="app"):
    lines = [f"{comm:>16} {pid}/{pid} [000] {secs}: 1 cpu-clock: \n".encode()]
    for ip, rest in frames:
        lines.append(f"\t{ip:16x} {rest}\n".encode())
    return b"".join(lines) + b"\n"


@h.case
def exact_bytes_and_time_choice():
    pid, path = FIX["pid"], FIX["path"]
    anon = "[unknown] (//anon)"
    text = (sample(pid, "100.000200", [(A + 0x10, anon), (0xffffffff81000000, "k+0x1 (k)")]) +
            sample(pid, "100.000700", [(A + 0x20, f"[unknown] (/tmp/perf-{pid}.map)")]) +
            sample(pid, "100.000499", [(A + 0x30, anon)]) +
            sample(pid, "100.000500", [(A + 0x30, anon)]))
    want = (sample(pid, "100.000200", [(A + 0x10, f"old_fn+0x10 (jitdump:{path})"),
                                       (0xffffffff81000000, "k+0x1 (k)")]) +
            sample(pid, "100.000700", [(A + 0x20, f"new_fn+0x20 (jitdump:{path})")]) +
            sample(pid, "100.000499", [(A + 0x30, f"old_fn+0x30 (jitdump:{path})")]) +
            # printed microseconds stand for the end of the microsecond: new_fn was loaded then
            sample(pid, "100.000500", [(A + 0x30, f"new_fn+0x30 (jitdump:{path})")]))
    got = annotate(text)
    check(got == want, f"got:\n{got.decode(errors='replace')}\nwant:\n{want.decode()}")
    # Nanosecond times (perf script --ns).
    got = annotate(sample(pid, "100.000499999", [(A, anon)]) +
                   sample(pid, "100.000500000", [(A, anon)]))
    check(got.count(b"old_fn+0x0") == 1 and got.count(b"new_fn+0x0") == 1, got.decode())


@h.case
def no_time_is_the_latest_code():
    pid = FIX["pid"]
    text = f"{pid} \n\t{A + 4:16x} [unknown] (//anon)\n\n{pid}      {A + 8:x} [unknown]\n".encode()
    got = annotate(text).decode()
    check(got.count("new_fn+0x") == 2 and "old_fn" not in got, got)
    check(got.splitlines()[3] == f"{pid}      {A + 8:x} new_fn+0x8 (jitdump:{FIX['path']})", got)


THREADED = r"""
import threading, time
t = threading.Thread(target=time.sleep, args=(600,), daemon=True)
t.start()
print(t.native_id, flush=True)
time.sleep(600)
"""


@h.case
def a_lone_thread_id_means_its_process():
    # perf script -F tid prints the thread id alone; the jitdump is named after the process.
    proc = h.spawn([sys.executable, "-c", THREADED], stdout=subprocess.PIPE,
                   stdin=subprocess.DEVNULL, text=True)
    tid = int(proc.stdout.readline())
    check(tid != proc.pid, "the thread has the process's id")
    w = jitdump.Writer(proc.pid)
    h.write_file(h.dump_path(proc.pid), w.header(T0), w.load(T0, A, 0x100, "threaded_fn", 1))
    h.wait_resolves(proc.pid, A, "threaded_fn")
    got = annotate(f"app {tid} 100.000200: \n\t{A + 5:x} [unknown] (//anon)\n\n".encode())
    check(b"threaded_fn+0x5 (jitdump:" in got, got.decode())


@h.case
def samples_of_several_processes_interleaved():
    pids = [FIX["pid"]]
    for k in range(3):
        pid = h.sleeper()
        w = jitdump.Writer(pid)
        h.write_file(h.dump_path(pid), w.header(T0), w.load(T0, A, 0x100, f"proc{k}_fn", 1))
        h.wait_resolves(pid, A, f"proc{k}_fn")
        pids.append(pid)
    text = b"".join(sample(pids[i % 4], "100.000700", [(A + i % 4, "[unknown] (//anon)")])
                    for i in range(400))
    got = annotate(text, "--batch", "7").decode()
    want = ["new_fn+0x0", "proc0_fn+0x1", "proc1_fn+0x2", "proc2_fn+0x3"]
    names = [l.split()[1] for l in got.splitlines() if l.startswith("\t")]
    check(names == [want[i % 4] for i in range(400)], f"misrouted: {names[:8]}")


@h.case
def hostile_lines_pass_through():
    pid = FIX["pid"]
    junk = [b"\tdeadbeef [unknown] (//anon)\n",             # a frame before any sample
            b"\x00\xff\xfe binary \x80\n",
            b"crlf line\r\n",
            b"x" * 20000 + b"\n",
            f"app 4194000/4194000 1.000000: 1 c: {A:x} [unknown] (//anon)\n".encode(),  # no such pid
            b"\t" + b"f" * 17 + b" [unknown] (//anon)\n",  # more than 64 bits
            b"app -1/-1 [000] 5.0: 1 cpu-clock: \n\t  7f00 [unknown] ([unknown])\n\n"]
    text = b"".join(junk)
    got = annotate(text)
    check(got == text, f"changed: {got[:300]!r}")
    # The same junk around a real sample: only the sample's frame changes.
    real = sample(pid, "100.000200", [(A, "[unknown] (//anon)")])
    got = annotate(text + real + text)
    check(got.startswith(text) and got.endswith(text) and b"old_fn+0x0" in got, "mixed input")


@h.case
def large_input_streams_in_batches():
    pid = FIX["pid"]
    one = sample(pid, "100.000700", [(A + 1, "[unknown] (//anon)"), (A + 2, "[unknown] (//anon)")])
    n = 40000
    t0 = time.monotonic()
    got = annotate(one * n, "--batch", "1000")
    print(f"  {2 * n} frames in {time.monotonic() - t0:.2f}s")
    check(got.count(b"new_fn+0x1 ") == n and got.count(b"new_fn+0x2 ") == n, "answers lost")
    folded = annotate(one * 10, "--folded").decode()
    check(folded == "app;new_fn;new_fn 10\n", f"folded: {folded!r}")


@h.case
def piped_perf_script_is_cut_by_size_and_pauses_not_by_pipe_reads():
    # perf script writes some forty lines at a time: each write used to become a request.
    pid = FIX["pid"]
    one = sample(pid, "100.000700", [(A + 1, "[unknown] (//anon)"), (A + 2, "[unknown] (//anon)")])
    lines = (one * 3000).splitlines(keepends=True)  # 12,000 lines
    writer = ("import sys, time\n"
              "lines = sys.stdin.buffer.read().splitlines(keepends=True)\n"
              "for i in range(0, len(lines), 40):\n"
              "    sys.stdout.buffer.write(b''.join(lines[i:i + 40]))\n"
              "    sys.stdout.flush()\n"
              "    time.sleep(0.0005)\n")
    stats = lambda: int(subprocess.run([h.jitsym, "--socket", h.socket_path, "stats", "--json"],
                                       capture_output=True, text=True).stdout
                        .split('"queries":')[1].split(",")[0])
    before = stats()
    producer = subprocess.Popen([sys.executable, "-c", writer], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
    consumer = subprocess.Popen([h.jitsym, "--socket", h.socket_path, "annotate"],
                                stdin=producer.stdout, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    producer.stdout.close()
    t0 = time.monotonic()
    feed = threading.Thread(target=producer.communicate, args=(b"".join(lines),))
    feed.start()
    out, err = consumer.communicate(timeout=60)
    feed.join()
    elapsed = time.monotonic() - t0
    requests = stats() - before - 1
    print(f"  {len(lines)} lines in {len(lines) // 40} writes over {elapsed:.2f}s: "
          f"{requests} requests")
    check(consumer.returncode == 0, f"annotate exited {consumer.returncode}: {err[-300:]}")
    check(out.count(b"new_fn+0x1 ") == 3000 and out.count(b"new_fn+0x2 ") == 3000,
          "answers lost")
    check(requests <= elapsed / 0.010 + 2 and requests < 100,
          f"{requests} requests for {len(lines) // 40} writes in {elapsed:.2f}s")


h.main()
