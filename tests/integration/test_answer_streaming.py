#!/usr/bin/env python3
"""Large answers other than lookups stream with bounded memory, replayed by a real unprivileged
user (`jsbob`, tests/integration/users.py):

- symbols: bob's /tmp/perfinfo-<pid>.map places his 1 MB Bob.ni.r2rmap at 1,000 bases of his own
  process, which makes his `symbols` answer about 1 GB. He asks for it on the real socket and
  reads it slowly (answer_reader.py parses every element as it arrives); the daemon's peak RSS
  grows by far less than the answer, and the answer is complete, ordered and valid JSON.
- perfmap: `jitsym perfmap -o -` of the same process, as bob: the client writes the perf map
  as the answer arrives (its peak RSS stays small) and every line is there.
- explain: bob's perf map redefines one address 300,000 times with 1 KiB names; `explain` of that
  address lists the newest 1,000 definitions and the daemon's peak RSS stays small (it never
  holds the other definitions' names)."""

import json
import os
import shutil
import subprocess
import sys
import threading

import users
from harness import status_kb, asan_build, Harness, check, hexaddr, wait_until

h = Harness(__doc__)
S = {}
SIG = "00112233445566778899AABBCCDDEEFF"
# The users cannot run an interpreter installed under /root.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
ASAN = False
# Bob's image: RECORDS methods of 64 bytes with names of about NAME_BYTES, so that each base
# adds about RECORDS * 1,000 bytes of answer.
RECORDS = 1000
NAME_BYTES = 910
STRIDE = 0x40
IMAGE_BASE = 0x7E5500000000
IMAGE_SPACING = 0x100000  # well beyond the image's last method: no two placements overlap
# The bound on the daemon's growth while it answers (its output buffer is 1 MiB, the rest is
# the cursor's); before answers streamed it grew by about twice the answer.
RSS_LIMIT_MIB = 200


def daemon_pid():
    return h.daemon.proc.pid


class RssSampler:
    """Samples a process's VmRSS every 50 ms in a thread; its peak is also read from VmHWM,
    which is reset first (clear_refs 5) so that it measures from now on."""

    def __init__(self, pid):
        self.pid = pid
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        self.before = status_kb(pid, "VmRSS")
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, status_kb(self.pid, "VmRSS"))

    def stop(self):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, status_kb(self.pid, "VmHWM"), status_kb(self.pid, "VmRSS"))
        return self.before, self.peak


def method_name(i):
    head = f"Bob.Generated.Type{i // 10:03d}::Method{i:04d}_"
    return head + "x" * (NAME_BYTES - len(head) - len("(int32)")) + "(int32)"


def r2rmap(records):
    lines = [f"FFFFFFFF 00 {SIG}", "FFFFFFFE 00 1", "FFFFFFFD 00 2", "FFFFFFFC 00 3",
             "FFFFFFFB 00 1"]
    lines += [f"{rva:08X} {length:02X} {name}" for rva, length, name in records]
    return "".join(l + "\n" for l in lines).encode()


def read_as_bob(request, member, pace_ms):
    """answer_reader.py as bob; returns its summary and the daemon's RSS (before, peak) in KiB."""
    sampler = RssSampler(daemon_pid())
    try:
        res = users.run(users.BOB, [PYTHON, S["reader"], h.socket_path, json.dumps(request),
                                    member, pace_ms], timeout=280)
    finally:
        before, peak = sampler.stop()
    check(res.returncode == 0, f"the reader failed: {res.stderr.strip()[-800:]}")
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    check("error" not in summary, f"the reader: {summary.get('error')}")
    return summary, before, peak


