#!/usr/bin/env python3
"""Thread ids: `perf script` with its default fields prints the thread id, not the pid, of each
sample of a multi-threaded process. Two real multi-threaded JIT workloads, a JVM (hot methods on
worker threads, `jcmd <pid> Compiler.perfmap` writing /tmp/perf-<pid>.map) and node
worker_threads (--perf-prof, a jitdump), are each recorded with `perf record -k mono -g` and
annotated after the process exited (the JVM's map file removed too), from perf's default fields,
from `-F comm,tid,time,ip,sym` (no dso: only the thread id tells the process) and from
`-F comm,pid,tid,time,ip,sym,dso`: the first two must name the JIT frames as the third does (at
least 99.5% agree) and name most of them. A worker thread's id is also looked up directly,
`jitsym lookup --pid <tid>`, while the process runs and after it exited.

Exits SKIP (77) without perf; prints SKIPPED for a part whose runtime (java, node) is missing."""

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import time

import harness
import jitdump
import perfmap
import perfrec
import users
from harness import Harness, check, wait_until

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = 3
WORK_MS = 2500
# Measured on this machine (OpenJDK 17, node 20, perf 6.1; 5 runs, 8,700-25,700 JIT frames of
# the JVM, 3,100-9,200 of node): 100% agreement, and 100% of the frames in the process's
# /tmp/perf-<pid>.map dso named (frames in [unknown] are mostly not code: broken stack walks).
# Before thread ids were resolved: 0.05% (JVM) and 2.6% (node) agreement.
MIN_AGREEMENT = 0.995
MIN_NAMED = 0.99
JIT_ORIGINS = ("jitdump", "perfmap")
ANSWER_RE = re.compile(r"^\t\s*[0-9a-f]+ (.*)\+0x[0-9a-f]+ \((jitdump|perfmap|mlpd|r2rmap|elf):.*\)$")
STATE = {}


def perf_map_dso(dso, pid):
    return dso == f"/tmp/perf-{pid}.map"


def jit_dso(dso):
    """What the client treats as JIT code (client/perf_script_parser.cc IsJitDso)."""
    if dso is None:
        return True
    if dso in ("[unknown]", "//anon") or dso.startswith("[anon") or dso.startswith("/memfd:"):
        return True
    base = os.path.basename(dso)
    return bool(re.fullmatch(r"perf-\d+\.map|jit-\d+\.dump", base))


def annotate(text):
    res = subprocess.run([h.jitsym, "--socket", h.socket_path, "annotate"], input=text.encode(
        "utf-8", "surrogateescape"), capture_output=True, timeout=600)
    check(res.returncode == 0, f"annotate exited {res.returncode}: {res.stderr[-500:]!r}")
    return res.stdout.decode("utf-8", "surrogateescape")


def answered(line):
    m = ANSWER_RE.match(line)
    return (m.group(1), m.group(2)) if m else None


