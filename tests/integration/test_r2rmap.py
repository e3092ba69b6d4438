#!/usr/bin/env python3
"""ReadyToRun perf maps (*.ni.r2rmap), built by hand from the spec (no crossgen2 on Debian):
lookups by image (name, name.dll, path, signature) and RVA, crossgen1's headerless
<name>.ni.{MVID}.map; by pid and absolute address through
a live process that maps a file named <image>.dll, through /tmp/perfinfo-<pid>.map, and through
an r2rmap found only in an --r2rmap-dir; JIT sources keep precedence; rejected headers."""

import json
import os
import subprocess
import sys
import time

import jitdump
from harness import MAPPER, Harness, check, hexaddr, wait_until

h = Harness(__doc__)
SIG = "00112233445566778899AABBCCDDEEFF"
FIX = {}



def r2rmap(records, sig=SIG, version=1, eol="\n", header=None):
    lines = header if header is not None else [
        f"FFFFFFFF 00 {sig}", f"FFFFFFFE 00 {version}", "FFFFFFFD 00 2", "FFFFFFFC 00 3",
        "FFFFFFFB 00 1"]
    lines = lines + [f"{rva:08X} {length:02X} {name}" for rva, length, name in records]
    return "".join(l + eol for l in lines).encode()


FOO = [(0x1000, 0x20, "Foo.Program::Main(string[])"),
       (0x1020, 0x140, "Foo.Worker`1[System.__Canon]::Run(int32, class System.String)"),
       (0x8000, 0x10, "Foo.Program::Main(string[])")]  # the cold part of Main
BAR = [(0x2000, 0x30, "Bar.Lib::Compute()")]


def lookup(*args):
    res = h.client("lookup", "--json", *args)
    docs = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    return res, docs


