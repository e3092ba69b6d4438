#!/usr/bin/env python3
"""Native symbolization agrees with `llvm-symbolizer --inlines` on a large C++ binary with DWARF
built in this build (the unit tests, -O2 -g; $JITSYM_TEST_ELF): the same function names and
file:line for every frame, inlined frames included, for at least 99% of thousands of sampled
addresses."""

import os
import shutil
import subprocess

from harness import Harness, check, hexaddr
from native_oracle import (llvm_frames, normalized_position, our_frames, sample_addresses,
                           without_clone)

h = Harness(__doc__)
ELF = os.environ.get("JITSYM_TEST_ELF", "")
SAMPLES = 4000
REQUIRED = 0.99


@h.setup
def start():
    check(ELF and os.path.exists(ELF), "JITSYM_TEST_ELF must name a binary with DWARF")
    check(shutil.which("llvm-symbolizer"), "llvm-symbolizer is needed (Debian package llvm)")
    h.start_daemon()


@h.case
def agrees_with_llvm_symbolizer():
    addrs = sample_addresses(ELF, SAMPLES)
    theirs = llvm_frames(ELF, addrs)
    ours = our_frames(h, ELF, addrs)
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


LAMBDAS = r"""
#include <cstdio>
#include <functional>
#include <vector>
volatile int sink;
auto ns_lambda = [](int x) { for (int i = 0; i < x; ++i) sink += i * x; return sink; };
struct Holder {
  std::function<int(int)> f = [](int y) { int s = 0; for (int i = 0; i < y; ++i) s += i ^ y; return s; };
  struct Inner { int g(int z) { int s = 0; for (int i = 0; i < z; ++i) s += i * 3; return s; } };
  template <class T> int h(T t) { return t(3) + 1; }
};
namespace n {
struct S { static int m(int v) { auto l = [v](int q) { return q * v + sink; }; return l(v) + l(2); } };
}
int run(int a) {
  struct Local { static int k(int w) { int s = 0; for (int i = 0; i < w; ++i) s += sink * i; return s; } };
  Holder h;
  Holder::Inner in;
  std::vector<int> v(a, 2);
  auto fn = [&](int q) __attribute__((noinline)) {
    std::vector<int> w(q, 3);
    w.push_back(q);
    return w[1] + v[0];
  };
  return ns_lambda(a) + h.f(a) + in.g(a) + Local::k(a) + n::S::m(a) + fn(a) + fn(a + 1) +
         h.h([&](int q) { return q + v[0]; });
}
int main(int argc, char**) { std::printf("%d\\n", run(argc * 5)); }
"""


@h.case
def lambdas_and_classes_local_and_not():
    """Code of lambdas (namespace scope, member initializers, in functions), local classes and
    nested classes, from gcc and clang at -O0 and -O2: every address's frames as llvm-symbolizer
    lists them. (Classes outside functions are not walked; those inside are.)"""
    src = os.path.join(h.root, "lambdas.cc")
    with open(src, "w") as f:
        f.write(LAMBDAS)
    for cxx in ("g++", "clang++"):
        if not shutil.which(cxx):
            continue
        for opt in ("-O0", "-O2"):
            binary = os.path.join(h.root, f"lambdas-{cxx}{opt}")
            subprocess.run([cxx, opt, "-g", "-o", binary, src], check=True)
            addrs = sample_addresses(binary, 3000, distinct=True)
            theirs = llvm_frames(binary, addrs)
            ours = our_frames(h, binary, addrs)
            differ = [(hexaddr(a), t, o) for a, t, o in zip(addrs, theirs, ours) if t != o]
            print(f"  {cxx} {opt}: {len(addrs) - len(differ)}/{len(addrs)} the same")
            check(len(differ) <= len(addrs) // 200, f"{cxx} {opt}: first differences {differ[:3]}")


h.main()