@h.setup
def setup():
    global ASAN
    ASAN = asan_build(h.jitsymd)
    users.ensure_both()
    S["client"] = users.share_like_tmp(h)
    S["reader"] = os.path.join(h.root, "answer_reader.py")
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "answer_reader.py"),
                S["reader"])
    os.chmod(S["reader"], 0o755)
    h.start_daemon()
    # Under ASan (quarantine, shadow memory, slower) a smaller answer makes the same point.
    S["bases"] = 400 if ASAN else 1000
    records = [(0x1000 + i * STRIDE, STRIDE, method_name(i)) for i in range(RECORDS)]
    users.write(users.BOB, os.path.join(h.watch_dir, "Bob.ni.r2rmap"), r2rmap(records))
    S["pid"] = h.sleep_as(users.BOB)
    S["perfinfo"] = f"/tmp/perfinfo-{S['pid']}.map"
    S["bases_list"] = [IMAGE_BASE + k * IMAGE_SPACING for k in range(S["bases"])]
    users.write(users.BOB, S["perfinfo"],
                "".join(f"ImageLoad;/app/Bob.dll;{{{SIG}}};{hexaddr(b)};\n"
                        for b in S["bases_list"]))

    def resolves():
        last = S["bases_list"][-1] + 0x1010
        res = users.client(users.BOB, S["client"], h.socket_path, "lookup", "--pid", S["pid"],
                           "--json", hexaddr(last))
        return res.returncode == 0 and method_name(0) in res.stdout
    wait_until(resolves, 30, "bob's image to answer at its last base")


@h.case
def a_gigabyte_of_symbols_streams_with_the_daemons_memory_bounded():
    request = {"v": 1, "id": 7, "op": "symbols", "pid": S["pid"]}
    summary, before, peak = read_as_bob(request, "symbols", 2)
    want = S["bases"] * RECORDS
    print(f"  symbols: {summary['bytes'] / 1e9:.2f} GB, {summary['elements']} entries in "
          f"{summary['seconds']} s; daemon RSS {before >> 10} MiB before, peak {peak >> 10} MiB "
          f"(+{(peak - before) >> 10} MiB)")
    check(summary["elements"] == want, f"{summary['elements']} entries, wanted {want}")
    check(summary["ordered"], "entries are not sorted by start, or overlap")
    rest = summary["rest"]
    check(rest == {"v": 1, "id": 7, "ok": True, "pid": S["pid"], "incarnation": 0,
                   "symbols": []}, f"the answer around its entries: {rest}")
    first, last = summary["first"], summary["last"]
    check(first == {"start": hexaddr(S["bases_list"][0] + 0x1000), "size": STRIDE,
                    "name": method_name(0), "origin": "r2rmap", "image": "Bob"},
          f"first entry: {first}")
    check(int(last["start"], 16) == S["bases_list"][-1] + 0x1000 + (RECORDS - 1) * STRIDE
          and last["name"] == method_name(RECORDS - 1), f"last entry: {last}")
    if not ASAN:
        check(summary["bytes"] > 900e6, f"the answer is {summary['bytes']} bytes, not ~1 GB")
    check(peak - before < RSS_LIMIT_MIB << 10,
          f"the daemon grew by {(peak - before) >> 10} MiB answering "
          f"{summary['bytes'] >> 20} MiB (limit {RSS_LIMIT_MIB} MiB)")


