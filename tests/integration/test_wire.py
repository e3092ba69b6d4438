#!/usr/bin/env python3
"""Binary lookup answers against the real daemon: `jitsym lookup` prints byte for byte the same
with `--wire binary` (its default) as with `--wire json`, in text, --inlines and --json output,
for native answers of a program built here (inlined frames, misses, bad input lines, a symbol
whose name has invalid UTF-8 and control bytes), for found answers that lack their split DWARF
(no_debug_info), for a JIT process's perf map and for a jitdump (line tables, a move, reused
code, lookups at times), over many requests and frames. The binary form read by hand from the
socket (header line, frames, string table, member bits as docs/protocol.md specifies) has
every member the JSON answer to the same request has, native and JIT, with "fields" too; a
request refused as a whole gets the JSON error line; an encoding the daemon does not know gets
the JSON answer. Bulk input goes out on two connections (with two cores), in order."""

import json
import os
import random
import shutil
import subprocess
import time

import jitdump
from harness import Harness, check, hexaddr, wait_until

h = Harness(__doc__)
FIX = {}

PROGRAM = r"""
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

static inline __attribute__((always_inline)) unsigned mix(unsigned x) {
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  return x ^ (x >> 15);
}
template <int N> __attribute__((noinline)) unsigned step(unsigned x) {
  for (int i = 0; i < N; ++i) x = mix(x + i);
  return x;
}
__attribute__((noinline)) unsigned weird_name_here(unsigned x) { return step<3>(x) * 7; }
__attribute__((noinline)) unsigned count_words(const std::string& s) {
  std::map<std::string, unsigned> seen;
  std::string w;
  for (char c : s) {
    if (c == ' ') { ++seen[w]; w.clear(); } else { w += c; }
  }
  return static_cast<unsigned>(seen.size());
}
int main(int argc, char** argv) {
  std::vector<unsigned> v;
  for (int i = 0; i < argc * 1000; ++i) v.push_back(step<5>(i) + step<9>(i) + weird_name_here(i));
  std::printf("%u\n", count_words(argv[0]) + v[argc]);
  return 0;
}
"""

# Invalid UTF-8 (\xff, a lone continuation byte), a control byte and a tab in one name.
WEIRD = b"weird\xff\x80name\x01with\ttab"


def run(args, **kw):
    res = subprocess.run(args, capture_output=True, **kw)
    check(res.returncode == 0, f"{args[0]} failed: {res.stderr[-1000:]}")
    return res


def functions(path):
    out = run(["nm", "-S", "--defined-only", path]).stdout.decode("latin-1")
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] in "tTwW" and int(parts[1], 16) > 0:
            funcs.append((int(parts[0], 16), int(parts[1], 16)))
    return funcs


@h.setup
def start():
    for tool in ("g++", "objcopy", "nm"):
        check(shutil.which(tool), f"{tool} is needed")
    d = os.path.join(h.root, "prog")
    os.makedirs(d)
    with open(os.path.join(d, "prog.cc"), "w") as f:
        f.write(PROGRAM)
    prog = os.path.join(d, "prog")
    run(["g++", "-O2", "-g", "-o", prog + ".plain", os.path.join(d, "prog.cc")])
    # The symbol renamed to bytes no compiler writes (argv carries any byte but NUL).
    run([b"objcopy", b"--redefine-sym", b"_Z15weird_name_herej=" + WEIRD,
         (prog + ".plain").encode(), prog.encode()])
    check(WEIRD in run(["nm", prog]).stdout, "the renamed symbol is not in the program")
    FIX["prog"] = prog
    rng = random.Random(5)
    funcs = functions(prog)
    addrs = [s + rng.randrange(z) for s, z in (rng.choice(funcs) for _ in range(20000))]
    addrs += [0x10, 0xffffffffff]  # outside every function
    lines = [hexaddr(a) for a in addrs]
    for i, bad in enumerate(["zzz", "0x", "12abq", "0x" + "f" * 20]):
        lines.insert(1000 * (i + 1), bad)
    FIX["input"] = "".join(line + "\n" for line in lines)
    FIX["addrs"] = addrs
    h.start_daemon()


