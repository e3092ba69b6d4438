#!/usr/bin/env python3
"""Split DWARF (-gsplit-dwarf): programs of several translation units with inlining, built here by
gcc (DWARF 5 and DWARF 4) and clang (DWARF 5) with the .dwo files beside the objects, and packaged
into a .dwp (llvm-dwp for clang's units, dwp or llvm-dwp for gcc's DWARF 4 ones), list the same
frames (names, file, line, column) as `llvm-symbolizer --inlines` given the same files for at
least 99.5% of 5,000 random addresses in their functions, also when the skeletons are in a
separate debug file, local or fetched from a debuginfod server. With the split parts removed,
functions are still named, and each answer in a unit whose part is missing says `no_debug_info`
with the missing file (lookup --json and explain --image), logged once per module."""

import glob
import json
import os
import re
import shutil
import subprocess
import threading
import time

from debuginfod_server import DebuginfodServer
from harness import Harness, check, hexaddr, wait_until
from native_oracle import llvm_frames, our_answers, frames_of, sample_addresses

h = Harness(__doc__)
SAMPLES = 5000
REQUIRED = 0.995
UNITS = 4
FUNCTIONS = 12

COMMON_H = r"""
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace common {
inline unsigned mix(unsigned x) {
  x ^= x >> 15;
  x *= 0x2c1b3c6dU;
  x ^= x >> 12;
  return x;
}
template <typename T>
inline T accumulate_mixed(const std::vector<T>& v) {
  T sum{};
  for (const T& e : v) sum += static_cast<T>(mix(static_cast<unsigned>(e)));
  return sum;
}
template <typename T>
inline std::vector<T> make_sorted(unsigned n, unsigned seed) {
  std::vector<T> v(n);
  for (unsigned i = 0; i < n; ++i) v[i] = static_cast<T>(mix(seed + i) % 1000);
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace common

extern "C" unsigned c_checksum(const unsigned* p, unsigned n);
"""

C_PART = r"""
static inline unsigned rot(unsigned x, int k) { return (x << k) | (x >> (32 - k)); }

static inline unsigned fold(unsigned h, unsigned v) { return rot(h ^ v, 5) * 16777619u; }

unsigned c_checksum(const unsigned* p, unsigned n) {
  unsigned h = 2166136261u;
  for (unsigned i = 0; i < n; ++i) h = fold(h, p[i]);
  return h;
}
"""


def unit_source(k):
    out = ['#include "common.h"', "", "namespace {"]
    for i in range(FUNCTIONS):
        out.append(f"inline unsigned step_{k}_{i}(unsigned x) {{ return common::mix(x + {i}) * "
                   f"{i + 1}u; }}")
    out.append("}  // namespace\n")
    for i in range(FUNCTIONS):
        if i % 3 == 0:
            body = f"""  std::string s(8 + x % 8, 'a' + {i});
  for (unsigned j = 0; j < s.size(); ++j) s[j] = static_cast<char>(s[j] + step_{k}_{i}(j) % 3);
  std::map<std::string, unsigned> m;
  m[s] = x;
  m[s + "x"] = step_{k}_{i}(x);
  unsigned r = 0;
  for (const auto& [key, v] : m) r += v + static_cast<unsigned>(key.size());
  return r;"""
        else:
            body = f"""  auto v = common::make_sorted<unsigned>(8 + x % 16, x + {i});
  std::map<unsigned, unsigned> m;
  for (unsigned e : v) m[e % 7] += step_{k}_{i}(e);
  unsigned r = common::accumulate_mixed(v);
  for (const auto& [key, val] : m) r ^= val + key;
  return r + c_checksum(v.data(), static_cast<unsigned>(v.size()));"""
        out.append(f"__attribute__((noinline)) unsigned fn_{k}_{i}(unsigned x) {{\n{body}\n}}\n")
    out.append(f"unsigned unit_{k}(unsigned x) {{\n  unsigned r = 0;")
    for i in range(FUNCTIONS):
        out.append(f"  r += fn_{k}_{i}(x + r);")
    out.append("  return r;\n}\n")
    return "\n".join(out)


def main_source():
    decls = "".join(f"unsigned unit_{k}(unsigned x);\n" for k in range(UNITS))
    calls = "".join(f"  r += unit_{k}(r + static_cast<unsigned>(argc));\n" for k in range(UNITS))
    return (f'#include <cstdio>\n#include "common.h"\n{decls}\nint main(int argc, char**) {{\n'
            f"  unsigned r = 0;\n{calls}  std::printf(\"%u\\n\", r);\n  return 0;\n}}\n")


def run(args, cwd, timeout=300):
    res = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    check(res.returncode == 0, f"{' '.join(args)} failed ({res.returncode}): {res.stderr[-2000:]}")
    return res


