#!/usr/bin/env python3
"""Native (ELF/DWARF) symbolization against programs compiled during the test: image lookups by
path (virtual addresses and --file-offset) and by --build-id; a stripped binary whose debug file is
found by build-id under --debug-dir, one found by .gnu_debuglink, one with only .dynsym, one with
MiniDebugInfo; a live process queried by pid (its executable and libc), and the same addresses
after it exits; hostile files. The large-binary comparison with llvm-symbolizer is in
test_native_llvm.py."""

import json
import os
import re
import shutil
import struct
import subprocess
import sys

from debuginfod_server import DebuginfodServer
from harness import Harness, check, hexaddr, wait_until

h = Harness(__doc__)
FIX = {}


PROGRAM = r"""
#include <stdio.h>
#include <unistd.h>
volatile int sink = 1;
static inline __attribute__((always_inline)) int helper(int x) {
  return x * sink + 3; /* HELPER_LINE */
}
__attribute__((noinline)) int worker(int x) {
  return helper(x) + helper(x + sink); /* CALL_LINE */
}
int main(int argc, char **argv) {
  printf("%lx %lx\n", (unsigned long)(void *)&worker, (unsigned long)(void *)&getpid);
  fflush(stdout);
  if (argc > 1) pause();
  return worker(argc) == 42;
}
"""
LIBRARY = r"""
volatile int lib_sink;
static __attribute__((noinline)) int lib_hidden(int x) { return x * lib_sink; }
int lib_exported(int x) { return lib_hidden(x) + 1; }
"""


def line_of(marker):
    for i, line in enumerate(PROGRAM.lstrip("\n").splitlines(), 1):
        if marker in line:
            return i
    raise AssertionError(marker)


HELPER_LINE = line_of("HELPER_LINE")
CALL_LINE = line_of("CALL_LINE")


def run(*args, cwd=None):
    res = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd)
    check(res.returncode == 0, f"{' '.join(map(str, args))} failed: {res.stderr.strip()[:500]}")
    return res.stdout


def symbol(path, name, dynamic=False):
    out = run("nm", "-D" if dynamic else "-a", "--defined-only", path)
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise AssertionError(f"{name} not in {path}")


def elf_build_id(path):
    out = run("readelf", "-n", path)
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


def vaddr_to_offset(path, vaddr):
    """File offset of a virtual address, from the PT_LOAD program headers (ELF64 LE)."""
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    raise AssertionError(f"{hexaddr(vaddr)} not in a PT_LOAD of {path}")


def lookup(*args, addrs=()):
    res = h.client("lookup", "--json", *args, *[hexaddr(a) for a in addrs])
    check(res.returncode == 0, f"jitsym lookup {args} exited {res.returncode}: {res.stderr}")
    docs = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    check(len(docs) == len(addrs), f"{len(docs)} answers for {len(addrs)} addresses")
    return docs


def check_worker(answer, path=None, with_lines=True, source="prog.c"):
    check(answer.get("found"), f"not found: {answer}")
    check(answer.get("origin") == "elf", f"origin: {answer}")
    check(answer.get("name") == "worker", f"name: {answer}")
    if path is not None:
        check(answer.get("image") == path, f"image: {answer}")
    if with_lines:
        check(answer.get("file", "").endswith(source), f"file: {answer}")
        frames = answer.get("frames", [])
        check(frames and frames[-1]["name"] == "worker", f"frames: {answer}")