def spawn_mapper(image_file):
    proc = h.spawn([sys.executable, "-c", MAPPER, image_file], stdout=subprocess.PIPE,
                   stdin=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    check(line.strip().isdigit(), f"mapper printed {line!r}")
    return proc.pid, int(line)


def dll(name):
    path = os.path.join(FIX["app"], name + ".dll")
    with open(path, "wb") as f:
        f.write(b"MZ" + b"\0" * (0x10000 - 2))  # 64 KiB: RVAs below 0x10000 are inside
    return path


@h.setup
def write_maps_and_start():
    FIX["app"] = os.path.join(h.root, "app")
    FIX["extra"] = os.path.join(h.root, "r2r")
    os.mkdir(FIX["app"])
    os.mkdir(FIX["extra"])
    h.write_file(os.path.join(h.watch_dir, "Foo.ni.r2rmap"), r2rmap(FOO, eol="\r\n"))
    h.write_file(os.path.join(FIX["extra"], "Bar.ni.r2rmap"), r2rmap(BAR, sig="AB" * 16))
    h.start_daemon(["--r2rmap-dir", FIX["extra"]])

    def ready():
        res, docs = lookup("--image", "Foo", "0x1010")
        return res.returncode == 0 and docs and docs[0].get("found")
    wait_until(ready, 10, "Foo.ni.r2rmap to be indexed")


@h.case
def lookup_by_image_name_dll_path_and_signature():
    for key in ("Foo", "Foo.dll", "/opt/app/bin/Foo.dll", SIG, SIG.lower()):
        res, docs = lookup("--image", key, "0x1010", "1024", "0x8004", "0x5000", "0x100000000")
        check(res.returncode == 0, f"--image {key}: exit {res.returncode}: {res.stderr}")
        check(len(docs) == 5, f"--image {key}: {len(docs)} answers")
        a = docs[0]
        check(a.get("found") and a["name"] == FOO[0][2] and a["offset"] == 0x10
              and a["origin"] == "r2rmap" and a.get("image") == "Foo"
              and int(a["start"], 16) == 0x1000, f"--image {key} 0x1010: {a}")
        check(docs[1].get("found") and docs[1]["name"] == FOO[1][2] and docs[1]["offset"] == 4,
              f"--image {key} 0x1024: {docs[1]}")
        check(docs[2].get("found") and docs[2]["name"] == FOO[0][2] and docs[2]["offset"] == 4,
              f"--image {key} 0x8004 (cold part): {docs[2]}")
        check(not docs[3]["found"] and not docs[4]["found"], f"--image {key}: {docs[3:]}")


@h.case
def text_output_and_origin_filter():
    res = h.client("lookup", "--image", "Foo", "0x1010")
    check(res.returncode == 0 and res.stdout.split("\t")[1:3] ==
          [FOO[0][2] + "+0x10", "r2rmap\n"], f"text: {res.stdout!r} {res.stderr!r}")
    _, docs = lookup("--image", "Foo", "--origin", "r2rmap", "0x1010")
    check(docs[0]["found"], f"--origin r2rmap: {docs}")
    _, docs = lookup("--image", "Foo", "--origin", "jitdump", "0x1010")
    check(not docs[0]["found"], f"--origin jitdump: {docs}")


@h.case
def unknown_image_is_an_error():
    res = h.client("lookup", "--image", "NoSuchImage", "0x1010")
    check(res.returncode == 1 and "NoSuchImage" in res.stderr,
          f"exit {res.returncode}, stderr {res.stderr!r}")


@h.case
def image_found_only_in_r2rmap_dir():
    _, docs = lookup("--image", "Bar.dll", "0x2010")
    check(docs and docs[0].get("found") and docs[0]["name"] == BAR[0][2], f"{docs}")
    _, docs = lookup("--image", "ab" * 16, "0x2010")
    check(docs and docs[0].get("found"), f"by signature after loading: {docs}")


@h.case
def crossgen1_headerless_map_named_by_mvid():
    mvid = "{0D2A1B3C-4D5E-6F70-8192-A3B4C5D6E7F8}"
    h.write_file(os.path.join(h.watch_dir, f"Old.ni.{mvid}.map"),
                 r2rmap([(0x3000, 0x18, "Old::Method()")], header=[]))

    def found(key):
        res, docs = lookup("--image", key, "0x3010")
        return res.returncode == 0 and docs[0].get("found") and docs[0]["name"] == "Old::Method()"
    wait_until(lambda: found("Old"), 5, "Old.ni.{MVID}.map to answer by name")
    check(found(mvid) and found(mvid.strip("{}").lower()), "by MVID")


@h.case
def bad_headers_reject_the_file_with_one_log_line():
    bad = {
        "OutOfOrder": ["FFFFFFFF 00 " + SIG, "FFFFFFFD 00 2"],
        "Repeated": ["FFFFFFFF 00 " + SIG, "FFFFFFFF 00 " + SIG],
        "ShortSig": ["FFFFFFFF 00 " + SIG[:-1], "FFFFFFFE 00 1"],
        "Length": ["FFFFFFFF 00 " + SIG, "FFFFFFFE 01 1"],
        "WrongToken": [],
    }
    for name, header in bad.items():
        h.write_file(os.path.join(h.watch_dir, f"{name}.ni.r2rmap"),
                     r2rmap([(0x1000, 0x10, "X::Y()")], header=header))
    for name in bad:
        wait_until(lambda: [l for l in h.daemon.log_lines()
                            if f"{name}.ni.r2rmap" in l and "file rejected" in l],
                   5, f"the log line rejecting {name}.ni.r2rmap")
        lines = [l for l in h.daemon.log_lines() if f"{name}.ni.r2rmap: offset" in l]
        check(len(lines) == 1, f"{name}: want one log line, got {lines}")
        res, docs = lookup("--image", name, "0x1004")
        check(res.returncode == 1 or not docs[0]["found"], f"{name} answered: {docs}")
    # An unknown version: header read, records refused.
    h.write_file(os.path.join(h.watch_dir, "Future.ni.r2rmap"),
                 r2rmap([(0x1000, 0x10, "X::Y()")], version=2))
    wait_until(lambda: any("Future.ni.r2rmap" in l and "version 2 is not supported" in l
                           for l in h.daemon.log_lines()), 5, "the refusal of version 2")
    res, docs = lookup("--image", "Future", "0x1004")
    check(res.returncode == 1 or not docs[0]["found"], f"version 2 answered: {docs}")


@h.case
def pid_lookup_through_proc_maps_with_jit_precedence():
    pid, base = spawn_mapper(dll("Foo"))
    FIX["foo_pid"], FIX["foo_base"] = pid, base
    queries = [(base + 0x1010, None), (base + 0x8004, None), (base + 0x5000, None),
               (base - 0x10, None)]
    a = h.lookup(pid, queries)
    check(a[0].get("found") and a[0]["name"] == FOO[0][2] and a[0]["origin"] == "r2rmap"
          and a[0].get("image") == "Foo" and a[0]["offset"] == 0x10
          and int(a[0]["start"], 16) == base + 0x1000, f"base+0x1010: {a[0]}")
    check(a[1].get("found") and a[1]["offset"] == 4, f"base+0x8004: {a[1]}")
    check(not a[2]["found"] and not a[3]["found"], f"outside methods: {a[2:]}")
    # A jitdump of the same process covering base+0x1000 takes precedence there.
    w = jitdump.Writer(pid)
    now = time.monotonic_ns()
    h.write_file(h.dump_path(pid), w.header(now), w.load(now + 1, base + 0x1000, 0x20,
                                                         "jitted_over_r2r", 1))
    h.wait_resolves(pid, base + 0x1010, "jitted_over_r2r")
    a = h.lookup(pid, [(base + 0x1010, None), (base + 0x1024, None)])
    check(a[0]["origin"] == "jitdump" and a[1].get("found") and a[1]["origin"] == "r2rmap",
          f"precedence: {a}")
    res, docs = lookup("--pid", pid, "--origin", "r2rmap", hexaddr(base + 0x1010))
    check(docs[0].get("found") and docs[0]["origin"] == "r2rmap", f"--origin r2rmap: {docs}")
    res, docs = lookup("--pid", pid, "--origin", "jitdump", hexaddr(base + 0x1024))
    check(not docs[0]["found"], f"--origin jitdump: {docs}")


@h.case
def pid_lookup_survives_process_exit():
    pid, base = FIX["foo_pid"], FIX["foo_base"]
    h.kill_child(pid)
    a = h.lookup(pid, [(base + 0x1030, None)])
    check(a[0].get("found") and a[0]["name"] == FOO[1][2], f"after exit: {a[0]}")


@h.case
def pid_lookup_loads_from_r2rmap_dir():
    pid, base = spawn_mapper(dll("Bar"))
    a = h.lookup(pid, [(base + 0x2010, None)])
    check(a[0].get("found") and a[0]["name"] == BAR[0][2] and a[0]["origin"] == "r2rmap"
          and a[0].get("image") == "Bar", f"Bar via --r2rmap-dir: {a[0]}")


@h.case
def pid_lookup_through_perfinfo():
    pid = h.sleeper()
    base = 0x7E5500000000
    path = f"/tmp/perfinfo-{pid}.map"
    try:
        h.write_file(path, (f"ImageLoad;/usr/share/dotnet/shared/Foo.dll;{{{SIG}}};"
                            f"{hexaddr(base)};\nImageLoad;/app/jitonly.dll;{{x}};(nil);\n").encode())
        a = h.lookup(pid, [(base + 0x1010, None), (base + 0x9000, None)])
        check(a[0].get("found") and a[0]["name"] == FOO[0][2] and a[0]["origin"] == "r2rmap",
              f"perfinfo base: {a[0]}")
        check(not a[1]["found"], f"{a[1]}")
    finally:
        os.unlink(path)


h.main()