def both_wires(*args, input):
    out = {}
    for wire in ("binary", "json"):
        res = h.client("lookup", *args, "--wire", wire, input=input, timeout=300)
        check(res.returncode == 0, f"lookup --wire {wire} {' '.join(args)}: {res.stderr[:500]}")
        out[wire] = res.stdout
    return out["binary"], out["json"]


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return f"line {i + 1}:\n  binary: {x[:300]}\n  json:   {y[:300]}"
    return f"lengths {len(a)} and {len(b)}"


@h.case
def native_answers_are_the_same_either_way():
    for mode in ([], ["--inlines"], ["--json"]):
        for batch in ([], ["--batch", "700"]):
            binary, text = both_wires("--image", FIX["prog"], *mode, *batch,
                                      input=FIX["input"])
            check(binary == text, f"{mode} {batch}: {first_difference(binary, text)}")
            lines = binary.splitlines()
            check(len(lines) == len(FIX["input"].splitlines()),
                  f"{mode}: {len(lines)} lines for {len(FIX['input'].splitlines())}")
        if mode == ["--json"]:
            answers = [json.loads(line) for line in lines]
            found = sum(a.get("found", False) for a in answers)
            inlined = sum(len(a.get("frames", [])) > 1 for a in answers)
            errors = sum("error" in a for a in answers)
            print(f"  {len(answers)} answers: {found} found, {inlined} with inlined frames, "
                  f"{errors} input errors")
            check(found >= 19000 and inlined >= 1000 and errors == 4,
                  "the batch does not exercise found, inlined and bad lines")
            weird = [a for a in answers if a.get("name", "").startswith("weird")]
            check(weird and all(a["name"] == "weird\ufffd\ufffdname\x01with\ttab" for a in weird),
                  f"the weird name as JSON carries it: {weird[:1]}")
        elif mode == ["--inlines"]:
            check(any(line.count("\t") > 6 for line in lines), "no inlined frames printed")
        else:
            weird = [line for line in lines if "\tweird" in line]
            check(weird and all("weird\ufffd\ufffdname with tab+0x" in line for line in weird),
                  f"the weird name as text prints it: {weird[:1]}")



@h.case
def found_answers_that_lack_debug_info_are_the_same_either_way():
    """A -gsplit-dwarf program without its .dwo: found answers say no_debug_info, and why."""
    d = os.path.join(h.root, "split")
    os.makedirs(d)
    src = os.path.join(d, "split.cc")
    with open(src, "w") as f:
        f.write(PROGRAM)
    prog = os.path.join(d, "split")
    run(["g++", "-O2", "-g", "-gsplit-dwarf", "-c", src, "-o", prog + ".o"], cwd=d)
    run(["g++", prog + ".o", "-o", prog])
    for name in os.listdir(d):
        if name.endswith(".dwo"):
            os.unlink(os.path.join(d, name))
    rng = random.Random(7)
    funcs = functions(prog)
    text = "".join(hexaddr(s + rng.randrange(z)) + "\n"
                   for s, z in (rng.choice(funcs) for _ in range(9000)))
    for mode in ([], ["--inlines"], ["--json"]):
        binary, plain = both_wires("--image", prog, *mode, input=text)
        if mode == ["--json"]:
            lacking = sum('"reason":"no_debug_info"' in line for line in plain.splitlines())
            check(lacking > 0, "no found answer says no_debug_info in JSON")
        check(binary == plain, f"{mode}: {first_difference(binary, plain)}")

@h.case
def jit_answers_are_the_same_either_way():
    pid = h.sleeper()
    base = 0x7e5500000000
    entries = [(base + 0x100 * i, 0x80, f"LazyCompile:*fn{i} /srv/app{i % 7}.js:{i}")
               for i in range(3000)]
    with open(os.path.join(h.watch_dir, f"perf-{pid}.map"), "wb") as f:
        for start, size, name in entries:
            f.write(f"{start:x} {size:x} {name}\n".encode())
        f.write(b"%x 80 " % (base + 0x100 * 3000) + WEIRD + b"\n")
    rng = random.Random(9)
    addrs = [base + rng.randrange(0x100 * 3001) for _ in range(12000)]
    text = "".join(hexaddr(a) + "\n" for a in addrs)

    def settled():
        res = h.client("lookup", "--pid", pid, hexaddr(base + 0x100 * 3000 + 1))
        return "weird" in res.stdout
    wait_until(settled, 10, "the perf map to be read")
    for mode in ([], ["--inlines"], ["--json"]):
        binary, plain = both_wires("--pid", str(pid), *mode, input=text)
        check(binary == plain, f"{mode}: {first_difference(binary, plain)}")
        check(len(binary.splitlines()) == len(addrs), f"{mode}: wrong number of lines")