@h.setup
def compile_and_start():
    if not shutil.which("gcc"):
        raise AssertionError("gcc is needed (build-essential)")
    d = FIX["dir"] = os.path.join(h.root, "elf")
    dbg = FIX["debug_dir"] = os.path.join(h.root, "debug")
    os.makedirs(os.path.join(d, "bin", ".debug"))
    os.makedirs(dbg)
    src = os.path.join(d, "prog.c")
    with open(src, "w") as f:
        f.write(PROGRAM.lstrip("\n"))
    with open(os.path.join(d, "lib.c"), "w") as f:
        f.write(LIBRARY)
    full = FIX["full"] = os.path.join(d, "full")
    run("gcc", "-O2", "-g", "-Wl,--build-id", "-o", full, src)
    # DWARF in zlib-compressed sections (SHF_COMPRESSED).
    FIX["compressed"] = os.path.join(d, "compressed")
    run("gcc", "-O2", "-g", "-gz=zlib", "-o", FIX["compressed"], src)
    check("C" in run("readelf", "-S", "-W", FIX["compressed"]).split(".debug_info")[1]
          .splitlines()[0], "gcc -gz=zlib did not compress .debug_info")
    # Stripped, its debug file under DEBUG/.build-id/xx/yyyy.debug.
    stripped = FIX["stripped"] = os.path.join(d, "stripped")
    run("objcopy", "--only-keep-debug", full, os.path.join(d, "full.debug"))
    run("strip", "--strip-all", "-o", stripped, full)
    bid = FIX["build_id"] = elf_build_id(full)
    check(bid and elf_build_id(stripped) == bid, "gcc did not write a build id")
    os.makedirs(os.path.join(dbg, ".build-id", bid[:2]))
    shutil.move(os.path.join(d, "full.debug"), os.path.join(dbg, ".build-id", bid[:2],
                                                           bid[2:] + ".debug"))
    # No build id; a .gnu_debuglink naming a debug file in the .debug directory beside it.
    linked = FIX["linked"] = os.path.join(d, "bin", "linked")
    run("gcc", "-O2", "-g", "-Wl,--build-id=none", "-o", linked, src)
    run("objcopy", "--only-keep-debug", linked, os.path.join(d, "bin", ".debug", "linked.dbg"))
    run("strip", "--strip-all", linked)
    run("objcopy", "--add-gnu-debuglink=" + os.path.join(d, "bin", ".debug", "linked.dbg"),
        linked)
    # A shared library with only .dynsym.
    lib = FIX["lib"] = os.path.join(d, "libdyn.so")
    run("gcc", "-O2", "-shared", "-fPIC", "-o", lib, os.path.join(d, "lib.c"))
    FIX["lib_exported"] = symbol(lib, "lib_exported", dynamic=True)
    run("strip", "--strip-all", lib)
    # MiniDebugInfo: the symbol table, xz-compressed into .gnu_debugdata of a stripped binary
    # (no build id, no debug link: nothing else names its local functions).
    mini = FIX["mini"] = os.path.join(d, "mini")
    if shutil.which("xz"):
        run("gcc", "-O2", "-g", "-Wl,--build-id=none", "-o", mini + ".full", src)
        FIX["mini_worker"] = symbol(mini + ".full", "worker")
        symtab_only = os.path.join(d, "mini.symtab")
        run("objcopy", "--only-keep-debug", "--strip-debug", mini + ".full", symtab_only)
        run("xz", "-f", symtab_only)
        run("strip", "--strip-all", "-o", mini, mini + ".full")
        run("objcopy", "--add-section", ".gnu_debugdata=" + symtab_only + ".xz", mini)
    # Stripped, its debug file only on a (local) debuginfod server.
    remote = FIX["remote"] = os.path.join(d, "remote")
    with open(os.path.join(d, "remote.c"), "w") as f:
        f.write(PROGRAM.lstrip("\n") + "int remote_marker;\n")  # another build id
    run("gcc", "-O2", "-g", "-o", remote + ".full", os.path.join(d, "remote.c"))
    FIX["remote_worker"] = symbol(remote + ".full", "worker")
    run("objcopy", "--only-keep-debug", remote + ".full", remote + ".debug")
    run("strip", "--strip-all", "-o", remote, remote + ".full")
    server = DebuginfodServer()
    server.served[elf_build_id(remote)] = remote + ".debug"
    server.export(os.path.join(h.root, "debuginfod-cache"))
    FIX["worker"] = symbol(full, "worker")
    FIX["main"] = symbol(full, "main")
    h.start_daemon(["--debug-dir", dbg])


@h.case
def image_by_path_with_inlined_frames():
    worker = FIX["worker"]
    # Every address of worker: all answer worker; some have helper inlined at its line, called
    # from worker's call line.
    answers = lookup("--image", FIX["full"], addrs=range(worker, worker + 24))
    for a in answers:
        check_worker(a, FIX["full"])
        check(a["build_id"] == FIX["build_id"], f"build_id: {a}")
        check(int(a["start"], 16) == worker, f"start: {a}")
    inlined = [a for a in answers if len(a["frames"]) == 2]
    check(inlined, f"no address of worker shows helper inlined: {answers[:3]}")
    for a in inlined:
        inner, outer = a["frames"]
        check(inner["name"] == "helper" and inner["line"] == HELPER_LINE, f"inner frame: {a}")
        check(a["line"] == HELPER_LINE and a["file"] == inner["file"], f"innermost position: {a}")
        check(outer["name"] == "worker" and outer["line"] == CALL_LINE, f"outer frame: {a}")
    # Text output: one line per address.
    res = h.client("lookup", "--image", FIX["full"], hexaddr(worker), hexaddr(worker + 1))
    lines = res.stdout.splitlines()
    check(len(lines) == 2 and "\tworker+0x0\telf\t" in lines[0] and "prog.c:" in lines[0],
          f"text output: {res.stdout!r}")


