"""llvm-symbolizer as the oracle for native frames, and jitsym's frames in the same shape: the
comparison rules the native tests share (test_native_llvm.py, test_split_dwarf.py)."""

import json
import random
import re
import subprocess

from harness import check, hexaddr

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


def sample_addresses(path, n, seed=4, distinct=False):
    """Random addresses inside the functions of the symbol table: n draws (repeats dropped), or
    with `distinct` n different addresses (fewer if the functions hold fewer bytes)."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW" and int(parts[1], 16) > 0:
            funcs.append((int(parts[0], 16), int(parts[1], 16)))
    rng = random.Random(seed)
    if distinct:
        # Aliases overlap (one constructor under two names): count the bytes of the union.
        covered, end = 0, 0
        for start, size in sorted(funcs):
            covered += max(0, start + size - max(start, end))
            end = max(end, start + size)
        n = min(n, covered)
        out = set()
        while len(out) < n:
            start, size = rng.choice(funcs)
            out.add(start + rng.randrange(size))
        return sorted(out)
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


def llvm_frames(path, addrs, columns=False, timeout=600):
    """[[(name, file, line), ...] innermost first] per address; with columns, (name,
    "file:line:column") as llvm-symbolizer prints them ("??:0:0" when not known)."""
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    out = subprocess.run(["llvm-symbolizer", "--inlines", "--obj=" + path], input=text,
                         capture_output=True, text=True, check=True, timeout=timeout).stdout
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


def our_answers(h, path, addrs):
    """jitsym lookup --image PATH --json: one decoded answer per address."""
    text = "".join(hexaddr(a) + "\n" for a in addrs)
    res = h.client("lookup", "--image", path, "--json", input=text, timeout=300)
    check(res.returncode == 0, f"jitsym lookup failed: {res.stderr[:500]}")
    answers = [json.loads(line) for line in res.stdout.splitlines()]
    check(len(answers) == len(addrs), f"{len(answers)} answers for {len(addrs)} addresses")
    return answers


def frames_of(answer, columns=False):
    """One answer's frames in llvm_frames' shape; the outermost is named with its clone suffix,
    as llvm-symbolizer names it."""
    if not answer.get("found"):
        return [("??", "??:0:0")] if columns else [("??", "", 0)]
    if columns:
        frames = [(f["name"], f"{f.get('file') or '??'}:{f.get('line', 0)}:{f.get('column', 0)}")
                  for f in answer.get("frames", [])]
    else:
        frames = [(f["name"], f.get("file", ""), f.get("line", 0))
                  for f in answer.get("frames", [])]
    if frames and answer.get("clone"):
        frames[-1] = (with_clone(frames[-1][0], answer["clone"]),) + tuple(frames[-1][1:])
    return frames


def our_frames(h, path, addrs, columns=False):
    return [frames_of(a, columns) for a in our_answers(h, path, addrs)]


def normalized_position(pos):
    """Our FILE:LINE[:COL] (or ??:0) as llvm-symbolizer prints positions: FILE:LINE:COL."""
    parts = pos.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return pos
    return pos + ":0"
