#!/usr/bin/env python3
"""A jitdump written outside every watched directory: V8 writes jit-<pid>.dump into its working
directory, and node is started in a scratch directory no --watch covers (the JVMTI agent and
LLVM JITs use ~/.debug/jit/... the same way). Every jitdump writer maps its file as a marker for
perf, so the daemon finds it through /proc/PID/maps. While node still runs, its hot functions
answer with the names in the file within about 2 s of the file appearing; a daemon started
while node already runs finds it as well (the scan at start-up), also among 1,000 processes."""

import os
import shutil
import subprocess
import time

import containers
import harness
import jitdump
import oracle
from harness import Harness, check, hexaddr

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
LIVE = os.path.join(HERE, "node", "live_workload.js")
FOUND_WITHIN = 2.0  # seconds from the file's appearance to the first right answer
HOST_PROCESSES = 1000
# Among HOST_PROCESSES: "new processes within about a second" (one discovery tick), with room
# for a loaded machine, and well below the two ticks it would take to read every older
# process's maps first.
FOUND_WITHIN_BUSY = 1.5
NODE = {}


def start_node(cwd):
    node = shutil.which("node")
    check(node is not None, "node is not on PATH")
    os.makedirs(cwd, exist_ok=True)
    proc = h.spawn([node, "--perf-prof", "--interpreted-frames-native-stack", LIVE], cwd=cwd,
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    path = os.path.join(cwd, f"jit-{proc.pid}.dump")
    appeared = harness.wait_until(lambda: os.path.exists(path) and time.monotonic(), 30,
                                  f"{path} to appear", interval=0.005)
    line = harness.read_line(proc, 60, "node")
    check(line.startswith("ready"), f"unexpected node output {line!r}")
    return proc, path, appeared


def low_pid_after(pids):
    """Makes the next fork take a pid below every pid in `pids`, as after pid_max wraps (32768 on
    many hosts): writes the last pid to /proc/sys/kernel/ns_last_pid. False where that is refused."""
    floor = 300  # the kernel restarts at 300 after a wrap
    taken = {int(n) for n in os.listdir("/proc") if n.isdigit()}
    free = next((p for p in range(floor + 1, min(pids)) if p not in taken and p + 1 not in taken
                 and p + 2 not in taken), None)
    if free is None:
        return False
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(free - 1))
        return True
    except OSError:
        return False


def hot(path):
    dump = jitdump.read_file(path)
    check(dump is not None and dump.error is None, f"our reader: {dump and dump.error}")
    loads = [r for r in dump.loads() if r.code_size > 0 and "jitsymHot" in r.name]
    check(loads, f"no LOAD of the workload's functions in {path} yet")
    return oracle.Oracle(dump), loads


