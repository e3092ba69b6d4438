#!/usr/bin/env python3
"""`jitsym pprof` on a real gperftools CPU profile of node --perf-prof (LD_PRELOAD=libprofiler.so
CPUPROFILE=...): google-pprof --text alone shows hex for the JavaScript frames; jitsym pprof
names the hot JS functions; google-pprof reading `--symbolized OUT` agrees with jitsym's table;
--folded adds up; a summary on stderr says how many pcs stayed unnamed and warns about a pid
jitsymd knows nothing about. Native frames go through the profile's mapping list as ELF image lookups: that
case runs once the daemon answers ELF image lookups and is skipped (said so) before."""

import functools
import glob
import json
import os
import re
import shutil
import subprocess

import jitdump
import perfrec
from harness import Harness, check

h = Harness(__doc__)
RUN = {}
ROW_RE = re.compile(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.*)$")


def find_libprofiler():
    for pattern in ("/usr/lib/*/libprofiler.so.0", "/usr/lib/libprofiler.so.0",
                    "/usr/lib/*/libprofiler.so"):
        hits = glob.glob(pattern)
        if hits:
            return hits[0]
    return None


def table(text):
    """pprof --text rows: name -> (flat, cum), and the total."""
    rows, total = {}, None
    for line in text.splitlines():
        if line.startswith("Total:"):
            total = int(line.split()[1])
        m = ROW_RE.match(line)
        if m:
            rows[m.group(3).strip()] = (int(m.group(1)), int(m.group(2)))
    return rows, total


def pprof(*args):
    res = h.client("pprof", *args, timeout=120)
    check(res.returncode == 0, f"jitsym pprof {args}: {res.returncode} {res.stderr[-500:]}")
    return res.stdout


@h.setup
def profile():
    lib = find_libprofiler()
    check(lib is not None, "libprofiler.so not found (Debian: libgoogle-perftools-dev)")
    check(shutil.which("google-pprof"), "google-pprof not found (Debian: google-perftools)")
    h.start_daemon()
    out = os.path.join(h.root, "cpu.prof")
    env = dict(os.environ, LD_PRELOAD=lib, CPUPROFILE=out, CPUPROFILE_FREQUENCY="1000")
    res = subprocess.run(["node", "--perf-prof", "--expose-gc", "--allow-natives-syntax",
                          perfrec.WORKLOAD, "1", "6", "150"], cwd=h.watch_dir, env=env,
                         capture_output=True, text=True, timeout=180)
    check(res.returncode == 0, f"node under libprofiler failed: {res.stderr[-800:]}")
    check(os.path.getsize(out) > 0, "no profile written")
    dumps = glob.glob(os.path.join(h.watch_dir, "jit-*.dump"))
    check(len(dumps) == 1, f"jitdumps: {dumps}")
    pid = int(os.path.basename(dumps[0])[4:-5])
    dump = jitdump.read_file(dumps[0])
    last = [r for r in dump.loads() if r.code_size > 0][-1]
    h.wait_resolves(pid, last.code_addr, last.name, timeout=30)
    node = os.path.realpath(shutil.which("node"))
    RUN.update(profile=out, pid=pid, node=node)


