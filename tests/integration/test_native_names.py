#!/usr/bin/env python3
"""Native names in programs compiled during the test: GCC's clones (.constprop, .isra, .part,
.cold) named as their function, by DWARF where it has the function and by the symbol without its
suffix where it has none, the suffix in the JSON answer's `clone`; symbol versions
(`.symver`: f@VER_1, f@@VER_2) dropped; of aliases at one address the public one; and a name
LLVM 14's demangler cannot read (GCC's transaction clone, g++ -fgnu-tm) demangled by the C++
runtime's demangler."""

import json
import os
import re
import shutil
import subprocess

from harness import Harness, check, hexaddr

h = Harness(__doc__)
FIX = {}

CLONES = r"""
#include <stdlib.h>
volatile int sink;
/* ipa-cp: called with one constant argument only -> scale.constprop.0 */
static __attribute__((noinline)) int scale(int x, int k) {
  int s = 0;
  for (int i = 0; i < x; i++) s += i * k + sink;
  return s;
}
/* ipa-split: a cheap test inlined into callers, the rest -> big.part.0 */
static int big(int x) {
  if (__builtin_expect(x < 100, 1)) return x;
  int s = 0;
  for (int i = 0; i < x; i++) { s += i * sink; if (s > 1000) s ^= x; s += sink * 3; }
  for (int i = 0; i < x; i++) { s -= i * sink; if (s < -1000) s ^= i; s += sink * 5; }
  return s;
}
/* a cold path -> work.cold */
__attribute__((noinline)) int work(int x) {
  if (__builtin_expect(x == 12345, 0)) { sink = x; abort(); }
  return x + sink;
}
int main(int argc, char **argv) {
  (void)argv;
  return scale(argc, 3) + scale(argc + 1, 3) + big(argc) + big(argc * 1000) + work(argc);
}
"""

VERSIONED = r"""
int old_f(int x) { return x + 1; }
int new_f(int x) { return x + 2; }
__asm__(".symver old_f, f@VER_1");
__asm__(".symver new_f, f@@VER_2");
"""
VERSION_SCRIPT = "VER_1 { global: f; local: *; };\nVER_2 { global: f; } VER_1;\n"

TM = r"""
[[gnu::transaction_safe]] __attribute__((noinline)) int bump(int *p) { return ++*p; }
int counter;
int main() {
  int r;
  __transaction_atomic { r = bump(&counter); }
  return r == 0;
}
"""


def run(*args, cwd=None):
    res = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd)
    check(res.returncode == 0, f"{' '.join(map(str, args))} failed: {res.stderr.strip()[:500]}")
    return res.stdout