def answers_right(pid, model, loads):
    queries = [(a, r.eff_ts) for r in loads
               for a in (r.code_addr, r.code_addr + r.code_size // 2)]
    answers = h.lookup(pid, queries)
    return [f"{hexaddr(a)} @ {t}: got {ans.get('name')!r}, want {model.lookup(a, t).name!r}"
            for (a, t), ans in zip(queries, answers) if ans.get("name") != model.lookup(a, t).name]


def wait_first_answer(pid, model, loads, since, what, within=None):
    last = loads[-1]
    want = model.lookup(last.code_addr, last.eff_ts).name
    left = max(since + (within or FOUND_WITHIN) - time.monotonic(), 0.3)
    try:
        h.wait_resolves(pid, last.code_addr, want, t=last.eff_ts, timeout=left)
    except harness.Failure as e:
        raise harness.Failure(f"{what}: {e}")
    delay = time.monotonic() - since
    print(f"  {what}: first right answer {delay:.2f}s after the file appeared")
    return delay


@h.setup
def start_daemon():
    h.start_daemon(containers.DISCOVERY)  # watches h.watch_dir only


@h.case
def a_jitdump_in_an_unwatched_working_directory_answers_while_node_runs():
    scratch = os.path.join(h.root, "scratch", "service")
    proc, path, appeared = start_node(scratch)
    NODE.update(proc=proc, path=path)
    print(f"  node pid {proc.pid} writes {path}; the daemon watches only {h.watch_dir}")
    model, loads = hot(path)
    wait_first_answer(proc.pid, model, loads, appeared, "unwatched working directory")
    model, loads = hot(path)
    bad = answers_right(proc.pid, model, loads)
    check(proc.poll() is None, "node exited before the lookups: not a live test")
    check(not bad, f"{len(bad)} wrong:\n  " + "\n  ".join(bad[:8]))
    res = h.client("processes", "--json")
    mine = [p for p in harness.json_documents(res.stdout)
            if isinstance(p, dict) and p.get("pid") == proc.pid]
    srcs = [s.get("path") for p in mine for s in p.get("sources", [])]
    check(any(s and s.endswith(f"jit-{proc.pid}.dump") for s in srcs),
          f"`processes` lists no jitdump for node {proc.pid}: {mine}")


@h.case
def a_daemon_started_after_node_finds_its_jitdump_at_start_up():
    proc, path = NODE["proc"], NODE["path"]
    check(proc.poll() is None, "node is gone")
    h.daemon.stop()
    h.start_daemon(containers.DISCOVERY)
    started = time.monotonic()
    model, loads = hot(path)
    wait_first_answer(proc.pid, model, loads, started, "a daemon started after node")
    bad = answers_right(proc.pid, model, loads)
    check(not bad, f"{len(bad)} wrong:\n  " + "\n  ".join(bad[:8]))


@h.case
def among_1000_processes_new_jit_processes_are_found_within_a_second_of_a_start():
    # A production host runs a thousand processes or more, most of them older than the JIT
    # process of interest. Neither the scan at start-up nor the first seconds after it may
    # leave a new process waiting behind every older process's maps (about 2 s here with
    # 1,000, where one discovery tick is 1 s).
    have = sum(1 for n in os.listdir("/proc") if n.isdigit())
    sleepers = [h.spawn(["sleep", "300"], stdin=subprocess.DEVNULL)
                for _ in range(max(0, HOST_PROCESSES - have))]
    try:
        total = sum(1 for n in os.listdir("/proc") if n.isdigit())
        print(f"  {total} processes on the host")
        # Started after them, with a lower pid than theirs (pids wrapped), then the daemon
        # (re)starts: the scan at start-up. Newest means started last, not the highest pid.
        wrapped = low_pid_after([s.pid for s in sleepers] or [1 << 22])
        proc, path, _ = start_node(os.path.join(h.root, "scratch", "newer"))
        if wrapped and sleepers and proc.pid < min(s.pid for s in sleepers):
            print(f"  node pid {proc.pid} is below the older processes' pids "
                  f"{min(s.pid for s in sleepers)}..{max(s.pid for s in sleepers)}")
        else:
            print(f"  pids could not be made to wrap (node pid {proc.pid}): "
                  "the wrapped case is not exercised")
        h.daemon.stop()
        h.start_daemon(containers.DISCOVERY)
        model, loads = hot(path)
        late = None
        started = time.monotonic()
        try:
            wait_first_answer(proc.pid, model, loads, started,
                              f"a daemon started among {total} processes", FOUND_WITHIN_BUSY)
        except harness.Failure as e:
            last = loads[-1]
            try:  # how late, for the report
                h.wait_resolves(proc.pid, last.code_addr,
                                model.lookup(last.code_addr, last.eff_ts).name, t=last.eff_ts,
                                timeout=20)
                late = harness.Failure(f"{e}; it answered {time.monotonic() - started:.2f}s "
                                       "after the start")
            except harness.Failure:
                late = harness.Failure(f"{e}; not even within 20 s")
        # Started just as the daemon is ready.
        h.daemon.stop()
        h.start_daemon(containers.DISCOVERY)
        proc2, path2, appeared = start_node(os.path.join(h.root, "scratch", "newest"))
        model2, loads2 = hot(path2)
        try:
            wait_first_answer(proc2.pid, model2, loads2, appeared,
                              f"node started as the daemon became ready among {total} "
                              "processes", FOUND_WITHIN_BUSY)
        except harness.Failure as e:
            late = harness.Failure(f"{late}\n  {e}" if late else str(e))
        if late:
            raise late
    finally:
        for s in sleepers:
            h.kill_child(s.pid)


@h.case
def a_jitdump_under_a_debug_jit_directory_is_found_too():
    # The JVMTI agent writes ~/.debug/jit/java-jit-<date>.XXXXXXXX/jit-<pid>.dump; the same
    # layout with node as the writer.
    home = os.path.join(h.root, "home")
    cwd = os.path.join(home, ".debug", "jit", "java-jit-20261124.XXabcdef")
    proc, path, appeared = start_node(cwd)
    model, loads = hot(path)
    wait_first_answer(proc.pid, model, loads, appeared, "~/.debug/jit layout")
    bad = answers_right(proc.pid, model, loads)
    check(not bad, f"{len(bad)} wrong:\n  " + "\n  ".join(bad[:8]))
    proc.stdin.close()
    check(proc.wait(30) == 0, f"node exited with {proc.returncode}")
    # Still answered after the exit, with the file deleted as a cleanup would.
    os.unlink(path)
    bad = answers_right(proc.pid, model, loads)
    check(not bad, f"after the exit: {len(bad)} wrong:\n  " + "\n  ".join(bad[:8]))


h.main()