def compare(perf, data, pid, what):
    """Annotates perf script's default output and the -F comm,pid,tid,... output; returns the
    counts and checks the agreement and naming floors."""
    default = perf_script_text(perf, data)
    explicit = perf_script_text(perf, data, "-F", "comm,pid,tid,time,ip,sym,dso")
    # Without the dso, nothing on the frame names the process: the thread id alone must do.
    tid_only = perf_script_text(perf, data, "-F", "comm,tid,time,ip,sym")
    headers = [l for l in default.split("\n") if l and not l.startswith("\t")]
    tids = {l.split()[1] for l in headers if len(l.split()) > 1}
    check(str(pid) in tids or len(tids) > 1, f"{what}: unexpected headers {headers[:3]}")
    a_default = annotate(default).split("\n")
    a_explicit = annotate(explicit).split("\n")
    a_tid = annotate(tid_only).split("\n")
    plain = default.split("\n")
    check(len(a_default) == len(plain) and len(a_explicit) == len(plain) and
          len(a_tid) == len(plain), f"{what}: the outputs differ in lines ({len(plain)}, "
          f"{len(a_default)}, {len(a_explicit)}, {len(a_tid)})")
    jit = agree = agree_tid = named = in_map = in_map_named = 0
    other_threads = other_named = 0
    disagreements = []
    header = ""
    for orig, d, e, t in zip(plain, a_default, a_explicit, a_tid):
        if not orig.startswith("\t"):
            if orig.strip():
                header = orig
            continue
        frame = perfrec.parse_frame(orig)
        if frame is None or not jit_dso(frame[2]):
            continue
        jit += 1
        ad, ae = answered(d), answered(e)
        at = answered(t)
        if ad == ae:
            agree += 1
        elif len(disagreements) < 5:
            disagreements.append(f"{header.strip()} | {orig.strip()}: default {ad}, -F {ae}")
        if at == ae:
            agree_tid += 1
        elif len(disagreements) < 5:
            disagreements.append(f"{header.strip()} | {orig.strip()}: tid only {at}, -F {ae}")
        named += ad is not None
        if perf_map_dso(frame[2], pid):
            in_map += 1
            in_map_named += ad is not None and ad[1] in JIT_ORIGINS
            if header.split()[1:2] != [str(pid)]:
                other_threads += 1
                other_named += ad is not None
    agreement = agree / jit if jit else 0.0
    agreement_tid = agree_tid / jit if jit else 0.0
    named_share = in_map_named / in_map if in_map else 0.0
    print(f"  {what}: {jit} JIT frames, default fields agree on {agree} ({agreement:.4%}), "
          f"-F comm,tid,time,ip,sym on {agree_tid} ({agreement_tid:.4%}); {named} named; "
          f"frames in /tmp/perf-{pid}.map: {in_map_named} of {in_map} named ({named_share:.2%}), "
          f"{other_named} of {other_threads} on threads other than the main one")
    check(jit >= 1000, f"{what}: only {jit} JIT frames recorded")
    check(other_threads >= jit // 2, f"{what}: most JIT frames should be on worker threads "
          f"({other_threads} of {jit})")
    check(agreement >= MIN_AGREEMENT, f"{what}: default fields and -F pid,tid agree on "
          f"{agreement:.4%} of JIT frames, want >= {MIN_AGREEMENT:.1%}:\n  " +
          "\n  ".join(disagreements))
    check(agreement_tid >= MIN_AGREEMENT, f"{what}: -F comm,tid,time,ip,sym and -F pid,tid "
          f"agree on {agreement_tid:.4%} of JIT frames, want >= {MIN_AGREEMENT:.1%}:\n  " +
          "\n  ".join(disagreements))
    check(named_share >= MIN_NAMED, f"{what}: {named_share:.2%} of the frames in the process's "
          f"JIT dso named with the default fields, want >= {MIN_NAMED:.0%}")


def perf_script_text(perf, data, *extra):
    return perfrec.perf_script(perf, data, *extra)


def thread_ids(pid):
    tids = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                utime = int(f.read().rsplit(")", 1)[1].split()[11])
        except OSError:
            continue
        tids.append((int(t), comm, utime))
    return tids


def threads_remembered(pid):
    res = h.client("processes", "--json")
    check(res.returncode == 0, f"processes: {res.stderr[-300:]}")
    for doc in harness.json_documents(res.stdout):
        for p in harness.find_dicts(doc, "incarnation"):
            if p.get("pid") == pid and p.get("alive"):
                return p.get("threads", 0)
    return 0


