#!/usr/bin/env python3
"""Names of libc's functions with Debian's libc6-dbg, against llvm-symbolizer: for random addresses
inside libc's functions, jitsym's name (`lookup --image /lib/x86_64-linux-gnu/libc.so.6`, which
finds the debug file by build id under /usr/lib/debug/.build-id) is the outermost frame
llvm-symbolizer --inlines prints. The issue's differences are checked by name: no symbol versions
(mtx_init, not mtx_init@GLIBC_2.28), the public alias (setbuffer, not _IO_setbuffer), clones named
as their function (ptmalloc_init, clone .part.0). What is left differs on purpose (docs/formats.md,
Native, names) and is counted by kind."""

import collections
import json
import os
import random
import re
import shutil
import subprocess

from harness import Harness, check, hexaddr

h = Harness(__doc__)
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
SAMPLES = 3000
REQUIRED = 0.88
CLONE = re.compile(r"((?:\.(?:part|cold|isra|constprop|lto_priv|localalias|clone|llvm|__uniq|"
                   r"specialized)(?:\.\d+)*)+)$")
FIX = {}


def run(*args):
    res = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    check(res.returncode == 0, f"{' '.join(map(str, args))} failed: {res.stderr.strip()[:500]}")
    return res.stdout


def debug_file(path):
    out = run("readelf", "-n", path)
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    check(m, f"{path} has no build id")
    bid = m.group(1)
    return f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"


def functions(debug):
    """(start, size, name) of the functions of the debug file's .symtab."""
    out = run("nm", "-S", "--defined-only", debug)
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwWi" and int(parts[1], 16) > 0:
            funcs.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return funcs


def llvm_names(addrs):
    """The outermost frame's name llvm-symbolizer --inlines prints for each address."""
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    out = subprocess.run(["llvm-symbolizer", "--inlines", "--obj=" + LIBC], input=text,
                         capture_output=True, text=True, check=True).stdout
    names = []
    for block in out.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if lines:
            names.append(lines[-2])
    return names


def our_answers(addrs):
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    res = h.client("lookup", "--image", LIBC, "--json", input=text, timeout=300)
    check(res.returncode == 0, f"jitsym lookup failed: {res.stderr[:500]}")
    return [json.loads(line) for line in res.stdout.splitlines()]


def kind_of(theirs, ours, starts):
    """Why two names differ, for the remaining differences' summary; None: no known reason.
    `starts` maps a name (version removed) to the start addresses of the symbols so named."""
    if theirs == "??":
        return "llvm-symbolizer names nothing (no .dynsym symbol, no DWARF subprogram)"
    if "@" in ours and ours.split("@")[0] == theirs:
        return "we keep a version"
    if CLONE.search(ours) and CLONE.sub("", ours) == theirs:
        return "we keep a clone suffix"
    if starts.get(theirs, set()) & starts.get(ours, set()):
        if theirs.count("_") != ours.count("_") and theirs.startswith("_"):
            return ("an alias: llvm-symbolizer takes the last in .dynsym order, we the name with "
                    "fewer leading underscores")
        return "an alias: llvm-symbolizer takes the last in .dynsym order, we the shorter name"
    return None


@h.setup
def start():
    check(shutil.which("llvm-symbolizer"), "llvm-symbolizer is needed (Debian package llvm)")
    check(os.path.exists(LIBC), f"{LIBC} is missing")
    debug = debug_file(LIBC)
    check(os.path.exists(debug), f"{debug} is missing: install libc6-dbg")
    FIX["funcs"] = functions(debug)
    starts = collections.defaultdict(set)
    for start, _, name in FIX["funcs"]:
        starts[name.split("@")[0]].add(start)
    FIX["starts"] = starts
    check(len(FIX["funcs"]) > 1000, f"only {len(FIX['funcs'])} functions in {debug}")
    h.start_daemon()


def address_of(name):
    for start, size, n in FIX["funcs"]:
        if n == name:
            return start + min(8, size - 1)
    raise AssertionError(f"{name} not in libc's debug symbols")


@h.case
def names_from_the_issue():
    """The differences the issue lists are gone."""
    cases = [("mtx_init@@GLIBC_2.34", "mtx_init", None), ("setbuffer", "setbuffer", None),
             ("ptmalloc_init.part.0", "ptmalloc_init", ".part.0")]
    addrs = [address_of(sym) for sym, _, _ in cases]
    for (sym, want, clone), a, theirs in zip(cases, our_answers(addrs), llvm_names(addrs)):
        check(a.get("found"), f"{sym}: not found: {a}")
        check(a.get("name") == want, f"{sym}: name {a.get('name')!r}, expected {want!r}")
        check(a.get("clone") == clone, f"{sym}: clone {a.get('clone')!r}, expected {clone!r}")
        check(a["frames"][-1]["name"] == want, f"{sym}: outermost frame {a['frames'][-1]}")
        check(theirs == want, f"{sym}: llvm-symbolizer says {theirs!r}, we say {want!r}")
    # Text output: the name only.
    res = h.client("lookup", "--image", LIBC, hexaddr(addrs[2]))
    check(res.returncode == 0 and res.stdout.split("\t")[1].startswith("ptmalloc_init+"),
          f"text: {res.stdout!r}")


@h.case
def names_agree_with_llvm_symbolizer():
    rng = random.Random(17)
    funcs = FIX["funcs"]
    addrs = sorted({s + rng.randrange(n) for s, n, _ in (rng.choice(funcs) for _ in range(SAMPLES))})
    theirs = llvm_names(addrs)
    ours = our_answers(addrs)
    check(len(theirs) == len(addrs) == len(ours), f"{len(theirs)}/{len(ours)} of {len(addrs)}")
    same = 0
    kinds = collections.Counter()
    examples = collections.defaultdict(list)
    for addr, t, o in zip(addrs, theirs, ours):
        name = o.get("name", "??") if o.get("found") else "??"
        if t == name:
            same += 1
            continue
        k = kind_of(t, name, FIX["starts"]) or "unexplained"
        kinds[k] += 1
        if len(examples[k]) < (1000 if os.environ.get("JITSYM_LIBC_ALL") else 4):
            examples[k].append(f"{hexaddr(addr)} llvm {t!r} ours {name!r}")
    ratio = same / len(addrs)
    print(f"libc: {same}/{len(addrs)} names equal to llvm-symbolizer's ({ratio:.2%})")
    for k, n in kinds.most_common():
        print(f"  {n:5d}  {k}: " + "; ".join(examples[k]))
    check(not kinds["unexplained"], "differences of no known kind: " + "; ".join(examples["unexplained"]))
    check(not kinds["we keep a version"] and not kinds["we keep a clone suffix"],
          "versions or clone suffixes left in names")
    check(ratio >= REQUIRED, f"agreement {ratio:.2%} < {REQUIRED:.0%}")


h.main()