@h.case
def perfmap_export_of_a_gigabyte_keeps_the_client_small():
    proc = users.spawn(users.BOB, [S["client"], "--socket", h.socket_path, "perfmap", "--pid",
                                   S["pid"], "-o", "-"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    lines = 0
    size = 0
    head = b""
    last = b""
    # The client's peak, from its own VmHWM (setpriv has exec'd it by the first output; the
    # rusage of a child would count the test's own memory, which the fork shared).
    peak = 0
    while True:
        chunk = proc.stdout.read(1 << 20)
        if not chunk:
            break
        try:
            peak = max(peak, status_kb(proc.pid, "VmHWM"))
        except OSError:
            pass
        if len(head) < 4096:
            head += chunk[:4096]
        lines += chunk.count(b"\n")
        size += len(chunk)
        last = (last + chunk)[-4096:]
    err = proc.stderr.read().decode(errors="replace")
    proc.wait()
    want = S["bases"] * RECORDS
    print(f"  perfmap: {size / 1e9:.2f} GB, {lines} lines; client peak RSS {peak >> 10} MiB")
    check(proc.returncode == 0, f"jitsym perfmap exited {proc.returncode}: {err.strip()[-500:]}")
    check(lines == want, f"{lines} perf map lines, wanted {want}")
    base = S["bases_list"][0]
    check(head.startswith(f"{base + 0x1000:x} 40 {method_name(0)}\n".encode()),
          f"the first line: {head[:200]!r}")
    end = S["bases_list"][-1] + 0x1000 + (RECORDS - 1) * STRIDE
    check(last.endswith(f"{end:x} 40 {method_name(RECORDS - 1)}\n".encode()),
          f"the last line: {last[-200:]!r}")
    limit = RSS_LIMIT_MIB * (4 if ASAN else 1)
    check(0 < peak < limit << 10,
          f"the client's peak RSS was {peak >> 10} MiB for a {size >> 20} MiB map")


@h.case
def explain_of_an_address_redefined_often_stays_bounded():
    # A fresh daemon: memory the allocator kept from the cases before would hide the growth.
    h.daemon.stop()
    h.start_daemon()
    pid = h.sleep_as(users.BOB)
    redefinitions = 100_000 if ASAN else 300_000
    name = "Bob.Hot::Reused_" + "y" * 1000
    addr = 0x40000000
    users.write(users.BOB, os.path.join(h.watch_dir, f"perf-{pid}.map"),
                "".join(f"{addr:x} 40 {name}{i}\n" for i in range(redefinitions)))

    def indexed():
        res = users.client(users.BOB, S["client"], h.socket_path, "lookup", "--pid", pid,
                           "--json", hexaddr(addr + 8))
        return res.returncode == 0 and f"{name}{redefinitions - 1}" in res.stdout
    wait_until(indexed, 60, "bob's perf map to be indexed whole")
    request = {"v": 1, "op": "explain", "pid": pid, "addr": hexaddr(addr + 8)}
    sampler = RssSampler(daemon_pid())
    try:
        res = users.run(users.BOB, [PYTHON, "-c", EXPLAIN_ONCE, h.socket_path,
                                    json.dumps(request)], timeout=200)
    finally:
        before, peak = sampler.stop()
    check(res.returncode == 0, f"explain failed: {res.stderr.strip()[-500:]}")
    answer = json.loads(res.stdout)
    check(answer.get("ok") is True, f"explain answered {str(answer)[:300]}")
    e = answer["explain"]
    print(f"  explain: {len(res.stdout) >> 10} KiB, {len(e['definitions'])} definitions listed, "
          f"{e.get('definitions_omitted')} omitted; daemon RSS {before >> 10} MiB before, "
          f"peak {peak >> 10} MiB (+{(peak - before) >> 10} MiB)")
    check(len(e["definitions"]) == 1000 and e["definitions_omitted"] == redefinitions - 1000,
          f"{len(e['definitions'])} definitions, {e.get('definitions_omitted')} omitted")
    newest = e["definitions"][-1]
    check(newest["name"] == f"{name}{redefinitions - 1}" and newest.get("picked"),
          f"the newest definition: {str(newest)[:200]}")
    check(e["definitions"][0]["name"] == f"{name}{redefinitions - 1000}",
          f"the oldest listed: {e['definitions'][0]['name'][-20:]}")
    check(answer["explain"]["answer"]["name"] == newest["name"], "explain's answer")
    check(peak - before < (100 << 10), f"the daemon grew by {(peak - before) >> 10} MiB for "
          f"an explain answer of {len(res.stdout) >> 10} KiB (limit 100 MiB)")


# One request on a fresh connection, the answer line printed as it came.
EXPLAIN_ONCE = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
data = b""
while not data.endswith(b"\n"):
    chunk = s.recv(1 << 20)
    if not chunk:
        sys.exit("closed by jitsymd")
    data += chunk
sys.stdout.write(data.decode())
"""


def cleanup():
    if "perfinfo" in S and os.path.exists(S["perfinfo"]):
        os.unlink(S["perfinfo"])


try:
    h.main()
finally:
    cleanup()