@h.case
def jitdump_answers_are_the_same_either_way():
    """Loads with line tables, a move, code reused later, the weird name: lookups at times."""
    pid = h.sleeper()
    t0 = time.monotonic_ns()
    code = 0x7e6600000000
    w = jitdump.Writer(pid)
    data = w.header(t0)
    n = 2000
    for i in range(n):
        at = code + 0x100 * i
        if i % 3 == 0:
            src = f"/srv/jit/mod{i % 5}.js"
            data += w.debug_info(t0 + 10 + i, at, [(at, 10 + i, 0, src),
                                                   (at + 0x40, 20 + i, 0, src)])
        name = WEIRD if i == 7 else f"Function::compiled_{i}(int)"
        data += w.load(t0 + 10 + i, at, 0x80, name, i + 1)
    data += w.move(t0 + 5000, code + 0x100, code + 0x100 * n, 0x80, 2)
    data += w.load(t0 + 6000, code + 0x100 * 5, 0x80, "reused_later", n + 1)
    h.write_file(h.dump_path(pid), data)
    h.wait_resolves(pid, code + 0x100 * 5 + 1, "reused_later")
    FIX["jit"] = (pid, t0, code, n)
    rng = random.Random(11)
    lines = []
    for i in range(12000):
        addr = hexaddr(code + rng.randrange(0x100 * (n + 2)))
        when = rng.choice([None, t0 + rng.randrange(7000), t0 - 1])
        lines.append(addr if when is None else f"{addr} {when}")
    # The weird name, the moved code and the reused range, now and at their times.
    for i in range(0, 0x80, 8):
        lines += [hexaddr(code + 0x700 + i), hexaddr(code + 0x100 * n + i),
                  f"{hexaddr(code + 0x500 + i)} {t0 + 5500}", hexaddr(code + 0x500 + i)]
    for i, bad in enumerate(["0xzz", "0x10 notatime", "", "0x10 -5"]):
        lines.insert(3000 * (i + 1), bad)
    text = "".join(line + "\n" for line in lines)
    for mode in ([], ["--inlines"], ["--json"]):
        binary, plain = both_wires("--pid", str(pid), *mode, input=text)
        check(binary == plain, f"{mode}: {first_difference(binary, plain)}")
        if mode == ["--json"]:
            answers = [json.loads(line) for line in binary.splitlines()]
            kinds = (sum("file" in a for a in answers), sum("reason" in a for a in answers),
                     sum("error" in a for a in answers),
                     sum(a.get("name", "").startswith("weird") for a in answers))
            print(f"  {len(answers)} jitdump answers: {kinds[0]} with a file, {kinds[1]} "
                  f"misses, {kinds[2]} input errors, {kinds[3]} weird names")
            check(all(k > 0 for k in kinds), "the batch does not exercise every kind")

def read_exact(sock, buf, n):
    while len(buf) < n:
        chunk = sock.recv(1 << 20)
        check(chunk, "the daemon closed the connection inside a binary answer")
        buf += chunk
    return buf