def symbols(path):
    """name -> (address, size) of the .symtab's functions."""
    out = run("nm", "-S", "--defined-only", path)
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            syms[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return syms


def lookup(path, addrs):
    res = h.client("lookup", "--json", "--image", path, *[hexaddr(a) for a in addrs])
    check(res.returncode == 0, f"jitsym lookup exited {res.returncode}: {res.stderr}")
    docs = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    check(len(docs) == len(addrs), f"{len(docs)} answers for {len(addrs)} addresses")
    return docs


def llvm_outermost(path, addrs):
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    out = subprocess.run(["llvm-symbolizer", "--inlines", "--obj=" + path], input=text,
                         capture_output=True, text=True, check=True).stdout
    return [b.strip("\n").splitlines()[-2] for b in out.split("\n\n") if b.strip()]


@h.setup
def build():
    check(shutil.which("gcc") and shutil.which("g++"), "gcc and g++ are needed")
    d = h.root
    src = os.path.join(d, "clones.c")
    with open(src, "w") as f:
        f.write(CLONES)
    FIX["clones"] = os.path.join(d, "clones")
    run("gcc", "-O2", "-g", "-o", FIX["clones"], src)
    FIX["nodebug"] = os.path.join(d, "clones.nodebug")
    run("objcopy", "--strip-debug", FIX["clones"], FIX["nodebug"])
    lib = os.path.join(d, "versioned.c")
    with open(lib, "w") as f:
        f.write(VERSIONED)
    script = os.path.join(d, "versions.map")
    with open(script, "w") as f:
        f.write(VERSION_SCRIPT)
    FIX["versioned"] = os.path.join(d, "libversioned.so")
    run("gcc", "-O2", "-g", "-shared", "-fPIC", "-Wl,--version-script=" + script, "-o",
        FIX["versioned"], lib)
    tm = os.path.join(d, "tm.cc")
    with open(tm, "w") as f:
        f.write(TM)
    FIX["tm"] = os.path.join(d, "tm")
    run("g++", "-O2", "-g", "-fgnu-tm", "-o", FIX["tm"], tm)
    h.start_daemon()


def clone_symbols(path):
    syms = symbols(path)
    clones = {n: v for n, v in syms.items() if re.search(r"\.(constprop|isra|part|cold)", n)}
    check(clones, f"gcc made no clones in {path}: {sorted(syms)}")
    return clones


@h.case
def clones_are_named_as_their_function():
    clones = clone_symbols(FIX["clones"])
    names = sorted(clones)
    addrs = [clones[n][0] + min(2, clones[n][1] - 1) for n in names]
    theirs = llvm_outermost(FIX["clones"], addrs)
    for sym, a, t in zip(names, lookup(FIX["clones"], addrs), theirs):
        base, suffix = sym.split(".", 1)
        check(a.get("found"), f"{sym}: not found: {a}")
        check(a.get("name") == base, f"{sym}: name {a.get('name')!r}, expected {base!r}")
        check(a.get("clone") == "." + suffix, f"{sym}: clone {a.get('clone')!r}")
        check(a["frames"][-1]["name"] == base, f"{sym}: outermost frame {a['frames'][-1]}")
        # llvm-symbolizer prints the symbol table's name; with our clone member it is the same.
        check(t == a["name"] + a["clone"], f"{sym}: llvm-symbolizer {t!r}, ours {a}")
    print(f"clones: {', '.join(names)}")


@h.case
def clones_without_dwarf_lose_their_suffix():
    clones = clone_symbols(FIX["nodebug"])
    names = sorted(clones)
    addrs = [clones[n][0] for n in names]
    for sym, a in zip(names, lookup(FIX["nodebug"], addrs)):
        base, suffix = sym.split(".", 1)
        check(a.get("name") == base and a.get("clone") == "." + suffix, f"{sym}: {a}")
    # Text output: the function's name, no suffix, nothing more.
    res = h.client("lookup", "--image", FIX["nodebug"], hexaddr(addrs[0]))
    base = names[0].split(".", 1)[0]
    check(res.returncode == 0 and res.stdout.split("\t")[1] == base + "+0x0",
          f"text: {res.stdout!r}")


@h.case
def fields_select_the_clone():
    """`clone` is a member `fields` names; asked for without it, it is not sent."""
    clones = clone_symbols(FIX["clones"])
    addr = hexaddr(next(iter(clones.values()))[0])
    conn = h.raw_connection()
    try:
        for fields, sent in ((["name"], False), (["name", "clone"], True), (None, True)):
            req = {"v": 1, "op": "lookup", "image": FIX["clones"], "addrs": [addr]}
            if fields is not None:
                req["fields"] = fields
            conn.send(req)
            r = conn.read_line()["results"][0]
            check(("clone" in r) == sent, f"fields {fields}: {r}")
    finally:
        conn.close()


@h.case
def versions_are_dropped():
    syms = symbols(FIX["versioned"])
    check("f@VER_1" in syms and "f@@VER_2" in syms, f"no versioned symbols: {sorted(syms)}")
    addrs = [syms["f@VER_1"][0], syms["f@@VER_2"][0]]
    for a in lookup(FIX["versioned"], addrs):
        check(a.get("name") == "f", f"versioned: {a}")
        check("clone" not in a, f"versioned: {a}")


@h.case
def runtime_demangles_what_llvm_14_cannot():
    syms = symbols(FIX["tm"])
    mangled = [n for n in syms if n.startswith("_ZGTt")]
    check(mangled, f"g++ -fgnu-tm made no transaction clone: {sorted(syms)}")
    sym = mangled[0]
    llvm = run("llvm-cxxfilt", sym).strip()
    check(llvm == sym, f"LLVM's demangler reads {sym} now ({llvm!r}): pick another name")
    gnu = run("c++filt", sym).strip()
    a = lookup(FIX["tm"], [syms[sym][0]])[0]
    check(a.get("name") == gnu, f"{sym}: ours {a.get('name')!r}, c++filt {gnu!r}")
    check(a.get("name") == "transaction clone for bump(int*)", f"{sym}: {a}")


h.main()