@h.case
def file_offsets_and_build_id():
    worker = FIX["worker"]
    by_vaddr = lookup("--image", FIX["full"], addrs=[worker + 4])[0]
    off = vaddr_to_offset(FIX["full"], worker + 4)
    by_offset = lookup("--image", FIX["full"], "--file-offset", addrs=[off])[0]
    check_worker(by_offset)
    check(by_offset["frames"] == by_vaddr["frames"], f"{by_offset} != {by_vaddr}")
    check(int(by_offset["start"], 16) == off - 4, f"start in file offsets: {by_offset}")
    by_id = lookup("--build-id", FIX["build_id"], addrs=[worker + 4])[0]
    check(by_id["frames"] == by_vaddr["frames"], f"{by_id} != {by_vaddr}")
    res = h.client("lookup", "--build-id", "00" * 20, "0x1000")
    check(res.returncode != 0 and "00" * 20 in res.stderr, f"unknown build id: {res.stderr}")
    by_both = lookup("--image", FIX["full"], "--build-id", FIX["build_id"].upper(),
                     addrs=[worker + 4])[0]
    check(by_both["frames"] == by_vaddr["frames"], f"{by_both} != {by_vaddr}")
    res = h.client("lookup", "--image", FIX["full"], "--build-id", "ab" * 20, "0x1000")
    check(res.returncode != 0 and "does not have build id" in res.stderr,
          f"path with another build id: {res.stderr}")


@h.case
def compressed_debug_sections():
    worker = symbol(FIX["compressed"], "worker")
    answers = lookup("--image", FIX["compressed"], addrs=range(worker, worker + 24))
    for a in answers:
        check_worker(a, FIX["compressed"])
    check(any(len(a["frames"]) == 2 and a["frames"][0]["line"] == HELPER_LINE for a in answers),
          f"no inlined helper in compressed DWARF: {answers[:2]}")


@h.case
def stripped_with_debug_file_by_build_id():
    a = lookup("--image", FIX["stripped"], addrs=[FIX["worker"] + 1])[0]
    check_worker(a, FIX["stripped"])


@h.case
def stripped_with_debuglink():
    worker = symbol(os.path.join(h.root, "elf", "bin", ".debug", "linked.dbg"), "worker")
    a = lookup("--image", FIX["linked"], addrs=[worker + 1])[0]
    check_worker(a, FIX["linked"])
    check("build_id" not in a, f"no build id expected: {a}")


@h.case
def plt_entries_named_as_objdump_names_them():
    # PLT entries have no symbols; objdump (the oracle) and perf name them "function@plt".
    entries = {}
    for line in run("objdump", "-d", "-j", ".plt", "-j", ".plt.sec", FIX["full"]).splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+@plt)>:$", line)
        if m:
            entries[int(m.group(1), 16)] = m.group(2)
    check(entries, "objdump shows no @plt entries in the test program")
    addrs = sorted(entries)
    answers = lookup("--image", FIX["full"], addrs=[a + 4 for a in addrs])
    for addr, a in zip(addrs, answers):
        check(a.get("found") and a.get("name") == entries[addr] and a.get("offset") == 4,
              f"{hexaddr(addr)}: objdump says {entries[addr]}, jitsym {a}")


@h.case
def dynsym_only_library():
    a = lookup("--image", FIX["lib"], addrs=[FIX["lib_exported"] + 1])[0]
    check(a.get("found") and a["name"] == "lib_exported" and a["offset"] == 1,
          f"dynsym answer: {a}")
    check("file" not in a, f"no line info expected: {a}")


@h.case
def minidebuginfo():
    if not os.path.exists(FIX["mini"]):
        raise AssertionError("xz is needed to build a MiniDebugInfo section (xz-utils)")
    a = lookup("--image", FIX["mini"], addrs=[FIX["mini_worker"] + 2])[0]
    check(a.get("found") and a["name"] == "worker" and a["offset"] == 2 and "file" not in a,
          f"MiniDebugInfo answer: {a}")


