#!/usr/bin/env python3
"""Debug files shrunk by dwz (as distributions ship them): the DIEs and strings shared by two
programs move to a common file each program names in .gnu_debugaltlink. Answers through the
common file are the answers of the programs before dwz, frame for frame; without it, or with a
FIFO or a truncated file in its place, the daemon neither blocks nor faults, still names
functions from the symbol table, and logs which file it could not read."""

import json
import os
import shutil
import subprocess

from harness import Harness, check, hexaddr

h = Harness(__doc__)
FIX = {}

HEADER = r"""
#include <map>
#include <string>
#include <vector>
struct Shape { virtual ~Shape() = default; virtual double area() const = 0; std::string name; };
template <class T> inline T clamp3(T v, T lo, T hi) { return v < lo ? lo : v > hi ? hi : v; }
inline double mix(const std::vector<double>& v) {
  double s = 0; for (double x : v) s += clamp3(x, -1.0, 1.0) * 0.5; return s;
}
inline int tally(const std::map<std::string, int>& m) {
  int s = 0; for (auto& [k, v] : m) s += v * static_cast<int>(k.size()); return s;
}
"""
UNIT = r"""
#include "common.h"
static volatile int sink;
struct Box%(n)d : Shape { double w = %(n)d; double area() const override { return w * w + sink; } };
__attribute__((noinline)) double work%(n)d(int k) {
  std::vector<double> v; std::map<std::string, int> m;
  for (int i = 0; i < k; i++) { v.push_back(i * 0.1 + sink); m[std::to_string(i)] = i; }
  Box%(n)d b; return mix(v) + tally(m) + b.area();
}
"""
MAIN = r"""
double work0(int); double work1(int);
int main(int argc, char**) { return (int)(work0(argc) + work1(argc)); }
"""


def run(*args, cwd=None):
    res = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd)
    check(res.returncode == 0, f"{' '.join(map(str, args))} failed: {res.stderr.strip()[:500]}")
    return res.stdout


def function_addresses(path, limit=1500):
    """Addresses inside every function of the .symtab (start, a quarter in, the middle)."""
    out = []
    for line in run("nm", "-S", "--defined-only", path).splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW" and int(parts[1], 16) > 4:
            start, size = int(parts[0], 16), int(parts[1], 16)
            out += [start, start + size // 4, start + size // 2]
    return sorted(set(out))[:limit]


def answers(path, addrs, timeout=60):
    res = h.client("--timeout", "20", "lookup", "--json", "--image", path,
                   *[hexaddr(a) for a in addrs], timeout=timeout)
    check(res.returncode == 0, f"jitsym lookup exited {res.returncode}: {res.stderr}")
    docs = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    check(len(docs) == len(addrs), f"{len(docs)} answers for {len(addrs)} addresses")
    return docs


def frames(doc):
    return [(f.get("name"), f.get("file"), f.get("line"), f.get("column"))
            for f in doc.get("frames", [])]


def fresh_copy(name):
    """A copy of the dwz'd program under a new name: a module not opened yet."""
    path = os.path.join(FIX["dir"], name)
    shutil.copy2(FIX["a"], path)
    return path


@h.setup
def build():
    check(shutil.which("dwz"), "dwz is needed (Debian package dwz)")
    d = FIX["dir"] = h.root
    with open(os.path.join(d, "common.h"), "w") as f:
        f.write(HEADER)
    for n in (0, 1):
        with open(os.path.join(d, f"u{n}.cc"), "w") as f:
            f.write(UNIT % {"n": n})
    with open(os.path.join(d, "main.cc"), "w") as f:
        f.write(MAIN)
    for name in ("a", "b"):
        run("g++", "-O2", "-g", "-o", name, "u0.cc", "u1.cc", "main.cc", *(["-DB"] if name == "b"
                                                                         else []), cwd=d)
        shutil.copy2(os.path.join(d, name), os.path.join(d, name + ".orig"))
    FIX["a"], FIX["orig"] = os.path.join(d, "a"), os.path.join(d, "a.orig")
    FIX["common"] = os.path.join(d, "common.debug")
    run("dwz", "-m", FIX["common"], "-M", FIX["common"], "a", "b", cwd=d)
    sections = run("readelf", "-S", "-W", FIX["a"])
    check(".gnu_debugaltlink" in sections, "dwz made no .gnu_debugaltlink")
    FIX["addrs"] = function_addresses(FIX["orig"])
    h.start_daemon()


@h.case
def answers_through_the_common_file_are_those_before_dwz():
    addrs = FIX["addrs"]
    before, after = answers(FIX["orig"], addrs), answers(FIX["a"], addrs)
    same = sum(frames(x) == frames(y) for x, y in zip(before, after))
    inlined = sum(len(frames(x)) > 1 for x in before)
    print(f"{same}/{len(addrs)} addresses list the same frames after dwz ({inlined} inlined)")
    check(same == len(addrs), "frames differ: " + "; ".join(
        f"{hexaddr(a)}: {frames(x)} vs {frames(y)}"
        for a, x, y in zip(addrs, before, after) if frames(x) != frames(y))[:1500])
    check(inlined > 20, f"only {inlined} addresses have inlined frames: the test reads too little")
    FIX["before"] = before


def check_without_common_file(path, why):
    addrs = FIX["addrs"]
    got = answers(path, addrs)
    check(h.daemon.alive(), "the daemon died")
    named = sum(bool(x.get("found")) and bool(x.get("name")) for x in got)
    check(named == len(addrs), f"only {named}/{len(addrs)} addresses named")
    # Names and frames the common file holds are gone (the test's point: it was read above).
    differ = sum(frames(x) != frames(y) for x, y in zip(got, FIX["before"]))
    check(differ > 0, "answers without the common file equal those with it: was it read?")
    log = h.daemon.log()
    check(f"{path}: dwz file not read" in log and why in log,
          f"no log line naming the dwz file for {path} ({why}): {h.log_tail()}")
    return differ


@h.case
def missing_common_file_names_functions_and_says_so():
    os.rename(FIX["common"], FIX["common"] + ".away")
    try:
        differ = check_without_common_file(fresh_copy("a.missing"), "No such file")
        print(f"without common.debug: {differ}/{len(FIX['addrs'])} answers lose frames")
    finally:
        os.rename(FIX["common"] + ".away", FIX["common"])


@h.case
def fifo_in_place_of_the_common_file_does_not_block():
    os.rename(FIX["common"], FIX["common"] + ".away")
    os.mkfifo(FIX["common"])
    try:
        check_without_common_file(fresh_copy("a.fifo"), "not a regular file")
    finally:
        os.unlink(FIX["common"])
        os.rename(FIX["common"] + ".away", FIX["common"])


@h.case
def common_file_truncated_after_opening():
    path = fresh_copy("a.truncated")
    addrs = FIX["addrs"]
    first = answers(path, addrs[:1])
    with open(FIX["common"], "r+b") as f:
        saved = f.read()
        f.truncate(0)
    try:
        got = answers(path, addrs)
        check(h.daemon.alive(), "the daemon died")
        same = sum(frames(x) == frames(y) for x, y in zip(got, FIX["before"]))
        check(frames(first[0]) == frames(FIX["before"][0]) and same == len(addrs),
              f"{same}/{len(addrs)} answers as before the truncation")
    finally:
        with open(FIX["common"], "wb") as f:
            f.write(saved)


if __name__ == "__main__":
    h.main()