class Frames:
    """The results of a binary answer, decoded as docs/protocol.md describes it."""
    MEMBERS = ["found", "raw", "name", "offset", "start", "size", "origin", "source",
               "loaded_at", "incarnation", "file", "line", "column", "image", "build_id",
               "frames", "clone", "reason", "detail", "error"]
    STRINGS = {"name", "origin", "source", "file", "image", "build_id", "clone", "reason"}
    TEXTS = {"detail", "error"}

    def __init__(self):
        self.strings = []
        self.results = []

    def decode(self, data):
        self.data, self.pos = data, 0
        count = int.from_bytes(self.take(4), "little")
        for _ in range(count):
            self.results.append(self.result())
        check(self.pos == len(data), f"{len(data) - self.pos} bytes after the frame's results")

    def take(self, n):
        out = self.data[self.pos:self.pos + n]
        check(len(out) == n, "a frame ends inside a value")
        self.pos += n
        return out

    def uleb(self):
        value, shift = 0, 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    def text(self):
        return self.take(self.uleb()).decode("utf-8")  # well-formed, as JSON's strings

    def string(self):
        k = self.uleb()
        if k == 0:
            self.strings.append(self.text())
            return self.strings[-1]
        check(k - 1 < len(self.strings), f"string {k - 1} of {len(self.strings)}")
        return self.strings[k - 1]

    def result(self):
        members = self.uleb()
        r = {"found": bool(members & 1)}
        r["addr"] = self.text() if members & 2 else hexaddr(self.uleb())
        for bit, name in enumerate(self.MEMBERS[2:], start=2):
            if not members & (1 << bit):
                continue
            if name in self.STRINGS:
                r[name] = self.string()
            elif name in self.TEXTS:
                r[name] = self.text()
            elif name == "frames":
                r[name] = [[self.string(), self.string(), self.uleb(), self.uleb()]
                           for _ in range(self.uleb())]
            else:
                r[name] = self.uleb()
        check(members < (1 << len(self.MEMBERS)), f"unknown member bits {members:#x}")
        return r


def normalize_json(r):
    """A JSON answer's result in the shape Frames gives (numbers as numbers, frames as lists)."""
    out = dict(r)
    for key in ("offset", "start"):
        if key in out and isinstance(out[key], str):
            out[key] = int(out[key], 16)
    if "frames" in out:
        out["frames"] = [[f.get("name", ""), f.get("file", ""), f.get("line", 0),
                          f.get("column", 0)] for f in out["frames"]]
    return out


def binary_answer(conn, request, table=None):
    """Sends `request` with "encoding":"binary" and reads the answer by hand: (header, results,
    frames, bytes, strings). The connection is left after the end marker. With `table` (a list),
    the answer's strings go into the connection's table ("string_table":"connection"), which
    `table` is: emptied when the header keeps none of it."""
    extra = {} if table is None else {"string_table": "connection"}
    conn.send(dict(request, encoding="binary", **extra))
    sock, buf = conn.sock, read_exact_line(conn.sock, conn.buf)
    line, buf = buf.split(b"\n", 1)
    header = json.loads(line)
    if not header.get("ok"):
        conn.buf = buf
        return header, None, 0, 0, 0
    frames, decoder, total = 0, Frames(), 0
    if table is not None:
        kept = header.get("strings_kept")
        check(kept in (0, len(table)), f"strings_kept {kept} of a table of {len(table)}")
        if kept == 0:
            table.clear()
        decoder.strings = table
    while True:
        buf = read_exact(sock, buf, 4)
        length = int.from_bytes(buf[:4], "little")
        buf = buf[4:]
        if length == 0:
            break
        check(length <= 64 << 20, f"a frame of {length} bytes")
        buf = read_exact(sock, buf, length)
        decoder.decode(buf[:length])
        buf = buf[length:]
        frames += 1
        total += length
    conn.buf = buf
    return header, decoder.results, frames, total, len(decoder.strings)


def same_results(what, got, reference):
    """Every member of every result, both ways (no member only one form carries)."""
    want = [normalize_json(r) for r in reference]
    check(len(got) == len(want), f"{what}: {len(got)} results, {len(want)} in JSON")
    for i, (g, w) in enumerate(zip(got, want)):
        check(g == w, f"{what}: result {i}:\n  binary: {str(g)[:400]}\n  json:   {str(w)[:400]}")


