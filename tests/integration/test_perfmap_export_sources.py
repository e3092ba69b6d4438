#!/usr/bin/env python3
"""`jitsym perfmap` over every kind of source at once, written by the test (no perf needed): a
live process maps Foo.dll (ReadyToRun map: image base applied), has a jitdump (code overwritten
in part, moved away, and over the image) and a perf map (overlapping the jitdump, and fresh).
The export must be exactly the hand-computed expectation: jitdump over perf map over image,
superseded code gone, partly overwritten code as the pieces still its own."""

import os
import subprocess
import sys
import time

import jitdump
from harness import MAPPER, Harness, check, wait_until

h = Harness(__doc__)
SIG = "00112233445566778899AABBCCDDEEFF"
FIX = {}


J = 0x7f0000100000  # JIT code area


def r2rmap(records):
    lines = [f"FFFFFFFF 00 {SIG}", "FFFFFFFE 00 1", "FFFFFFFD 00 2", "FFFFFFFC 00 3",
             "FFFFFFFB 00 1"]
    lines += [f"{rva:08X} {length:02X} {name}" for rva, length, name in records]
    return "".join(l + "\n" for l in lines).encode()


@h.setup
def sources():
    app = os.path.join(h.root, "app")
    os.mkdir(app)
    dll = os.path.join(app, "Foo.dll")
    with open(dll, "wb") as f:
        f.write(b"MZ" + b"\0" * (0x10000 - 2))
    h.write_file(os.path.join(h.watch_dir, "Foo.ni.r2rmap"),
                 r2rmap([(0x1000, 0x20, "Foo::Main"), (0x1020, 0x40, "Foo::Run")]))
    h.start_daemon()
    proc = h.spawn([sys.executable, "-c", MAPPER, dll], stdout=subprocess.PIPE,
                   stdin=subprocess.DEVNULL, text=True)
    base = int(proc.stdout.readline())
    pid = proc.pid
    w = jitdump.Writer(pid)
    t = time.monotonic_ns()
    h.write_file(h.dump_path(pid), w.header(t),
                 w.load(t + 1, J + 0x000, 0x100, "jit_a", 1),
                 w.load(t + 2, J + 0x080, 0x100, "jit_b_over_a", 2),  # a keeps [0, 0x80)
                 w.load(t + 3, J + 0x400, 0x40, "jit_moved", 3),
                 w.move(t + 4, J + 0x400, J + 0x600, 0x40, 3),       # now at 0x600
                 w.load(t + 5, base + 0x1000, 0x10, "jit_over_image", 4))
    h.write_file(os.path.join(h.watch_dir, f"perf-{pid}.map"),
                 f"{J + 0x100:x} 200 perfmap_under_b\n{J + 0x2000:x} 30 perfmap_fresh\n".encode())
    FIX.update(pid=pid, base=base)
    wait_until(lambda: h.lookup_one(pid, J + 0x2000).get("found") and
               h.lookup_one(pid, base + 0x1000).get("name") == "jit_over_image", 15,
               "all three sources to be indexed")


@h.case
def export_is_the_expected_map():
    base = FIX["base"]
    want = sorted([
        (J + 0x000, 0x80, "jit_a"),
        (J + 0x080, 0x100, "jit_b_over_a"),
        (J + 0x180, 0x180, "perfmap_under_b"),   # [0x100, 0x300) minus the jitdump's part
        (J + 0x600, 0x40, "jit_moved"),
        (J + 0x2000, 0x30, "perfmap_fresh"),
        (base + 0x1000, 0x10, "jit_over_image"),
        (base + 0x1010, 0x10, "Foo::Main"),       # the image's rest of Main
        (base + 0x1020, 0x40, "Foo::Run"),
    ])
    res = h.client("perfmap", "--pid", FIX["pid"], "-o", "-")
    check(res.returncode == 0, f"{res.returncode}: {res.stderr}")
    got = []
    for line in res.stdout.splitlines():
        start, size, name = line.split(" ", 2)
        got.append((int(start, 16), int(size, 16), name))
    check(got == want, "export differs:\n  got  " +
          "\n       ".join(f"{s:x} {n:x} {m}" for s, n, m in got) + "\n  want " +
          "\n       ".join(f"{s:x} {n:x} {m}" for s, n, m in want))


@h.case
def symbols_request_by_hand():
    conn = h.raw_connection()
    try:
        ans = conn.request({"op": "symbols", "pid": FIX["pid"], "id": 9})
        check(ans.get("ok") and ans.get("id") == 9 and ans.get("pid") == FIX["pid"],
              f"answer: {str(ans)[:300]}")
        origins = {s["origin"] for s in ans["symbols"]}
        check(origins == {"jitdump", "perfmap", "r2rmap"}, f"origins {origins}")
        check(all(s.get("image") == "Foo" for s in ans["symbols"] if s["origin"] == "r2rmap"),
              "image ranges without their image")
        for bad in ({"op": "symbols"}, {"op": "symbols", "pid": "x"}, {"op": "symbols", "pid": 0}):
            a = conn.request(bad)
            check(not a.get("ok") and a["error"]["code"] == "bad_request", f"{bad}: {a}")
        a = conn.request({"op": "symbols", "pid": 4194000})
        check(not a.get("ok") and a["error"]["code"] == "not_found", f"unknown pid: {a}")
    finally:
        conn.close()


h.main()
