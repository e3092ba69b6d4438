#!/usr/bin/env python3
"""Native symbolization agrees with `llvm-symbolizer --inlines` on a large C++ binary with DWARF
built in this build (the unit tests, -O2 -g; $JITSYM_TEST_ELF): the same function names and
file:line for every frame, inlined frames included, for at least 99% of thousands of sampled
addresses."""

import json
import os
import random
import re
import shutil
import subprocess

from harness import Harness, check, hexaddr

h = Harness(__doc__)
ELF = os.environ.get("JITSYM_TEST_ELF", "")
SAMPLES = 4000
REQUIRED = 0.99
# A clone suffix as llvm-symbolizer prints it: "f.part.0" (C), "f() (.constprop.0)" (C++).
CLONE = re.compile(r"( \((?:\.[A-Za-z_]+(?:\.\d+)*)+\)|(?:\.(?:part|cold|isra|constprop|lto_priv|"
                   r"localalias|clone|llvm|__uniq|specialized)(?:\.\d+)*)+)$")


def with_clone(name, clone):
    """Our name and `clone` member as llvm-symbolizer prints the symbol they come from."""
    if not clone:
        return name
    return f"{name} ({clone})" if "(" in name else name + clone


def without_clone(name):
    """llvm-symbolizer's outermost name without a clone suffix, as our text output prints it."""
    return CLONE.sub("", name)