@h.case
def the_binary_form_read_by_hand_is_the_json_answer():
    addrs = [hexaddr(a) for a in FIX["addrs"][:9000]] + ["nonsense", "0x"]
    request = {"v": 1, "id": 41, "op": "lookup", "image": FIX["prog"], "addrs": addrs}
    conn = h.raw_connection(timeout=60)
    reference = conn.request(request)
    check(reference.get("ok") and len(reference["results"]) == len(addrs),
          f"JSON answer: {str(reference)[:300]}")
    header, got, frames, total, strings = binary_answer(conn, request)
    check(header == {"v": 1, "id": 41, "ok": True, "encoding": "binary"}, f"header {header}")
    check(frames >= 2, f"{frames} frame(s) for {len(addrs)} results of {total} bytes")
    same_results("native", got, reference["results"])
    print(f"  {len(got)} results in {frames} frames ({total} bytes), {strings} strings")
    # The same connection goes on speaking JSON.
    pong = conn.request({"v": 1, "op": "ping"})
    check(pong.get("ok"), f"ping after a binary answer: {pong}")
    # Some members only ("fields"), and no id: the header has none either.
    few = dict(request, addrs=addrs[:500] + ["bad"], fields=["name", "frames"])
    del few["id"]
    reference = conn.request(few)
    header, got, _, _, _ = binary_answer(conn, few)
    check(header == {"v": 1, "ok": True, "encoding": "binary"}, f"header {header}")
    same_results("fields", got, reference["results"])
    # JIT answers (source, loaded_at, incarnation, file and line), at a time and at none.
    pid, t0, code, n = FIX["jit"]
    rng = random.Random(3)
    jit_addrs = [hexaddr(code + rng.randrange(0x100 * (n + 2))) for _ in range(3000)]
    jit_addrs = [a if i % 3 else {"addr": a, "time": t0 + rng.randrange(7000)}
                 for i, a in enumerate(jit_addrs)] + [{"addr": "0x1", "time": "never"}]
    jit = {"v": 1, "id": "j", "op": "lookup", "pid": pid, "addrs": jit_addrs}
    reference = conn.request(jit)
    check(reference.get("ok"), f"JSON answer: {str(reference)[:300]}")
    header, got, _, _, _ = binary_answer(conn, jit)
    check(header == {"v": 1, "id": "j", "ok": True, "encoding": "binary"}, f"header {header}")
    same_results("jitdump", got, reference["results"])
    check(any("loaded_at" in r and "incarnation" in r and "source" in r and "line" in r
              for r in got), "no JIT answer with loaded_at, incarnation, source and line")
    # A request refused as a whole: the usual JSON error line, no frames.
    refused = {"v": 1, "id": 43, "op": "lookup", "image": "relative/path", "addrs": ["0x1"]}
    want = conn.request(refused)
    header, got, _, _, _ = binary_answer(conn, refused)
    check(not want.get("ok") and header == want and got is None,
          f"a refused binary request: {header}, JSON: {want}")
    # An encoding this daemon does not speak: the JSON answer.
    other = conn.request(dict(request, addrs=addrs[:3], encoding="cbor"))
    check(other.get("ok") and len(other.get("results", [])) == 3 and "encoding" not in other,
          f"unknown encoding: {str(other)[:300]}")
    pong = conn.request({"v": 1, "op": "ping"})
    check(pong.get("ok"), f"ping at the end: {pong}")
    conn.close()