@h.case
def pprof_alone_shows_hex_for_js():
    res = subprocess.run(["google-pprof", "--text", RUN["node"], RUN["profile"]],
                         capture_output=True, text=True, timeout=300)
    check(res.returncode == 0, f"google-pprof: {res.stderr[-500:]}")
    rows, total = table(res.stdout)
    check(total and total >= 100, f"only {total} samples")
    check(not any("jitsymHot" in n for n in rows), "google-pprof named JS frames by itself?")
    hexrows = sum(f for n, (f, _) in rows.items() if n.startswith("0x"))
    print(f"  google-pprof alone: {hexrows} of {total} samples in bare hex addresses")
    check(hexrows >= total // 2, "the JS samples are not hex in google-pprof's table")
    RUN["plain_rows"], RUN["total"] = rows, total


@h.case
def jitsym_names_the_hot_js_functions():
    rows, total = table(pprof(RUN["profile"], "--pid", RUN["pid"], "--text"))
    check(total == RUN["total"], f"total {total} vs google-pprof's {RUN['total']}")
    hot = {n: fc for n, fc in rows.items() if n.startswith("JS:*jitsymHot")}
    flat = sum(f for f, _ in hot.values())
    print(f"  {len(hot)} workload functions named, {flat} of {total} samples")
    check(len(hot) >= 5 and flat >= total // 2, f"hot JS functions not named: {list(rows)[:8]}")
    top = max(rows.items(), key=lambda kv: kv[1][0])[0]
    check(top.startswith("JS:*jitsymHot"), f"the top function is {top!r}")
    RUN["rows"] = rows


@h.case
def google_pprof_reads_the_symbolized_profile():
    out = os.path.join(h.root, "cpu.sym")
    res = h.client("pprof", RUN["profile"], "--pid", RUN["pid"], "--symbolized", out)
    check(res.returncode == 0, f"{res.returncode} {res.stderr}")
    with open(out, "rb") as f:
        check(f.read(11) == b"--- symbol\n", "not a symbolized profile")
    res = subprocess.run(["google-pprof", "--text", out], capture_output=True, text=True,
                         timeout=300)
    check(res.returncode == 0, f"google-pprof: {res.stderr[-500:]}")
    rows, total = table(res.stdout)
    check(total == RUN["total"], f"google-pprof counts {total} samples, expected {RUN['total']}")
    for name, (flat, cum) in RUN["rows"].items():
        if name.startswith("JS:*jitsymHot"):
            check(rows.get(name) == (flat, cum),
                  f"{name}: google-pprof says {rows.get(name)}, jitsym pprof {(flat, cum)}")
    same = sum(1 for n, fc in RUN["rows"].items() if rows.get(n) == fc)
    print(f"  google-pprof's table and jitsym pprof's agree on {same} of {len(RUN['rows'])} rows")


@h.case
def folded_adds_up():
    text = pprof(RUN["profile"], "--pid", RUN["pid"], "--folded")
    total = 0
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        total += int(count)
    check(total == RUN["total"], f"folded counts add up to {total}, not {RUN['total']}")
    check(any(l.split(" ")[0].split(";")[-1].startswith("JS:*jitsymHot") or
              ";JS:*jitsymHot" in l or l.startswith("JS:*jitsymHot") for l in text.splitlines()),
          "no stack ends in a workload function")


@h.case
def summary_says_what_stayed_unnamed_and_warns_about_an_unknown_pid():
    res = h.client("pprof", RUN["profile"], "--pid", RUN["pid"], timeout=120)
    check(res.returncode == 0, f"{res.returncode} {res.stderr[-500:]}")
    m = re.search(r"^jitsym pprof: summary: (\d+) JIT pcs \(by pid\) to name, (\d+) named, "
                  r"(\d+) left unknown$", res.stderr, re.M)
    check(m is not None and int(m.group(2)) > 0, f"no summary of the JIT pcs: {res.stderr!r}")
    check("named by jitdump: " in res.stderr and "warning" not in res.stderr,
          f"summary: {res.stderr!r}")
    print(f"  {m.group(2)} of {m.group(1)} JIT pcs named")
    # A pid jitsymd knows nothing about: the hex stays, and the user is told why.
    res = h.client("pprof", RUN["profile"], "--pid", 999999, timeout=120)
    check(res.returncode == 3, f"exit {res.returncode}, want 3 (unknown process): "
          f"{res.stderr[-500:]}")
    check("warning" in res.stderr and "pid 999999" in res.stderr,
          f"no warning about the unknown pid: {res.stderr!r}")
    check(re.search(r"^jitsym pprof: summary: \d+ JIT pcs \(by pid\) to name, 0 named", res.stderr,
                    re.M), f"summary: {res.stderr!r}")
    res = h.client("pprof", RUN["profile"], "--pid", 999999, "--quiet", timeout=120)
    check(res.returncode == 3 and res.stderr == "", f"--quiet: {res.returncode} {res.stderr!r}")


@h.case
def corrupt_and_missing_profiles():
    bad = os.path.join(h.root, "bad.prof")
    with open(RUN["profile"], "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:
        f.write(data[:100])
    res = h.client("pprof", bad, "--pid", RUN["pid"])
    check(res.returncode == 1 and "offset" in res.stderr, f"{res.returncode} {res.stderr!r}")
    res = h.client("pprof", os.path.join(h.root, "nope"), "--pid", RUN["pid"])
    check(res.returncode == 1 and "nope" in res.stderr, f"{res.returncode} {res.stderr!r}")
    res = h.client("pprof", RUN["profile"])
    check(res.returncode == 2, "missing --pid is a usage error")


def elf_lookups_supported():
    """Whether the daemon answers ELF image lookups (file offsets), on the node binary."""
    conn = h.raw_connection()
    try:
        ans = conn.request({"op": "lookup", "image": RUN["node"], "file_offset": True,
                            "addrs": ["0x1000"]})
    finally:
        conn.close()
    if not ans.get("ok"):
        return False, ans.get("error", {}).get("code")
    return True, None


@functools.lru_cache(maxsize=None)
def file_symbols(path):
    """`path`'s PT_LOAD segments (offset, vaddr, filesz) and its code symbols (start, size,
    name) from nm's full and dynamic tables: read once per file."""
    loads = []
    # readelf exits 1 on a debug file (no interpreter to show) yet prints its segments.
    for line in subprocess.run(["readelf", "-lW", path], capture_output=True,
                               text=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    symbols = []
    for flags in (["-S"], ["-D", "-S"]):
        out = subprocess.run(["nm", "--defined-only", *flags, path], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in "TtWwi":
                symbols.append((int(f[0], 16), int(f[1], 16), f[3]))
    return loads, symbols


def symbols_covering(path, offset):
    """The symbols of `path` whose [start, start+size) holds the virtual address of file offset
    `offset`: the independent answer to whether a symbol covers a pc."""
    loads, symbols = file_symbols(path)
    vaddrs = [offset - off + va for off, va, size in loads if off <= offset < off + size]
    if not vaddrs:
        return ["(offset outside every LOAD segment)"]
    return [name for start, size, name in symbols if start <= vaddrs[-1] < start + size]


CLONE_SUFFIX = re.compile(r"(\.(part|isra|constprop|cold|lto_priv|localalias|clone|llvm)"
                          r"(\.\d+)?)+$")


def base_name(name):
    """A name without the decorations the two tools print differently: pprof's ` [clone ...]`,
    symbol versions, clone suffixes (jitsym names a clone as its function, docs/formats.md),
    glibc's __GI_ prefix and leading underscores."""
    name = re.sub(r" \[clone [^]]*\]", "", name)
    name = CLONE_SUFFIX.sub("", re.sub(r"@.*$", "", name))
    return re.sub(r"^__GI_+", "", name).lstrip("_")


def debug_file(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]{4,})", out)
    if m:
        candidate = f"/usr/lib/debug/.build-id/{m.group(1)[:2]}/{m.group(1)[2:]}.debug"
        if os.path.exists(candidate):
            return candidate
    return None


@functools.lru_cache(maxsize=None)
def alias_names():
    """Each library name -> one name of its aliases (the symbols starting at one address of one
    library, its debug file's included): google-pprof prints one alias (`__libc_malloc`),
    jitsym by a documented rule another (`malloc`); both name the same function."""
    canon = {}
    libraries = {line.split()[-1] for line in profile_facts()[0]
                 if " r-xp " in line and line.split()[-1].startswith("/")}
    for path in sorted(libraries - {RUN["node"]}):
        groups = {}
        for f in filter(None, (path, debug_file(path))):
            for start, _, name in file_symbols(f)[1]:
                groups.setdefault(start, set()).add(base_name(name))
        for names in groups.values():
            for n in names:
                canon.setdefault(n, min(names))
    return canon


@functools.lru_cache(maxsize=None)
def profile_facts():
    """The profile's mapping lines and google-pprof's per-address table: read once."""
    with open(RUN["profile"], "rb") as f:
        maps = f.read().decode("latin-1").splitlines()
    res = subprocess.run(["google-pprof", "--text", "--addresses", RUN["node"], RUN["profile"]],
                         capture_output=True, text=True, timeout=300)
    return maps, res.stdout.splitlines()


def explain_pc(pc):
    """Where a pc is (the profile's mapping line), what google-pprof calls it, what the daemon
    answers for its file offset, and which symbols of the file cover it (nm)."""
    addr = int(pc, 16)
    maps, table = profile_facts()
    out = {"pc": pc, "mapping": "no mapping", "jitsymd": None, "covering": None}
    for line in maps:
        m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) ([0-9a-f]+) \S+ \d+\s+(/.*)$", line)
        if m and int(m.group(1), 16) <= addr < int(m.group(2), 16):
            out["mapping"] = line.strip()
            offset = addr - int(m.group(1), 16) + int(m.group(4), 16)
            conn = h.raw_connection()
            try:
                ans = conn.request({"op": "lookup", "image": m.group(5), "file_offset": True,
                                    "addrs": [hex(offset)]})
            finally:
                conn.close()
            out["jitsymd"] = (ans.get("results") or [ans])[0]
            out["covering"] = symbols_covering(m.group(5), offset)
    near = {f"{a:016x}" for a in (addr - 1, addr, addr + 1)}
    out["google-pprof"] = [l.strip() for l in table if near & set(l.split())][:2]
    return out


@h.case
def native_frames_named_through_the_mapping_list():
    ok, code = elf_lookups_supported()
    if not ok:
        # ELF symbolization is not in this daemon yet: it answers an ELF image lookup of the
        # node binary with not_found. This case checks native names once it does.
        check(code == "not_found", f"ELF image lookup failed with {code!r}")
        print("  SKIPPED: the daemon answers ELF image lookups with not_found")
        return
    # google-pprof symbolizes native code itself (nm, addr2line -i on the files and their
    # separate debug info): its table is the oracle. Where several symbols share an address
    # the two may pick different aliases, and pprof decorates names (overloads as name@addr,
    # symbol versions, clones): compared with those decorations off and aliases as one name.
    ours, theirs = RUN["rows"], RUN["plain_rows"]
    aliases = alias_names()

    def norm(name):
        name = base_name(name)
        return aliases.get(name, name)

    # No native pc left unnamed that a symbol covers: a hex row of ours that is not a hex row of
    # google-pprof's (JIT code) is a pc in a file where no symbol covers it (nm, with sizes),
    # and the daemon said so. google-pprof (addr2line) names such a pc after the symbol before
    # it, past that symbol's end (a local function of a stripped library): a guess, not ours.
    ours_hex = {n for n in ours if n.startswith("0x")}
    theirs_hex = {n for n in theirs if n.startswith("0x")}
    guessed = [explain_pc(pc) for pc in sorted(ours_hex - theirs_hex)]
    wrong = [e for e in guessed if e["covering"] is None or e["covering"] or
             e["jitsymd"].get("found") is not False or
             e["jitsymd"].get("reason") not in ("no_debug_info", "no_symbol")]
    check(not wrong, f"pcs google-pprof names, jitsym pprof does not: {wrong[:5]}")
    if guessed:
        print(f"  {len(guessed)} pcs no symbol covers (google-pprof names them after the symbol "
              f"before): {[(e['pc'], e['jitsymd'].get('detail')) for e in guessed[:3]]}")
    mine = {}
    for n, (f, c) in ours.items():
        if not n.startswith("0x"):
            mine[norm(n)] = (mine.get(norm(n), (0, 0))[0] + f, max(mine.get(norm(n), (0, 0))[1], c))
    native = {}
    for n, (f, c) in theirs.items():
        if not n.startswith("0x"):
            native[norm(n)] = (native.get(norm(n), (0, 0))[0] + f,
                               max(native.get(norm(n), (0, 0))[1], c))
    flat = sum(f for f, _ in native.values())
    same_flat = sum(f for n, (f, _) in native.items() if mine.get(n, (None,))[0] == f)
    same_rows = sum(1 for n, fc in native.items() if mine.get(n) == fc)
    print(f"  native functions: {same_rows} of {len(native)} of google-pprof's rows equal in "
          f"jitsym pprof's; {same_flat} of {flat} native leaf samples named alike")
    check(len(native) >= 20, f"only {len(native)} native functions in google-pprof's table")
    check(same_rows >= 0.85 * len(native) and same_flat >= 0.8 * flat,
          "native names differ: " + str([(n, fc, mine.get(n)) for n, fc in native.items()
                                         if mine.get(n) != fc][:10]))


h.main()