def sample_addresses(path, n, seed=4):
    """Random addresses inside the functions of the symbol table."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW" and int(parts[1], 16) > 0:
            funcs.append((int(parts[0], 16), int(parts[1], 16)))
    rng = random.Random(seed)
    return sorted({start + rng.randrange(size) for start, size in
                   (rng.choice(funcs) for _ in range(n))})


def runtime_demangled(names):
    """What the C++ runtime's demangler (c++filt's) makes of names LLVM 14's leaves mangled: our
    names fall back to it (docs/formats.md, Native)."""
    names = sorted(set(names))
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="".join(n + "\n" for n in names), capture_output=True,
                         text=True, check=True).stdout.splitlines()
    return dict(zip(names, out))


def llvm_frames(path, addrs, columns=False):
    """[[(name, file, line), ...] innermost first] per address; with columns, (name,
    "file:line:column") as llvm-symbolizer prints them ("??:0:0" when not known)."""
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    out = subprocess.run(["llvm-symbolizer", "--inlines", "--obj=" + path], input=text,
                         capture_output=True, text=True, check=True).stdout
    result = []
    for block in out.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if not lines:
            continue
        frames = []
        for name, pos in zip(lines[0::2], lines[1::2]):
            if columns:
                frames.append((name, pos))
                continue
            file, line = pos.rsplit(":", 2)[0:2] if pos.count(":") >= 2 else (pos, "0")
            frames.append((name, "" if file == "??" else file, int(line)))
        result.append(frames)
    # Names LLVM 14 cannot demangle, as the C++ runtime's demangler reads them.
    gnu = runtime_demangled(f[0] for frames in result for f in frames if f[0].startswith("_Z"))
    return [[(gnu.get(f[0], f[0]),) + tuple(f[1:]) for f in frames] for frames in result]


def our_frames(path, addrs):
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    res = h.client("lookup", "--image", path, "--json", input=text, timeout=300)
    check(res.returncode == 0, f"jitsym lookup failed: {res.stderr[:500]}")
    result = []
    for line in res.stdout.splitlines():
        a = json.loads(line)
        if not a.get("found"):
            result.append([("??", "", 0)])
        else:
            frames = [(f["name"], f.get("file", ""), f.get("line", 0))
                      for f in a.get("frames", [])]
            if frames and a.get("clone"):  # the outermost frame is the clone's function
                name, file, line = frames[-1]
                frames[-1] = (with_clone(name, a["clone"]), file, line)
            result.append(frames)
    return result


def normalized_position(pos):
    """Our FILE:LINE[:COL] (or ??:0) as llvm-symbolizer prints positions: FILE:LINE:COL."""
    parts = pos.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return pos
    return pos + ":0"


@h.setup
def start():
    check(ELF and os.path.exists(ELF), "JITSYM_TEST_ELF must name a binary with DWARF")
    check(shutil.which("llvm-symbolizer"), "llvm-symbolizer is needed (Debian package llvm)")
    h.start_daemon()


@h.case
def agrees_with_llvm_symbolizer():
    addrs = sample_addresses(ELF, SAMPLES)
    theirs = llvm_frames(ELF, addrs)
    ours = our_frames(ELF, addrs)
    check(len(theirs) == len(addrs) and len(ours) == len(addrs),
          f"{len(theirs)}/{len(ours)} answers for {len(addrs)} addresses")
    same = 0
    inlined = 0
    mismatches = []
    for addr, t, o in zip(addrs, theirs, ours):
        if len(t) > 1:
            inlined += 1
        if t == o:
            same += 1
        elif len(mismatches) < 10:
            mismatches.append(f"  {hexaddr(addr)}:\n    llvm: {t}\n    ours: {o}")
    ratio = same / len(addrs)
    print(f"{same}/{len(addrs)} addresses agree ({ratio:.2%}); {inlined} have inlined frames")
    check(inlined >= len(addrs) // 20, f"only {inlined} addresses with inlined frames: a weak test")
    check(ratio >= REQUIRED, f"agreement {ratio:.2%} < {REQUIRED:.0%}; first mismatches:\n" +
          "\n".join(mismatches))


@h.case
def inlines_text_prints_the_same_frames():
    """`jitsym lookup --inlines` (text, one line per address) lists the frames llvm-symbolizer
    --inlines prints, positions with columns included, and the columns of plain text output."""
    addrs = sample_addresses(ELF, SAMPLES // 4, seed=11)
    theirs = llvm_frames(ELF, addrs, columns=True)
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    res = h.client("lookup", "--image", ELF, "--inlines", input=text, timeout=300)
    check(res.returncode == 0, f"jitsym lookup --inlines failed: {res.stderr[:500]}")
    plain = h.client("lookup", "--image", ELF, input=text, timeout=300)
    check(plain.returncode == 0, f"jitsym lookup failed: {plain.stderr[:500]}")
    lines, plain_lines = res.stdout.splitlines(), plain.stdout.splitlines()
    check(len(lines) == len(addrs) == len(plain_lines),
          f"{len(lines)} lines for {len(addrs)} addresses")
    same = 0
    mismatches = []
    for addr, t, line, plain_line in zip(addrs, theirs, lines, plain_lines):
        cols = line.split("\t")
        check(cols[0] == hexaddr(addr), f"line for {cols[0]}, expected {hexaddr(addr)}")
        if cols[1:2] == ["??"]:  # not found (then its reason), as llvm-symbolizer's ?? and ??:0:0
            same += t == [("??", "??:0:0")]
            continue
        check(len(cols) >= 4 and len(cols) % 2 == 0, f"malformed --inlines line: {line!r}")
        # The first columns are those of plain text output (which has no position column
        # when none is known; --inlines prints ??:0 there).
        pcols = plain_line.split("\t")
        check(cols[:len(pcols)] == pcols and (len(pcols) == 4 or cols[3] == "??:0"),
              f"--inlines and plain disagree:\n  {line}\n  {plain_line}")
        frames = [(n, normalized_position(p)) for n, p in zip(cols[4::2], cols[5::2])]
        if t:  # text names a clone as its function (the suffix is in --json's "clone")
            t = t[:-1] + [(without_clone(t[-1][0]), t[-1][1])]
        if frames:
            check(normalized_position(cols[3]) == frames[0][1],
                  f"position column is not the innermost frame's: {line!r}")
        if frames == t:
            same += 1
        elif len(mismatches) < 10:
            mismatches.append(f"  {hexaddr(addr)}:\n    llvm: {t}\n    ours: {frames}")
    ratio = same / len(addrs)
    print(f"--inlines: {same}/{len(addrs)} addresses list the same frames ({ratio:.2%})")
    check(ratio >= REQUIRED, f"agreement {ratio:.2%} < {REQUIRED:.0%}; first mismatches:\n" +
          "\n".join(mismatches))


h.main()