@h.case
def strings_are_kept_across_the_answers_of_a_connection():
    addrs = [hexaddr(a) for a in FIX["addrs"][:3000]] + ["0x10"]
    request = {"v": 1, "op": "lookup", "image": FIX["prog"], "addrs": addrs}
    conn = h.raw_connection(timeout=60)
    reference = conn.request(request)["results"]
    table, sizes = [], []
    for i in range(3):
        before = len(table)
        header, got, _, total, _ = binary_answer(conn, request, table)
        check(header.get("strings_kept") == before, f"answer {i}: header {header}")
        same_results(f"answer {i}", got, reference)
        sizes.append(total)
        if i == 0:
            first_table = len(table)
            text = sum(len(t.encode()) for t in table)
            check(first_table > 100, f"{first_table} strings in the table")
    # The strings went once: the answers after the first send (almost) none anew.
    check(len(table) <= first_table + 2 and sizes[0] - sizes[1] >= text // 2,
          f"bytes per answer {sizes}, table {first_table} strings ({text} bytes) then "
          f"{len(table)}")
    # Answers in another form in between leave the table as it is.
    header, got, _, _, _ = binary_answer(conn, dict(request, addrs=addrs[:10]))
    check("strings_kept" not in header, f"a per-answer table: {header}")
    check(conn.request(dict(request, addrs=addrs[:10])).get("ok"), "a JSON answer in between")
    before = len(table)
    header, got, _, _, _ = binary_answer(conn, request, table)
    check(header.get("strings_kept") == before > 0, f"after other answers: {header}")
    same_results("after other answers", got, reference)
    # The table pins what its strings point into, 16 slices at most: a run of small answers
    # (a slice each) makes it start anew, and every answer still reads right.
    restarts = 0
    for i in range(20):
        one = dict(request, addrs=addrs[i * 7:i * 7 + 7])
        before = len(table)
        header, got, _, _, _ = binary_answer(conn, one, table)
        restarts += header.get("strings_kept") == 0 and before > 0
        same_results(f"small answer {i}", got, reference[i * 7:i * 7 + 7])
    check(restarts == 1, f"the table started anew {restarts} times in 20 small answers")
    conn.close()


def read_exact_line(sock, buf):
    while b"\n" not in buf:
        chunk = sock.recv(1 << 20)
        check(chunk, "the daemon closed the connection before the header line")
        buf += chunk
    return buf


@h.case
def bulk_input_goes_out_on_two_connections():
    if len(os.sched_getaffinity(0)) < 2:
        print("  one core: one connection (nothing to check)")
        return
    if not shutil.which("strace"):
        print("  no strace: not checked")
        return
    trace = os.path.join(h.root, "connect.trace")
    # LeakSanitizer cannot run under ptrace (a sanitized build of the client).
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    res = subprocess.run(["strace", "-f", "-e", "trace=connect", "-o", trace, h.jitsym,
                          "--socket", h.socket_path, "lookup", "--image", FIX["prog"]],
                         input=FIX["input"], capture_output=True, text=True, timeout=300, env=env)
    check(res.returncode == 0, f"lookup under strace: {res.stderr[-500:]}")
    with open(trace) as f:
        connects = sum(h.socket_path in line and "= 0" in line for line in f)
    check(connects == 2, f"{connects} connections for {len(FIX['addrs'])} addresses")
    # All of it as one batch, on one connection: the same lines in the same order.
    one = h.client("lookup", "--image", FIX["prog"], "--batch", "30000",
                   input=FIX["input"], timeout=300)
    check(one.returncode == 0 and res.stdout == one.stdout, "two connections changed the output")
    # One address: one connection.
    subprocess.run(["strace", "-f", "-e", "trace=connect", "-o", trace, h.jitsym, "--socket",
                    h.socket_path, "lookup", "--image", FIX["prog"], hexaddr(FIX["addrs"][0])],
                   capture_output=True, timeout=60, check=True, env=env)
    with open(trace) as f:
        connects = sum(h.socket_path in line and "= 0" in line for line in f)
    check(connects == 1, f"{connects} connections for one address")


@h.case
def a_daemon_with_no_connection_to_spare_answers_on_one():
    """The second connection is answered busy (the daemon's limit): every batch goes on the
    first, and the lookup succeeds."""
    from harness import Daemon
    sock = os.path.join(h.root, "one.sock")
    d = Daemon(h.jitsymd, [h.watch_dir], sock, os.path.join(h.root, "one.log"),
               ["--max-connections", "1"])
    d.start()
    try:
        wait_until(lambda: h.client("ping", socket_path=sock, timeout=5).returncode == 0, 20,
                   "the second daemon to answer")
        res = h.client("lookup", "--image", FIX["prog"], input=FIX["input"], socket_path=sock,
                       timeout=300)
        check(res.returncode == 0, f"lookup at the connection limit: {res.stderr[:300]}")
        one = h.client("lookup", "--image", FIX["prog"], "--batch", "30000",
                       input=FIX["input"], timeout=300)
        check(res.stdout == one.stdout, "the answers differ from one batch's")
    finally:
        d.stop()


if __name__ == "__main__":
    h.main()
