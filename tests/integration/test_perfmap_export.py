#!/usr/bin/env python3
"""`jitsym perfmap --pid PID` writes /tmp/perf-PID.map from what the daemon knows, and unmodified
`perf script` / `perf report` then name the JIT frames of a real node profile they showed as
[unknown]. An existing map is never replaced without --force; only root and the owner may export."""

import os
import subprocess

import perfrec
from harness import Harness, check

h = Harness(__doc__)
RUN = {}


@h.setup
def record():
    perf = perfrec.require_perf(h.root)
    h.start_daemon()
    data = os.path.join(h.root, "perf.data")
    # One round: the functions stay alive, so the map (which has no time) is right for them.
    pid = perfrec.record_node(perf, data, h.watch_dir, [perfrec.WORKLOAD, "1", "8", "120"])
    mapfile = f"/tmp/perf-{pid}.map"
    check(not os.path.exists(mapfile), f"{mapfile} exists before the export")
    RUN.update(perf=perf, data=data, pid=pid, mapfile=mapfile)
    RUN["before"] = perfrec.perf_script(perf, data, "-F", "pid,time,ip,sym,dso")
    # The daemon has read the whole jitdump once the last workload function resolves.
    h.wait_resolves(pid, *last_hot_function(pid), timeout=30)


def last_hot_function(pid):
    import jitdump
    dump = jitdump.read_file(h.dump_path(pid))
    hot = [r for r in dump.loads() if "jitsymHot7" in r.name]
    check(hot, "jitsymHot7 was not compiled")
    return hot[-1].code_addr, hot[-1].name


def export(*args, **kwargs):
    return h.client("perfmap", "--pid", RUN["pid"], *args, **kwargs)


def jit_frames(text):
    """Callchain frames in perf's JIT map dso, as (sample index, frame index) -> sym."""
    out = {}
    for i, (_, frames) in enumerate(perfrec.samples(text)):
        for j, (_, sym, dso) in enumerate(frames):
            if dso and dso.endswith(f"/perf-{RUN['pid']}.map"):
                out[(i, j)] = perfrec.strip_offset(sym)
    return out


@h.case
def perf_names_frames_after_export():
    before = jit_frames(RUN["before"])
    unknown = [k for k, s in before.items() if s == "[unknown]"]
    check(len(unknown) >= 200, f"only {len(unknown)} unknown JIT frames before the export")
    res = export()
    check(res.returncode == 0, f"exit {res.returncode}: {res.stderr}")
    check(os.path.exists(RUN["mapfile"]), "no map written")
    try:
        after = jit_frames(perfrec.perf_script(RUN["perf"], RUN["data"], "-F",
                                               "pid,time,ip,sym,dso"))
        # The oracle: annotate, which asks by sample time.
        named = perfrec.samples(subprocess.run(
            [h.jitsym, "--socket", h.socket_path, "annotate"], input=RUN["before"].encode(),
            capture_output=True, timeout=120).stdout.decode())
        named_now = sum(1 for k in unknown if after.get(k, "[unknown]") != "[unknown]")
        same = sum(1 for (i, j) in unknown
                   if after.get((i, j)) == perfrec.strip_offset(named[i][1][j][1]))
        hot = sum(1 for k in unknown if after.get(k, "").startswith("JS:*jitsymHot"))
        print(f"  {named_now} of {len(unknown)} unknown JIT frames named by perf after the export, "
              f"{same} as annotate names them, {hot} in the workload's functions")
        check(named_now >= 0.99 * len(unknown), "perf left JIT frames unnamed")
        check(same >= 0.95 * len(unknown), "perf names disagree with annotate's")
        check(hot >= 100, "the hot functions are not named")
        report = subprocess.run([RUN["perf"], "report", "-i", RUN["data"], "--stdio",
                                 "--sort", "sym"], capture_output=True, text=True, timeout=120)
        check(report.returncode == 0 and "jitsymHot" in report.stdout,
              f"perf report does not list the workload's functions: {report.stderr[-300:]}")
    finally:
        RUN["map_text"] = open(RUN["mapfile"]).read()
        os.unlink(RUN["mapfile"])


@h.case
def map_lines_match_lookups():
    res = export("-o", "-")
    check(res.returncode == 0, f"exit {res.returncode}: {res.stderr}")
    lines = res.stdout.splitlines()
    check(lines and res.stdout == RUN["map_text"], "stdout differs from the file written before")
    entries = []
    last_end = 0
    for line in lines:
        start, size, name = line.split(" ", 2)
        start, size = int(start, 16), int(size, 16)
        check(size > 0 and start >= last_end, f"overlapping or empty line: {line!r}")
        last_end = start + size
        entries.append((start, size, name))
    # Every line is what a lookup answers now, at its first and last byte.
    queries = [(a, None) for s, n, _ in entries for a in (s, s + n - 1)]
    answers = h.lookup(RUN["pid"], queries)
    wrong = [(hex(a), ans.get("name"), entries[k // 2][2]) for k, ((a, _), ans) in
             enumerate(zip(queries, answers)) if ans.get("name") != entries[k // 2][2]]
    print(f"  {len(entries)} lines, {len(queries) - len(wrong)} of {len(queries)} ends agree "
          "with lookups")
    check(not wrong, f"{len(wrong)} disagree: {wrong[:5]}")


@h.case
def existing_map_needs_force():
    path = os.path.join(h.root, "existing.map")
    with open(path, "w") as f:
        f.write("1000 10 runtime_wrote_this\n")
    res = export("-o", path)
    check(res.returncode == 1 and "--force" in res.stderr, f"{res.returncode} {res.stderr!r}")
    check(open(path).read() == "1000 10 runtime_wrote_this\n", "the existing map was touched")
    res = export("-o", path, "--force")
    check(res.returncode == 0, f"--force: {res.returncode} {res.stderr}")
    check("runtime_wrote_this" not in open(path).read(), "--force did not replace the map")


@h.case
def errors():
    res = h.client("perfmap", "--pid", "99999999999")
    check(res.returncode == 2, f"bad pid: {res.returncode}")
    res = h.client("perfmap", "--pid", "4194000", "-o", "-")
    check(res.returncode == 1 and "not_found" in res.stderr, f"unknown pid: {res.stderr!r}")
    # Another user may not list the process's symbols. The recorded process has exited: it is
    # told what it would be told for a pid the daemon never saw (a live process of someone
    # else would be "permission_denied").
    os.chmod(h.root, 0o755)
    res = subprocess.run([h.jitsym, "--socket", h.socket_path, "perfmap", "--pid",
                          str(RUN["pid"]), "-o", "-"], capture_output=True, text=True,
                         timeout=30, preexec_fn=lambda: os.setuid(65534))
    expected = "permission_denied" if os.path.exists(f"/proc/{RUN['pid']}") else "not_found"
    check(res.returncode == 1 and expected in res.stderr and not res.stdout,
          f"uid 65534 got {res.returncode}: {res.stderr!r} {res.stdout[:200]!r}")


h.main()