def build(name, cc, cxx, dwarf):
    """A program in <root>/<name>: sources in src/, objects and .dwo files in build/obj/ (comp_dir
    build/), the binary build/app; and the same without -gsplit-dwarf, build/app-nosplit (objects
    in build/obj-nosplit/: the same comp_dir and file names), which must have the same code.
    Returns the binary's path."""
    top = os.path.join(h.root, name)
    src = os.path.join(top, "src")
    bld = os.path.join(top, "build")
    os.makedirs(src)
    os.makedirs(os.path.join(bld, "obj"))
    files = {"common.h": COMMON_H, "c_part.c": C_PART, "main.cc": main_source()}
    for k in range(UNITS):
        files[f"unit{k}.cc"] = unit_source(k)
    for fname, text in files.items():
        with open(os.path.join(src, fname), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(bld, "obj-nosplit"))
    for objdir, out, split in (("obj", "app", ["-gsplit-dwarf"]),
                               ("obj-nosplit", "app-nosplit", [])):
        flags = ["-O2", "-g", dwarf, *split]
        objs = []
        for fname in files:
            if fname.endswith(".h"):
                continue
            obj = f"{objdir}/" + fname.rsplit(".", 1)[0] + ".o"
            compiler, std = (cc, []) if fname.endswith(".c") else (cxx, ["-std=c++17"])
            run([compiler, *flags, *std, "-c", "../src/" + fname, "-o", obj], cwd=bld)
            objs.append(obj)
        run([cxx, *flags, *objs, "-o", out], cwd=bld)
    dwos = glob.glob(os.path.join(bld, "obj", "*.dwo"))
    check(len(dwos) == len(objs), f"{name}: {len(dwos)} .dwo files for {len(objs)} objects")
    nm = [run(["nm", "-S", "--defined-only", os.path.join(bld, b)], cwd=bld).stdout
          for b in ("app", "app-nosplit")]
    check(nm[0] == nm[1], f"{name}: -gsplit-dwarf changed the code")
    return os.path.join(bld, "app")