@h.case
def debuginfod_in_the_background():
    addr = FIX["remote_worker"] + 1

    def full_answer():
        a = lookup("--image", FIX["remote"], addrs=[addr])[0]
        return a if a.get("found") and a.get("file") else None
    a = wait_until(full_answer, 20, "the debuginfod-fetched debug file to answer")
    check_worker(a, FIX["remote"], source="remote.c")


@h.case
def live_process_then_exited():
    proc = h.spawn([FIX["full"], "wait"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                   text=True)
    worker_abs, getpid_abs = (int(x, 16) for x in proc.stdout.readline().split())
    addrs = [worker_abs, worker_abs + 2, getpid_abs, 0x10]
    answers = h.lookup(proc.pid, [(a, None) for a in addrs])
    check_worker(answers[0], FIX["full"])
    check(int(answers[0]["start"], 16) == worker_abs, f"absolute start: {answers[0]}")
    check_worker(answers[1], FIX["full"])
    libc = answers[2]
    check(libc.get("found") and "getpid" in libc["name"] and libc["origin"] == "elf" and
          "libc" in libc.get("image", ""), f"libc answer: {libc}")
    check(not answers[3].get("found"), f"unmapped address: {answers[3]}")
    h.kill_child(proc.pid)
    after = h.lookup(proc.pid, [(a, None) for a in addrs])
    for before, now in zip(answers, after):
        check(before == now, f"after exit: {now} != {before}")


@h.case
def only_readers_of_a_file_get_its_symbols():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("  (not root: the other user's view is not tested)")
        return
    os.chmod(h.root, 0o711)  # the socket is reachable, the files are not listable
    private = os.path.join(FIX["dir"], "private")
    shutil.copy(FIX["full"], private)
    os.chmod(private, 0o600)
    os.chmod(FIX["dir"], 0o711)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", h.jitsym,
              "--socket", h.socket_path, "lookup", "--image"]
    res = subprocess.run(nobody + [private, hexaddr(FIX["worker"])], capture_output=True,
                         text=True)
    check(res.returncode != 0 and "permission_denied" in res.stderr,
          f"another user read a private file's symbols: {res.stdout!r} {res.stderr!r}")
    os.chmod(private, 0o644)
    res = subprocess.run(nobody + [private, hexaddr(FIX["worker"])], capture_output=True,
                         text=True)
    check(res.returncode == 0 and "\tworker+0x0\telf" in res.stdout,
          f"a readable file: {res.stdout!r} {res.stderr!r}")


@h.case
def hostile_files():
    d = FIX["dir"]
    cases = {
        "garbage.so": b"\x7fELF" + os.urandom(4000),
        "truncated.so": open(FIX["full"], "rb").read()[:300],
        "empty.so": b"\x7fELF",
    }
    for name, data in cases.items():
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        res = h.client("lookup", "--image", path, "0x1000")
        check(res.returncode != 0 and path in res.stderr, f"{name}: {res.returncode} "
              f"{res.stdout!r} {res.stderr!r}")
    check(h.client("ping").returncode == 0, "daemon no longer answers")


@h.case
def a_fifo_named_as_a_split_dwarf_unit_does_not_block_lookups():
    # A -gsplit-dwarf build names its .dwo files; anyone who can write beside them can put a FIFO
    # there. Opening it blocks forever: a lookup of the binary must not (the function is named
    # from the symbol table), and the next lookups must not wait behind it.
    d = os.path.join(FIX["dir"], "split")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "a.c"), "w") as f:
        f.write("static int helper(int x) { return x * 3 + 1; }\n"
                "int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += helper(i);"
                " return s; }\n")
    with open(os.path.join(d, "m.c"), "w") as f:
        f.write("int work(int);\nint main(int c, char **v) { return work(c * 1000); }\n")
    for src in ("a", "m"):
        run("gcc", "-O2", "-g", "-gsplit-dwarf", "-c", f"{src}.c", "-o", f"{src}.o", cwd=d)
    run("gcc", "a.o", "m.o", "-o", "app", cwd=d)
    os.unlink(os.path.join(d, "a.dwo"))
    os.mkfifo(os.path.join(d, "a.dwo"))
    app = os.path.join(d, "app")
    work = symbol(app, "work")
    for _ in range(3):  # more lookups than query threads
        res = h.client("lookup", "--image", app, hexaddr(work), timeout=15)
        check(res.returncode == 0 and "\twork+0x0\t" in res.stdout,
              f"{res.returncode} {res.stdout!r} {res.stderr!r}")
    check(h.client("ping").returncode == 0, "daemon no longer answers")


h.main()