def record(perf, data, cmd, cwd):
    """Starts `perf record -k mono -g` on cmd; returns (perf process, the workload's pid)."""
    proc = h.spawn([perf, "record", "-q", "-k", "mono", "-e", "cpu-clock", "-F", "999", "-g",
                    "-o", data, "--"] + cmd, cwd=cwd, stdin=subprocess.PIPE,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = harness.read_line(proc, 120, cmd[0])
    check(line.split()[:1] == ["ready"], f"unexpected output {line!r}")
    return proc, int(line.split()[1])


def finish(proc, what):
    proc.stdin.close()
    code = proc.wait(120)
    check(code == 0, f"{what} under perf record exited {code}: {proc.stderr.read()[-500:]!r}")


def check_thread_lookup(pid, tid, addrs, name_part, when):
    """`jitsym lookup --pid TID` answers the process's JIT code, without and with a time."""
    now = time.monotonic_ns()
    answers = h.lookup(tid, [(a, None) for a in addrs] + [(a, now) for a in addrs])
    bad = [a for a in answers if not (a.get("found") and name_part in a.get("name", ""))]
    check(not bad, f"{when}: lookup --pid {tid} (a thread of {pid}): {len(bad)} of "
          f"{len(answers)} not named: {bad[:2]}")
    print(f"  {when}: lookup --pid {tid} (thread of {pid}) named {len(answers)} addresses")


def attempt(fn, *args):
    """Runs a check while the workload lives; its failure is reported by a later case, so that
    the recording goes on and every later case still runs."""
    try:
        fn(*args)
        return None
    except AssertionError as e:
        return str(e)


def live_checks(run, pid, tid, addrs, name_part):
    run["live"] = attempt(check_thread_lookup, pid, tid, addrs, name_part, "live")

    def remembered():
        try:
            wait_until(lambda: threads_remembered(pid) >= THREADS + 1, 10,
                       f"the thread ids of {pid} in `processes`")
        except AssertionError as e:
            raise AssertionError(f"{e}; processes: {h.client('processes', '--json').stdout[:600]}")
    run["remembered"] = attempt(remembered)


def report(run, key):
    check(run, "the workload did not run (see the case before)")
    check(run[key] is None, run[key] or "")


@h.setup
def start_daemon():
    STATE["perf"] = perfrec.require_perf(h.root)
    h.start_daemon(extra_args=["--watch", "/tmp"])


def java_missing():
    for tool in ("java", "javac", "jcmd"):
        if shutil.which(tool) is None:
            return f"{tool} not on PATH"
    return None


JVM = {}
NODE = {}


@h.case
def jvm_runs_worker_threads_under_perf():
    if java_missing():
        print(f"  SKIPPED: {java_missing()}")
        return
    perf = STATE["perf"]
    classes = os.path.join(h.root, "classes")
    os.makedirs(classes, exist_ok=True)
    res = subprocess.run(["javac", "-d", classes, os.path.join(HERE, "java", "JitsymThreads.java")],
                         capture_output=True, text=True, timeout=180)
    check(res.returncode == 0, f"javac failed: {res.stderr[-1000:]}")
    data = os.path.join(h.root, "jvm.data")
    proc, pid = record(perf, data, ["java", "-XX:+PreserveFramePointer", "-cp", classes,
                                    "JitsymThreads", str(THREADS), str(WORK_MS)], h.root)
    path = f"/tmp/perf-{pid}.map"
    STATE.setdefault("cleanup", []).append(path)
    res = subprocess.run(["jcmd", str(pid), "Compiler.perfmap"], capture_output=True, text=True,
                         timeout=60)
    check(res.returncode == 0, f"jcmd Compiler.perfmap: {res.stdout[-300:]} {res.stderr[-300:]}")
    lines = perfmap.read(path)
    hot = [l for l in lines if "jitsymThreadSpin" in l.name and l.size]
    check(hot, f"no jitsymThreadSpin in {path}")
    workers = [t for t, comm, _ in thread_ids(pid) if comm.startswith("jitsymWorker")]
    check(len(workers) == THREADS, f"worker threads of {pid}: {thread_ids(pid)}")
    addrs = [l.start + l.size // 2 for l in hot]
    h.wait_resolves(pid, addrs[0], perfmap.latest(lines, addrs[0]).name, timeout=10)
    JVM.update(pid=pid, workers=workers, addrs=addrs, data=data)
    live_checks(JVM, pid, workers[0], addrs, "jitsymThreadSpin")
    finish(proc, "java")
    os.unlink(path)  # after the exit the daemon's copy is all there is


@h.case
def jvm_thread_id_answers_while_it_runs():
    report(JVM, "live")


@h.case
def jvm_thread_ids_are_listed_in_processes():
    report(JVM, "remembered")


@h.case
def jvm_thread_id_answers_after_exit():
    check(JVM, "the JVM did not run")
    check_thread_lookup(JVM["pid"], JVM["workers"][-1], JVM["addrs"], "jitsymThreadSpin",
                        "after exit")
    # `symbols` (here through `jitsym perfmap`) by a thread id lists the process's symbols.
    res = h.client("perfmap", "--pid", JVM["workers"][-1], "-o", "-")
    check(res.returncode == 0, f"perfmap --pid {JVM['workers'][-1]}: {res.stderr[-300:]}")
    check("jitsymThreadSpin" in res.stdout,
          f"perfmap --pid {JVM['workers'][-1]} lacks the hot methods: {res.stdout[:300]!r}")


@h.case
def jvm_default_fields_name_what_pid_tid_fields_name():
    check(JVM, "the JVM did not run")
    compare(STATE["perf"], JVM["data"], JVM["pid"], "JVM")


@h.case
def node_runs_worker_threads_under_perf():
    if shutil.which("node") is None:
        print("  SKIPPED: node not on PATH")
        return
    perf = STATE["perf"]
    data = os.path.join(h.root, "node.data")
    cwd = h.watch_dir
    script = os.path.join(HERE, "node", "worker_hot.js")
    proc, pid = record(perf, data, ["node", "--perf-prof", script, str(THREADS), str(WORK_MS)],
                       cwd)
    dump = os.path.join(cwd, f"jit-{pid}.dump")
    loads = [r for r in jitdump.read_file(dump).loads() if "jitsymWorkerHot" in r.name]
    check(loads, f"no jitsymWorkerHot in {dump}")
    # The workers: the threads that spent the most CPU time, the main thread apart.
    busy = sorted((t for t in thread_ids(pid) if t[0] != pid), key=lambda t: -t[2])[:THREADS]
    workers = [t for t, _, _ in busy]
    last = {}
    for r in loads:
        last[r.code_addr] = r
    addrs = [a + last[a].code_size // 2 for a in last]
    wait_until(lambda: all(a.get("found") for a in h.lookup(pid, [(x, None) for x in addrs])),
               10, "node's worker functions in the index")
    NODE.update(pid=pid, workers=workers, addrs=addrs, data=data)
    live_checks(NODE, pid, workers[0], addrs, "jitsymWorkerHot")
    finish(proc, "node")


@h.case
def node_thread_id_answers_while_it_runs():
    report(NODE, "live")


@h.case
def node_thread_ids_are_listed_in_processes():
    report(NODE, "remembered")


@h.case
def node_thread_id_answers_after_exit():
    check(NODE, "node did not run")
    check_thread_lookup(NODE["pid"], NODE["workers"][-1], NODE["addrs"], "jitsymWorkerHot",
                        "after exit")


@h.case
def node_default_fields_name_what_pid_tid_fields_name():
    check(NODE, "node did not run")
    compare(STATE["perf"], NODE["data"], NODE["pid"], "node worker_threads")


@h.case
def another_users_thread_ids_are_treated_as_their_process():
    """jsalice's node (worker_threads, --perf-basic-prof: /tmp/perf-<pid>.map owned by her):
    jsbob asking by one of its thread ids is refused while it runs and told nothing after, as
    for the pid; jsalice gets the answers both times."""
    if shutil.which("node") is None:
        print("  SKIPPED: node not on PATH")
        return
    users.ensure_both()
    client = users.share_like_tmp(h)
    script = os.path.join(h.root, "worker_hot.js")
    shutil.copy(os.path.join(HERE, "node", "worker_hot.js"), script)
    os.chmod(script, 0o644)
    proc = users.spawn(users.ALICE, ["node", "--perf-basic-prof", script, "2", "1500"],
                       cwd=h.watch_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    STATE.setdefault("procs", []).append(proc)
    # setpriv execs node: the process is node itself, and its map is known now.
    STATE.setdefault("cleanup", []).append(f"/tmp/perf-{proc.pid}.map")
    line = harness.read_line(proc, 60, "node as jsalice")
    check(line.split()[:1] == ["ready"] and len(line.split()) == 2,
          f"node as jsalice printed {line!r}")
    pid = int(line.split()[1])
    check(pid == proc.pid, f"node's pid {pid} is not the child's {proc.pid}")
    path = f"/tmp/perf-{pid}.map"
    lines = [l for l in perfmap.read(path) if "jitsymWorkerHot" in l.name and l.size]
    check(lines, f"no jitsymWorkerHot in {path}")
    addrs = [l.start + l.size // 2 for l in lines]
    busy = sorted((t for t in thread_ids(pid) if t[0] != pid), key=lambda t: -t[2])
    tid = busy[0][0]
    wait_until(lambda: threads_remembered(pid) >= 3, 10, f"the thread ids of {pid}")

    def ask(user):
        text = "".join(harness.hexaddr(a) + "\n" for a in addrs)
        res = users.client(user, client, h.socket_path, "lookup", "--pid", tid, "--json",
                           input=text)
        # 4 (denied) for the live process of another user, 3 (unknown) once it exited.
        check(res.returncode in (0, 3, 4), f"lookup as {user}: {res.stderr[-300:]}")
        return [json.loads(l) for l in res.stdout.splitlines() if l.strip()]

    mine = ask(users.ALICE)
    check(all(a.get("found") and "jitsymWorkerHot" in a.get("name", "") for a in mine),
          f"jsalice asking by her thread id {tid}: {mine[:2]}")
    theirs = ask(users.BOB)
    check(all(not a.get("found") and a.get("error") == "permission denied" for a in theirs),
          f"jsbob asking by jsalice's live thread id {tid}: {theirs[:2]}")
    proc.stdin.close()
    check(proc.wait(60) == 0, "node as jsalice failed")
    mine = ask(users.ALICE)
    check(all(a.get("found") for a in mine), f"jsalice after the exit: {mine[:2]}")
    theirs = ask(users.BOB)
    check(all(not a.get("found") and not a.get("error") for a in theirs),
          f"jsbob after the exit must be told what an unknown id gets: {theirs[:2]}")
    os.unlink(path)
    print(f"  thread {tid} of jsalice's {pid}: {len(addrs)} addresses named for her, "
          "refused to jsbob live, unknown to him after the exit")


def cleanup():
    for proc in STATE.get("procs", []):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for path in STATE.get("cleanup", []):
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    atexit.register(cleanup)
    h.main()