def package(binary, tools):
    """<binary>.dwp by the first tool of `tools` that makes one in time; the tool's name."""
    out = binary + ".dwp"
    for tool in tools:
        if not shutil.which(tool):
            continue
        try:
            res = subprocess.run([tool, "-e", binary, "-o", out], cwd=os.path.dirname(binary),
                                 capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            continue
        if res.returncode == 0 and os.path.getsize(out) > 0:
            return tool
        if os.path.exists(out):
            os.unlink(out)
    check(False, f"no tool of {tools} packaged {binary}")


def hide_dwo_files(binary):
    """Moves the .dwo files away (beside the binary's directory, where nothing looks)."""
    obj = os.path.join(os.path.dirname(binary), "obj")
    away = obj + ".away"
    os.makedirs(away, exist_ok=True)
    for f in glob.glob(os.path.join(obj, "*.dwo")):
        os.rename(f, os.path.join(away, os.path.basename(f)))


def show_dwo_files(binary):
    """Moves the .dwo files back where comp_dir says."""
    obj = os.path.join(os.path.dirname(binary), "obj")
    for f in glob.glob(obj + ".away/*.dwo"):
        os.rename(f, os.path.join(obj, os.path.basename(f)))


def fresh_copy(binary, suffix):
    """A copy under another inode (the daemon caches modules by file): what the daemon reads
    now, not what it read before the split parts moved."""
    copy = binary + suffix
    shutil.copy2(binary, copy)
    return copy


def agreement(what, binary, oracle=None, nosplit=None, then=None):
    """Our frames for `binary` against llvm-symbolizer's for `oracle` (the binary itself, or the
    unstripped file for a stripped one). Where they differ, llvm-symbolizer's answer for
    `nosplit` (the same code built without -gsplit-dwarf) decides: LLVM 14 loses some inlined
    frames with DW_AT_ranges in split units (c_checksum's inlined fold and rot, with gcc and
    clang), which it lists for the same code unsplit. Both figures are printed; the second must
    reach REQUIRED, the first 99%. `then` runs between llvm-symbolizer's answers and ours."""
    oracle = oracle or binary
    addrs = sample_addresses(oracle, SAMPLES, seed=17, distinct=True)
    theirs = llvm_frames(oracle, addrs, columns=True)
    if then:
        then()
    answers = our_answers(h, binary, addrs)
    ours = [frames_of(a, columns=True) for a in answers]
    check(len(theirs) == len(addrs), f"llvm-symbolizer: {len(theirs)} answers")
    differ = [i for i, (t, o) in enumerate(zip(theirs, ours)) if t != o]
    unsplit = {}
    if differ and nosplit:
        unsplit = dict(zip(differ, llvm_frames(nosplit, [addrs[i] for i in differ],
                                               columns=True)))
    explained = [i for i in differ if unsplit.get(i) == ours[i]]
    same = len(addrs) - len(differ)
    inlined = sum(len(t) > 1 for t in theirs)
    mismatches = [f"  {hexaddr(addrs[i])}:\n    llvm: {theirs[i]}\n    unsplit: {unsplit.get(i)}"
                  f"\n    ours: {ours[i]}" for i in differ if i not in explained][:8]
    ratio = same / len(addrs)
    settled = (same + len(explained)) / len(addrs)
    print(f"{what}: {same}/{len(addrs)} addresses list the same frames as llvm-symbolizer "
          f"({ratio:.2%}); with its answers for the unsplit build where they differ "
          f"{same + len(explained)}/{len(addrs)} ({settled:.2%}); {inlined} with inlined frames")
    check(inlined >= len(addrs) // 10, f"{what}: only {inlined} addresses with inlined frames")
    check(ratio >= 0.99 and settled >= REQUIRED,
          f"{what}: agreement {ratio:.2%}, {settled:.2%} < {REQUIRED:.1%}; first "
          "mismatches:\n" + "\n".join(mismatches))
    return addrs, answers


def unsplit(binary):
    return os.path.join(os.path.dirname(binary), "app-nosplit")


def check_missing(what, binary, missing_path_part):
    """Split parts gone: names and positions as llvm-symbolizer gives them (the symbol table's
    names, the skeleton's line table), and every answer in a unit whose part is missing says
    which file."""
    addrs = sample_addresses(binary, SAMPLES // 5, seed=23, distinct=True)
    theirs = llvm_frames(binary, addrs, columns=True)
    answers = our_answers(h, binary, addrs)
    names_same = sum(t[-1][0] == frames_of(a, True)[-1][0] for t, a in zip(theirs, answers))
    frames_same = sum(t == frames_of(a, True) for t, a in zip(theirs, answers))
    with_reason = [a for a in answers if a.get("reason")]
    print(f"{what}: {names_same}/{len(addrs)} outer function names as llvm-symbolizer's "
          f"({frames_same} with the same file:line:column too); {len(with_reason)} answers say "
          "what is missing")
    check(all(a.get("found") for a in answers), f"{what}: an address in a function not found")
    check(names_same >= REQUIRED * len(addrs) and frames_same >= REQUIRED * len(addrs),
          f"{what}: names or positions differ from llvm-symbolizer's")
    check(len(with_reason) >= len(addrs) * 0.8,
          f"{what}: only {len(with_reason)} answers carry the missing-file reason")
    for a in with_reason:
        check(a["reason"] == "no_debug_info" and missing_path_part in a.get("detail", ""),
              f"{what}: reason {a.get('reason')!r}, detail {a.get('detail')!r}")
    sample = with_reason[0]
    res = h.client("explain", "--image", binary, sample["addr"])
    check(res.returncode == 0, f"explain failed: {res.stderr}")
    check("no_debug_info: " in res.stdout and missing_path_part in res.stdout,
          f"explain does not say what is missing:\n{res.stdout}")
    logged = [line for line in h.daemon.log_lines()
              if "split DWARF missing" in line and binary + ":" in line]
    check(len(logged) == 1, f"{what}: {len(logged)} log lines about the missing parts: {logged}")
    return sample


BINS = {}
DEBUGINFOD = {}  # the server, once started


def build_id(path):
    out = run(["readelf", "-n", path], cwd=os.path.dirname(path)).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    check(m, f"{path}: no build id")
    return m.group(1)


@h.setup
def start():
    for tool in ("gcc", "g++", "clang", "clang++", "llvm-symbolizer", "nm"):
        check(shutil.which(tool), f"{tool} is needed")
    BINS["gcc5"] = build("gcc5", "gcc", "g++", "-gdwarf-5")
    BINS["gcc4"] = build("gcc4", "gcc", "g++", "-gdwarf-4")
    BINS["clang5"] = build("clang5", "clang", "clang++", "-gdwarf-5")
    server = DEBUGINFOD["server"] = DebuginfodServer()
    server.export(os.path.join(h.root, "debuginfod-cache"))
    h.start_daemon()


@h.case
def gcc_dwarf5_dwo_files():
    agreement("gcc -gdwarf-5 -gsplit-dwarf, .dwo", BINS["gcc5"], nosplit=unsplit(BINS["gcc5"]))


@h.case
def gcc_dwarf4_dwo_files():
    agreement("gcc -gdwarf-4 -gsplit-dwarf, .dwo", BINS["gcc4"], nosplit=unsplit(BINS["gcc4"]))


@h.case
def clang_dwarf5_dwo_files():
    agreement("clang -gdwarf-5 -gsplit-dwarf, .dwo", BINS["clang5"],
              nosplit=unsplit(BINS["clang5"]))


@h.case
def stripped_binary_with_a_debug_file():
    """The skeletons in a separate debug file (found by its build-id... or debuglink beside the
    binary): the .dwo files still come from comp_dir."""
    src = BINS["gcc5"]
    d = os.path.join(h.root, "stripped")
    os.makedirs(d)
    binary = os.path.join(d, "app")
    run(["objcopy", "--only-keep-debug", src, binary + ".debug"], cwd=d)
    run(["objcopy", "--strip-all", "--add-gnu-debuglink=app.debug", src, binary], cwd=d)
    # llvm-symbolizer given the stripped file names outer frames from DWARF (it has no symbol
    # table there), jitsym from the debug file's: the unstripped file is the oracle.
    agreement("gcc -gdwarf-5 -gsplit-dwarf, stripped + debug file, .dwo", binary, oracle=src,
              nosplit=unsplit(src))


@h.case
def stripped_binary_with_its_debug_file_from_debuginfod():
    """A stripped binary whose skeletons are in a debug file only a debuginfod server has: once
    fetched (in the background), the .dwo files come from comp_dir as for a local one."""
    bld = os.path.dirname(BINS["gcc5"])
    full = os.path.join(bld, "app-remote")  # the same objects, a build id of its own
    objs = sorted(os.path.relpath(o, bld) for o in glob.glob(os.path.join(bld, "obj", "*.o")))
    run(["g++", "-O2", "-g", "-gdwarf-5", "-gsplit-dwarf", *objs, "-o", full,
         "-Wl,--build-id=0x" + os.urandom(20).hex()], cwd=bld)
    d = os.path.join(h.root, "remote")
    os.makedirs(d)
    binary = os.path.join(d, "app")
    run(["objcopy", "--only-keep-debug", full, full + ".debug"], cwd=bld)
    run(["strip", "--strip-all", "-o", binary, full], cwd=bld)
    server = DEBUGINFOD["server"]
    server.served[build_id(binary)] = full + ".debug"

    def fetched():
        a = our_answers(h, binary, [function_address(full, "main")])[0]
        return a if a.get("found") and a.get("frames") else None
    wait_until(fetched, 30, "the debuginfod-fetched debug file to answer")
    check(server.fetched == [build_id(binary)], f"debuginfod sent {server.fetched}")
    agreement("gcc -gdwarf-5 -gsplit-dwarf, stripped, debug file from debuginfod, .dwo", binary,
              oracle=full, nosplit=unsplit(BINS["gcc5"]))


@h.case
def a_moved_build_tree_beside_the_binary():
    """The build tree moved (comp_dir gone): the .dwo files are found beside the binary, under
    the relative DW_AT_dwo_name."""
    src = BINS["clang5"]
    show_dwo_files(src)
    moved = os.path.join(h.root, "moved")
    os.makedirs(os.path.join(moved, "obj"))
    binary = os.path.join(moved, "app")
    shutil.copy2(src, binary)
    for f in glob.glob(os.path.join(os.path.dirname(src), "obj", "*.dwo")):
        shutil.copy2(f, os.path.join(moved, "obj"))
    agreement("clang -gdwarf-5 -gsplit-dwarf, moved with its .dwo files", binary, oracle=src,
              nosplit=unsplit(src), then=lambda: hide_dwo_files(src))


@h.case
def a_moved_stripped_binary_with_its_debug_file_apart():
    """The skeletons in a debug file in .debug/ beside a stripped binary, the build tree gone:
    the .dwo files are found beside the binary (not the debug file)."""
    src = BINS["gcc4"]
    show_dwo_files(src)
    moved = os.path.join(h.root, "moved-stripped")
    os.makedirs(os.path.join(moved, "obj"))
    os.makedirs(os.path.join(moved, ".debug"))
    binary = os.path.join(moved, "app")
    run(["objcopy", "--only-keep-debug", src, os.path.join(moved, ".debug", "app.debug")],
        cwd=moved)
    run(["objcopy", "--strip-all", "--add-gnu-debuglink=" +
         os.path.join(moved, ".debug", "app.debug"), src, binary], cwd=moved)
    for f in glob.glob(os.path.join(os.path.dirname(src), "obj", "*.dwo")):
        shutil.copy2(f, os.path.join(moved, "obj"))
    agreement("gcc -gdwarf-4 -gsplit-dwarf, moved, stripped + .debug/app.debug", binary,
              oracle=src, nosplit=unsplit(src), then=lambda: hide_dwo_files(src))


@h.case
def clang_dwarf5_dwp_package():
    show_dwo_files(BINS["clang5"])
    binary = fresh_copy(BINS["clang5"], "-dwp")
    tool = package(binary, ["llvm-dwp"])
    hide_dwo_files(BINS["clang5"])
    try:
        agreement(f"clang -gdwarf-5 -gsplit-dwarf, .dwp by {tool}", binary,
                  nosplit=unsplit(binary))
    finally:
        os.unlink(binary + ".dwp")


@h.case
def a_package_wins_over_a_stale_dwo():
    """A .dwo left under comp_dir that is not the unit's (another unit's, here) does not hide
    the package's unit: the package comes first, as in llvm-symbolizer."""
    src = BINS["clang5"]
    show_dwo_files(src)
    binary = fresh_copy(src, "-stale")
    package(binary, ["llvm-dwp"])
    hide_dwo_files(src)
    obj = os.path.join(os.path.dirname(src), "obj")
    shutil.copy2(os.path.join(obj + ".away", "unit1.dwo"), os.path.join(obj, "unit0.dwo"))
    try:
        agreement("clang -gdwarf-5 -gsplit-dwarf, .dwp and a stale .dwo", binary,
                  nosplit=unsplit(binary))
    finally:
        os.unlink(os.path.join(obj, "unit0.dwo"))
        os.unlink(binary + ".dwp")


@h.case
def gcc_dwarf4_dwp_package():
    show_dwo_files(BINS["gcc4"])
    binary = fresh_copy(BINS["gcc4"], "-dwp")
    tool = package(binary, ["dwp", "llvm-dwp"])
    hide_dwo_files(BINS["gcc4"])
    try:
        agreement(f"gcc -gdwarf-4 -gsplit-dwarf, .dwp by {tool}", binary,
                  nosplit=unsplit(binary))
    finally:
        os.unlink(binary + ".dwp")


@h.case
def missing_dwo_files_named():
    for name in ("gcc5", "gcc4", "clang5"):
        hide_dwo_files(BINS[name])
        binary = fresh_copy(BINS[name], "-nodwo")
        sample = check_missing(f"{name} without .dwo", binary, "/obj/")
        print(f"  e.g. {sample['addr']} {sample['name']}: {sample['detail']}")


def function_address(binary, name):
    out = run(["nm", "--defined-only", binary], cwd=os.path.dirname(binary)).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16) + 2
    check(False, f"{name} not in {binary}")


@h.case
def a_fifo_where_a_dwo_should_be_is_not_opened():
    """libdw would block in open() on a FIFO: the path is refused before libdw sees it, and the
    answer says so (the lookup returns, names the function)."""
    src = BINS["gcc5"]
    hide_dwo_files(src)
    fifo = os.path.join(os.path.dirname(src), "obj", "unit1.dwo")
    os.mkfifo(fifo)
    try:
        binary = fresh_copy(src, "-fifo")
        addr = function_address(binary, "_Z6fn_1_1j")
        [a] = our_answers(h, binary, [addr])
        check(a.get("found") and a.get("name") == "fn_1_1(unsigned int)", f"answer: {a}")
        check(a.get("reason") == "no_debug_info" and
              f"{fifo} is not a regular file" in a.get("detail", ""), f"answer: {a}")
    finally:
        os.unlink(fifo)


@h.case
def corrupt_and_truncated_packages_are_reported_and_ignored():
    src = BINS["gcc4"]
    show_dwo_files(src)
    good = fresh_copy(src, "-pkg")
    package(good, ["dwp", "llvm-dwp"])
    hide_dwo_files(src)
    with open(good + ".dwp", "rb") as f:
        dwp = f.read()
    cases = {
        "-trunc": dwp[:len(dwp) // 2],  # section headers past the end
        "-junk": b"\x7fELF" + bytes(range(256)) * 64,
    }
    # A real package whose unit index claims contributions past its sections: its rows
    # (offsets, then sizes) are the last bytes of .debug_cu_index; make every size huge.
    index = run(["readelf", "-S", "-W", good + ".dwp"], cwd=h.root).stdout
    for line in index.splitlines():
        if ".debug_cu_index" in line:
            fields = line.split("]", 1)[1].split()
            off, size = int(fields[3], 16), int(fields[4], 16)
            bad = bytearray(dwp)
            bad[off + size - 16:off + size] = b"\xff" * 16
            cases["-index"] = bytes(bad)
    check("-index" in cases, "no .debug_cu_index in the package")
    os.unlink(good + ".dwp")
    addr = function_address(src, "_Z6fn_2_2j")
    for suffix, data in cases.items():
        binary = fresh_copy(src, suffix)
        with open(binary + ".dwp", "wb") as f:
            f.write(data)
        [a] = our_answers(h, binary, [addr])
        check(a.get("found") and a.get("name") == "fn_2_2(unsigned int)" and
              a.get("reason") == "no_debug_info" and
              f"{binary}.dwp (unreadable: see the log)" in a.get("detail", ""),
              f"{suffix}: answer {a}")
        logged = [line for line in h.daemon.log_lines() if binary + ".dwp" in line and
                  "split units only from .dwo files" in line]
        check(len(logged) == 1, f"{suffix}: the package's problem is not logged once: {logged}")
        print(f"  {suffix}: {logged[0].split('warning: ', 1)[-1][:160]}")


def all_dwo_files(binary):
    return sorted(glob.glob(os.path.join(os.path.dirname(binary), "obj", "*.dwo")))


def unit_addresses(binary, unit, n=6):
    """Addresses inside the first `n` functions of translation unit `unit` (fn_<unit>_<j>)."""
    return [function_address(binary, f"_Z{len(f'fn_{unit}_{j}')}fn_{unit}_{j}j") for j in range(n)]


def same(answer, good):
    """The same answer, for another copy of the binary."""
    return {**answer, "image": ""} == {**good, "image": ""}


def honest(answer, good):
    """`answer` is `good` (the answer with every split part), or names the same function and says
    which split part it went without."""
    if same(answer, good):
        return True
    return (answer.get("found") and answer.get("name") == good.get("name") and
            answer.get("reason") == "no_debug_info" and bool(answer.get("detail")))


@h.case
def every_dwo_and_dwp_is_opened_without_blocking():
    """A FIFO in place of a .dwo would stop a thread opened blocking, and a copy on disk would
    outlive a killed daemon: every .dwo and .dwp the daemon opens is a user's file, opened
    non-blocking, and none is written anywhere. Seen by strace on the running daemon, for .dwo
    files and a package."""
    if not shutil.which("strace"):
        print("  strace not installed: skipped")
        return
    src = BINS["clang5"]
    show_dwo_files(src)
    for suffix, with_package in (("-trace", False), ("-trace-dwp", True)):
        binary = fresh_copy(src, suffix)
        if with_package:
            package(binary, ["llvm-dwp"])
        trace = os.path.join(h.root, "strace" + suffix)
        # openat2: the daemon opens files of ordinary directories with it, relative to the
        # directory, so that the open cannot enter a FUSE mount (daemon/os/guarded_fs.h).
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o",
                                   trace, "-p", str(h.daemon.proc.pid)], stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)  # attached
            addrs = [a for k in range(UNITS) for a in unit_addresses(binary, k, 2)]
            answers = our_answers(h, binary, addrs)
        finally:
            tracer.terminate()
            tracer.wait(timeout=30)
        check(all(a.get("found") and not a.get("reason") for a in answers),
              f"{suffix}: answers without their split parts: {answers[:2]}")
        with open(trace) as f:
            opens = [line for line in f if ".dwo" in line or ".dwp" in line]
        users = [line for line in opens if "/jitsymd-split-" not in line]
        check(len(users) == len(opens), f"{suffix}: copies opened: {opens[:3]}")
        # O_PATH opens nothing (the daemon's lookups and stats): it cannot block.
        bad = [line for line in users if "O_NONBLOCK" not in line and "O_PATH" not in line]
        print(f"  {suffix}: {len(opens)} opens of .dwo/.dwp files, {len(users)} of the user's "
              f"files, all non-blocking: {not bad}")
        check(users, f"{suffix}: the trace shows no open of the user's files: {opens[:5]}")
        check(not bad, f"{suffix}: opened blocking:\n" + "".join(bad[:5]))
        if with_package:
            os.unlink(binary + ".dwp")


@h.case
def truncated_dwo_and_dwp_files_after_a_unit_was_read():
    """A user truncates his .dwo files (or his .dwp) once the daemon has read a unit: the daemon
    lives, the unit it read keeps its answers, other units answer from what is there now
    (named, with the reason when the part is gone)."""
    src = BINS["gcc4"]
    show_dwo_files(src)
    dwos = all_dwo_files(src)
    saved = {p: open(p, "rb").read() for p in dwos}
    good_binary = fresh_copy(src, "-trunc-good")
    addrs = {k: unit_addresses(src, k) for k in range(UNITS)}
    good = {k: our_answers(h, good_binary, v) for k, v in addrs.items()}
    try:
        for suffix, with_package in (("-trunc-dwo", False), ("-trunc-dwp", True)):
            binary = fresh_copy(src, suffix)
            if with_package:
                package(binary, ["dwp", "llvm-dwp"])
            first = our_answers(h, binary, addrs[1][:1])
            check(same(first[0], good[1][0]), f"{suffix}: first answer {first} != {good[1][:1]}")
            for p in dwos:
                os.truncate(p, len(saved[p]) // 3)
            if with_package:
                os.truncate(binary + ".dwp", os.path.getsize(binary + ".dwp") // 3)
            for k in (1, 0, 2, 3):
                answers = our_answers(h, binary, addrs[k])
                check(h.daemon.alive(), f"{suffix}: the daemon died")
                for a, g in zip(answers, good[k]):
                    check(honest(a, g), f"{suffix}: unit {k}:\n  {a}\n  not like {g}")
                    if k == 1:  # the unit read before: the same answers
                        check(same(a, g), f"{suffix}: unit 1 changed:\n  {a}\n  {g}")
            gone = [a for k in (0, 2, 3) for a in our_answers(h, binary, addrs[k])
                    if a.get("reason")]
            print(f"  {suffix}: daemon alive; {len(gone)} answers in other units say what is "
                  f"missing, e.g. {gone[0].get('detail') if gone else None}")
            check(with_package or gone, f"{suffix}: truncated .dwo files read as good ones")
            for p in dwos:
                with open(p, "wb") as f:
                    f.write(saved[p])
            if with_package:
                os.unlink(binary + ".dwp")
    finally:
        for p, data in saved.items():
            with open(p, "wb") as f:
                f.write(data)


@h.case
def dwo_files_changing_under_the_daemon():
    """A FIFO and a regular file swapped in turn at each .dwo path, and .dwo files truncated in
    place, while the daemon reads them for fresh modules: no lookup blocks, the daemon lives, and
    every answer is right or says what it went without."""
    src = BINS["gcc5"]
    show_dwo_files(src)
    dwos = all_dwo_files(src)
    saved = {p: open(p, "rb").read() for p in dwos}
    addrs = [a for k in range(UNITS) for a in unit_addresses(src, k, 3)]
    good = our_answers(h, fresh_copy(src, "-race-good"), addrs)
    for p in dwos:
        shutil.copy2(p, p + ".reg")
        os.mkfifo(p + ".fifo")
    stop = threading.Event()

    def swapper():
        i = 0
        while not stop.is_set():
            for p in dwos:
                tmp = p + ".tmp"
                if i % 3 == 2:  # truncated in place, then whole again
                    os.truncate(p, len(saved[p]) // 2)
                    with open(p, "r+b") as f:
                        f.write(saved[p])
                    continue
                os.link(p + (".fifo" if i % 3 == 0 else ".reg"), tmp)
                os.replace(tmp, p)
            i += 1

    t = threading.Thread(target=swapper, daemon=True)
    t.start()
    refused = 0
    try:
        for i in range(24):
            binary = fresh_copy(src, f"-race{i}")
            try:
                res = h.client("lookup", "--image", binary, "--json",
                               input="".join(hexaddr(a) + "\n" for a in addrs), timeout=20)
            except subprocess.TimeoutExpired:
                check(False, f"round {i}: a lookup blocked")
            check(res.returncode == 0, f"round {i}: {res.stderr[:300]}")
            answers = [json.loads(line) for line in res.stdout.splitlines()]
            check(len(answers) == len(addrs), f"round {i}: {len(answers)} answers")
            for a, g in zip(answers, good):
                check(honest(a, g), f"round {i}:\n  {a}\n  not like {g}")
            refused += sum(bool(a.get("reason")) for a in answers)
            os.unlink(binary)
    finally:
        stop.set()
        t.join(timeout=30)
        for p, data in saved.items():
            for extra in (".reg", ".fifo", ".tmp"):
                if os.path.lexists(p + extra):
                    os.unlink(p + extra)
            if os.path.lexists(p):
                os.unlink(p)
            with open(p, "wb") as f:
                f.write(data)
    check(h.daemon.alive(), "the daemon died")
    print(f"  24 rounds of {len(addrs)} addresses, none blocked; {refused} answers said what "
          "they went without")


@h.case
def an_absolute_dwo_name_is_read_only_when_its_file_is_the_binarys_owners():
    """An absolute DW_AT_dwo_name is read like any other place of a .dwo: a file that neither
    root nor the binary's owner owns is not read for him, and the answer tells nothing of it
    (as absent; the log says why), one of his is, when he could open it himself."""
    d = os.path.join(h.root, "absolute")
    os.makedirs(d)
    os.chmod(d, 0o755)
    with open(os.path.join(d, "a.c"), "w") as f:
        f.write("static inline int sq(int x) { return x * x; }\n"
                "int f(int x) { return sq(x) + 1; }\n"
                "int main(int argc, char** argv) { return f(argc); }\n")
    nobody = 65534
    for cc in ("gcc", "clang"):
        obj = os.path.join(d, cc + ".o")
        run([cc, "-O2", "-g", "-gsplit-dwarf", "-c", os.path.join(d, "a.c"), "-o", obj], cwd=d)
        dwo = obj[:-2] + ".dwo"
        for owner in ("root", "nobody"):
            binary = os.path.join(d, f"app-{cc}-{owner}")
            run([cc, obj, "-o", binary], cwd=d)
            info = run(["readelf", "--debug-dump=info", binary], cwd=d).stdout
            check(dwo in info, f"{cc}: the dwo name is not the absolute {dwo}")
            if owner == "nobody":
                os.chown(binary, nobody, nobody)
            os.chown(dwo, nobody, nobody)  # the .dwo is nobody's: not root's binary's
            [a] = our_answers(h, binary, [function_address(binary, "f")])
            names = [fr.get("name") for fr in a.get("frames", [])]
            print(f"  {cc}, {owner}'s binary: {names}: {a.get('detail', '')}")
            if owner == "root":
                check(a.get("found") and a.get("name") == "f" and
                      a.get("reason") == "no_debug_info", f"{cc}: {a}")
                check(f"no {dwo}" in a.get("detail", "") and "owned" not in a.get("detail", ""),
                      f"{cc}: detail {a.get('detail')!r}")
                logged = [l for l in h.daemon.log_lines() if dwo in l and
                          f"owned by uid {nobody}, neither root nor the binary's owner" in l]
                check(logged, f"{cc}: the refusal is not logged")
            else:
                # Behind the test's 0700 directory nobody could not open his .dwo himself: it
                # is not read for him either.
                check(os.stat(h.root).st_mode & 0o777 == 0o700, "the test directory is open")
                check(a.get("found") and names == ["f"], f"{cc}: a .dwo nobody cannot reach: {a}")
                logged = [l for l in h.daemon.log_lines() if dwo in l and
                          f"uid {nobody} could not read it" in l]
                check(logged, f"{cc}: the unreachable .dwo is not logged")
                reach = binary + "-reachable"
                shutil.copy(binary, reach)
                os.chown(reach, nobody, nobody)
                os.chmod(h.root, 0o755)
                try:
                    [a] = our_answers(h, reach, [function_address(reach, "f")])
                finally:
                    os.chmod(h.root, 0o700)
                names = [fr.get("name") for fr in a.get("frames", [])]
                check(a.get("found") and names == ["sq", "f"] and "reason" not in a,
                      f"{cc}: nobody's .dwo not read for nobody's binary: {a}")


@h.case
def leftover_copies_of_earlier_daemons_are_removed_and_none_are_made():
    """Earlier daemons copied split units into $TMPDIR, and one that was killed left them there:
    a daemon removes the copies of daemons that are gone, and only theirs; it makes none."""
    tmp = os.path.join(h.root, "killed-tmp")
    os.makedirs(tmp)
    sock = os.path.join(h.root, "killed.sock")
    env = dict(os.environ, TMPDIR=tmp)
    binary = BINS["gcc5"]
    addr = function_address(binary, "main")

    def copies():
        return sorted(n for n in os.listdir(tmp) if n.startswith("jitsymd-split-"))

    # A pid that is gone: a process that ran and was reaped.
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = os.path.join(tmp, f"jitsymd-split-{gone.pid}-Ab12Cd")
    os.makedirs(os.path.join(dead, "obj"))
    with open(os.path.join(dead, "obj", "unit0.dwo"), "wb") as f:
        f.write(b"\0" * 300000)
    # Another user's directory named as a leftover, and a live process's: both kept.
    foreign = os.path.join(tmp, "jitsymd-split-999999-bobdir")
    os.makedirs(foreign)
    os.chown(foreign, 65534, 65534)
    live = os.path.join(tmp, f"jitsymd-split-{os.getpid()}-alive")
    os.makedirs(live)
    log = os.path.join(h.root, "killed.log")
    proc = None
    try:
        with open(log, "w") as f:  # to a file: a pipe nobody reads would fill and stop it
            proc = subprocess.Popen([h.jitsymd, "--socket", sock, "--watch", tmp, "--log-level",
                                     "info"], env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=f)
        wait_until(lambda: proc.poll() is not None or
                   h.client("--timeout", "2", "ping", socket_path=sock).returncode == 0, 20,
                   "the daemon to answer")
        check(proc.poll() is None, f"the daemon exited: {open(log).read()[-500:]}")
        res = h.client("lookup", "--image", binary, "--json", hexaddr(addr), socket_path=sock)
        answer = json.loads(res.stdout) if res.returncode == 0 else {}
        check(answer.get("found") and "reason" not in answer,
              f"lookup: exit {res.returncode} {res.stdout!r} {res.stderr!r}")
        now = copies()
        check(os.path.basename(dead) not in now, f"left by a gone daemon, still there: {now}")
        check(sorted(now) == sorted([os.path.basename(foreign), os.path.basename(live)]),
              f"removed what was not the gone daemon's, or made copies: {now}")
        proc.terminate()
        proc.wait(20)
        err = open(log).read()
        check(re.search(r"removed 1 directory of split-unit copies", err),
              f"no log line for the removal: {err[-500:]}")
    finally:
        if proc is not None and proc.poll() is None:  # never left running
            proc.kill()
            proc.wait()
    print("  a gone daemon's copies removed at start; split units read with no copy")

h.main()
