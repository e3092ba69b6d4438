#!/usr/bin/env python3
"""Hostile symbol names against the real daemon: a library whose names nest 100,000 levels
deep (LLVM 14's demangler overflowed a query thread's stack on it), one whose names print
2^40 times their length through back-references, and one with 12,000 names printing
26 KB each (the table's names are bounded by what the file holds). The daemon answers, stays
within memory, and names each address by its demangled name or, past the bounds, as written."""

import json
import os
import subprocess

import elf_craft

from harness import asan_build, Harness, check, hexaddr

h = Harness(__doc__)
FIX = {}


def doubling(levels, tag):
    """f<tag>(a, b<a, a>, b<b<a, a>, b<a, a> >, ...): 2^levels times its length when printed."""
    return elf_craft.doubling(levels, "_Z", tag)


def library(name, symbols):
    """A shared library with one 16-byte function per symbol name."""
    asm = os.path.join(h.root, name + ".s")
    with open(asm, "w") as f:
        f.write(".text\n")
        for s in symbols:
            f.write(f".globl {s}\n.type {s}, @function\n{s}:\n" + "  nop\n" * 15 + "  ret\n"
                    f".size {s}, 16\n")
    out = os.path.join(h.root, name + ".so")
    res = subprocess.run(["gcc", "-shared", "-nostdlib", "-o", out, asm], capture_output=True,
                         text=True)
    check(res.returncode == 0, f"gcc: {res.stderr[:500]}")
    addrs = {}
    for line in subprocess.run(["nm", "--defined-only", out], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T":
            addrs[parts[2]] = int(parts[0], 16)
    return out, addrs


def lookup(path, addrs):
    res = h.client("--timeout", "60", "lookup", "--json", "--image", path,
                   *[hexaddr(a) for a in addrs], timeout=120)
    check(h.daemon.alive(), f"the daemon died: {h.log_tail()}")
    check(res.returncode == 0, f"jitsym lookup exited {res.returncode}: {res.stderr}")
    return [json.loads(l) for l in res.stdout.splitlines() if l.strip()]


def peak_rss_mib():
    with open(f"/proc/{h.daemon.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0


@h.setup
def start():
    h.start_daemon()


@h.case
def deep_nesting_is_left_mangled():
    deep = "_Z1fP" + "P" * 100000 + "i"
    path, addrs = library("deep", [deep, "_Z3foov"])
    got = lookup(path, [addrs[deep] + 4, addrs["_Z3foov"]])
    check(got[0].get("name") == deep, f"deep name: {str(got[0])[:200]}")
    check(got[1].get("name") == "foo()", f"a plain name beside it: {got[1]}")


@h.case
def exponential_name_is_left_mangled():
    bomb = doubling(40, "x")
    small = doubling(3, "y")
    path, addrs = library("bomb", [bomb, small])
    got = lookup(path, [addrs[bomb], addrs[small]])
    check(got[0].get("name") == bomb, f"2^40 name: {str(got[0])[:200]}")
    check(got[1].get("name", "").startswith("fy(a, b<a, a>, b<b<a, a>, b<a, a> >"),
          f"a short doubling name: {got[1]}")


@h.case
def many_long_names_stay_within_a_budget():
    before = peak_rss_mib()
    names = [doubling(10, f"n{i}") for i in range(12000)]  # ~190 bytes, printing ~26 KB each
    path, addrs = library("many", names)
    got = lookup(path, [addrs[n] for n in names])
    demangled = sum(not g.get("name", "").startswith("_Z") for g in got)
    after = peak_rss_mib()
    print(f"{demangled}/{len(names)} demangled; daemon peak RSS {before:.0f} -> {after:.0f} MiB")
    check(all(g.get("found") for g in got), "some addresses not found")
    check(demangled >= 100, f"only {demangled} names demangled")
    check(demangled < len(names), "every name demangled: the table was not bounded")
    # All of them demangled would hold 320 MB of names (and twice that while growing).
    limit = 250 * (4 if asan_build(h.jitsymd) else 1)  # ASan: quarantine and shadow memory
    check(after - before < limit, f"peak RSS grew by {after - before:.0f} MiB")


if __name__ == "__main__":
    h.main()
