#!/usr/bin/env python3
"""node in real containers (`unshare --pid --fork --mount --mount-proc`), profiled with
`perf record -k mono -g` on the host, with the daemon watching its own directory only (in place
of the host's /tmp, its default).

With a private /tmp (a tmpfs mounted in the container, as Docker and Kubernetes give): node
--perf-prof writes jit-<nspid>.dump and --perf-basic-prof writes perf-<nspid>.map there, where no
watch reaches. `perf script | jitsym annotate` must still name >= 99.5% of the JIT frames that a
time-correct resolution from the container's own jitdump (copied out before the container
ended) names; the host process whose pid equals the container pid (and init) gets none of them;
the answers stay after the container and its /tmp are gone; `processes` shows node with its
namespace pid and pid namespace.

With a shared /tmp (no tmpfs; node is pid 1 in its namespace and writes jit-1.dump into a watched
host directory): the file belongs to node's host pid, which maps it, never to host pid 1.

A JVM in a private-/tmp container, its perf map snapshot taken from the host with
`jcmd <host pid> Compiler.perfmap`: found in the container's /tmp, answered by host pid.
"""

import os
import shutil
import subprocess

import containers
import harness
import jitdump
import oracle
import perfmap
import perfrec
from harness import Harness, check, hexaddr, json_documents, wait_until

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
# Copied outside /tmp: the containers' private /tmp would hide a checkout under it.
CONTAINED = containers.staged(os.path.join(HERE, "node", "contained.js"))
LIVE = containers.staged(os.path.join(HERE, "node", "live_workload.js"))
JVM_HOT = "JitsymHotLoop.jitsymSpin"
RUNS = {}


def processes(as_json=True):
    res = h.client("processes", "--json")
    check(res.returncode == 0, f"jitsym processes exited {res.returncode}: {res.stderr[-300:]}")
    return [d for d in json_documents(res.stdout) if isinstance(d, dict) and "pid" in d]


def entries_for(pid):
    return [p for p in processes() if p.get("pid") == pid]


def annotate(text):
    res = subprocess.run([h.jitsym, "--socket", h.socket_path, "annotate"],
                         input=text.encode("utf-8", "surrogateescape"), capture_output=True,
                         timeout=300)
    check(res.returncode == 0, f"jitsym annotate exited {res.returncode}: {res.stderr[-800:]}")
    return res.stdout.decode("utf-8", "surrogateescape")


def record_in_container(name, node_flags, workload_args):
    """Runs node with node_flags in a private-/tmp container under `perf record -k mono -g` on
    the host. Returns a dict: host pid, nspid, the container's pid namespace, the perf data, and
    the directory the container copied its /tmp files to."""
    out = os.path.join(h.root, name)
    os.mkdir(out)
    data = os.path.join(h.root, f"{name}.data")
    node = shutil.which("node")
    cmd = ([RUNS["perf"], "record", "-q", "-k", "mono", "-e", "cpu-clock", "-F", "2000", "-g",
            "-o", data, "--"] + containers.unshare_argv(private_tmp=True) +
           [out, node] + node_flags + [CONTAINED] + [str(a) for a in workload_args])
    proc = h.spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE)
    line = harness.read_line(proc, 60, "node in the container")
    check(line.startswith("start "), f"unexpected node output {line!r}")
    nspid = int(line.split()[1])
    host_pid = containers.find_contained(proc.pid, nspid, comm="node")
    pid_ns = containers.ns_inode(host_pid, "pid")
    mnt_ns = containers.ns_inode(host_pid, "mnt")
    out_text, err = proc.communicate(timeout=300)
    check(proc.returncode == 0, f"perf record / the container failed ({proc.returncode}): "
          f"{err.decode(errors='replace')[-1500:]}")
    check(not os.path.exists(f"/proc/{host_pid}"), "node still runs after the container ended")
    listing = open(os.path.join(out, "container-tmp.txt")).read()
    print(f"  {name}: node is pid {nspid} in pid namespace {pid_ns}, host pid {host_pid}; "
          f"its /tmp held:\n    " + "\n    ".join(listing.strip().splitlines()[1:]))
    return dict(pid=host_pid, nspid=nspid, pid_ns=pid_ns, mnt_ns=mnt_ns, data=data, out=out)


@h.setup
def record_containers():
    RUNS["perf"] = perfrec.require_perf(h.root)
    check(shutil.which("node") is not None, "node is not on PATH")
    check(shutil.which("unshare") is not None, "unshare (util-linux) is not on PATH")
    # The harness's own directory stands in for the host's /tmp (the real one holds other
    # runs' files); no watch covers the containers' /tmp.
    h.start_daemon(containers.DISCOVERY)
    RUNS["jitdump"] = record_in_container(
        "prof", ["--perf-prof", "--expose-gc", "--allow-natives-syntax"], [8, 12, 6, 1500])
    RUNS["perfmap"] = record_in_container(
        "basic", ["--perf-basic-prof", "--expose-gc", "--allow-natives-syntax"], [1, 24, 20, 1500])


def container_dump():
    run = RUNS["jitdump"]
    path = os.path.join(run["out"], f"jit-{run['nspid']}.dump")
    check(os.path.exists(path), f"the container did not copy out its jitdump ({path})")
    dump = jitdump.read_file(path)
    check(dump is not None and dump.error is None, f"our reader: {dump and dump.error}")
    return dump


def named_frames(run):
    plain = perfrec.perf_script(RUNS["perf"], run["data"], *containers.perf_script_args())
    if "named" not in run:
        run["named"] = annotate(plain)
    return containers.jit_frames(plain, run["named"], run["pid"])


@h.case
def private_tmp_jitdump_frames_named_as_the_containers_own_dump_names_them():
    run = RUNS["jitdump"]
    dump = container_dump()
    frames = named_frames(run)
    agree, total, misses = containers.agreement_with_jitdump(frames, dump)
    named = sum(1 for _, _, n in frames if n)
    print(f"  {len(frames)} JIT frames of node (host pid {run['pid']}); the container's jitdump "
          f"names {total} of them at their sample time; annotate: {agree} agree "
          f"({100 * agree / max(total, 1):.2f}%), {named} named at all")
    check(total >= 300, f"only {total} JIT frames the oracle names: the workload did not run?")
    check(agree >= 0.995 * total, f"{agree} of {total} JIT frames named as the container's own "
          "jitdump names them (want >= 99.5%):\n  " + "\n  ".join(misses))


@h.case
def private_tmp_perf_map_frames_named_as_the_containers_map_names_them():
    run = RUNS["perfmap"]
    path = os.path.join(run["out"], f"perf-{run['nspid']}.map")
    check(os.path.exists(path), f"the container did not copy out its perf map ({path})")
    lines = perfmap.read(path)
    frames = named_frames(run)
    agree = total = 0
    misses = []
    for _, ip, ours in frames:
        covering = [l for l in lines if l.size and l.start <= ip < l.end]
        if len(covering) != 1:
            continue  # no line, or an address reused: a perf map cannot say which is right
        total += 1
        if ours == covering[0].name:
            agree += 1
        elif len(misses) < 10:
            misses.append(f"{ip:#x}: map {covering[0].name!r}, annotate {ours!r}")
    print(f"  {len(frames)} JIT frames of node (host pid {run['pid']}); {total} at addresses "
          f"one line of the container's perf map covers; {agree} named the same")
    check(total >= 200, f"only {total} JIT frames the map names: the workload did not run?")
    check(agree >= 0.995 * total, f"{agree} of {total} frames named as the container's perf map "
          "names them (want >= 99.5%):\n  " + "\n  ".join(misses))


@h.case
def perfs_default_fields_name_every_thread_as_well():
    # `perf script` with its default fields prints the thread id alone: the frames of node's
    # threads other than the main one are asked by a thread id of a process in a container.
    run = RUNS["jitdump"]
    ids = perfrec.perf_script(RUNS["perf"], run["data"], *containers.perf_script_args())
    plain = perfrec.perf_script(RUNS["perf"], run["data"], "--ns")
    frames = containers.jit_frames(plain, annotate(plain), run["pid"], ids_text=ids)
    agree, total, misses = containers.agreement_with_jitdump(frames, container_dump())
    threads = {l.split()[1] for l in ids.splitlines() if l.startswith("node ")}
    print(f"  default fields: {agree} of {total} JIT frames agree "
          f"({100 * agree / max(total, 1):.2f}%); node's samples came from {len(threads)} "
          "threads")
    check(total >= 300, f"only {total} JIT frames the oracle names")
    check(agree >= 0.995 * total, f"{agree} of {total} with perf's default fields:\n  " +
          "\n  ".join(misses))


def hot_addresses(run, count=40):
    """The most sampled JIT addresses of the run's node, from perf's own output."""
    plain = perfrec.perf_script(RUNS["perf"], run["data"], *containers.perf_script_args())
    seen = {}
    for _, ip, _ in containers.jit_frames(plain, plain, run["pid"]):
        seen[ip] = seen.get(ip, 0) + 1
    return [ip for ip, _ in sorted(seen.items(), key=lambda kv: -kv[1])[:count]]


@h.case
def the_host_process_with_the_container_pid_gets_none_of_them():
    for key in ("jitdump", "perfmap"):
        run = RUNS[key]
        addrs = hot_addresses(run)
        check(len(addrs) >= 10, f"{key}: only {len(addrs)} JIT addresses sampled")
        for namesake in sorted({run["nspid"], 1}):
            if namesake == run["pid"]:
                continue
            answers = h.lookup(namesake, [(a, None) for a in addrs])
            wrong = [f"{a['addr']} -> {a.get('name')!r}" for a in answers
                     if a.get("found") and a.get("origin") in ("jitdump", "perfmap")]
            check(not wrong, f"{key}: host pid {namesake} (the container's pid {run['nspid']} "
                  f"or init) answers node's JIT code: " + ", ".join(wrong[:5]))
            res = h.client("lookup", "--pid", namesake, hexaddr(addrs[0]))
            # ADDR<TAB>?? [<TAB>why]: no name, whatever reason is given.
            check(res.stdout.strip().split("\t")[1:2] == ["??"],
                  f"`jitsym lookup --pid {namesake} {hexaddr(addrs[0])}` answered "
                  f"{res.stdout.strip()!r} (exit {res.returncode}), want ??")
            for p in entries_for(namesake):
                mine = [s.get("path") for s in p.get("sources", [])
                        if os.path.basename(s.get("path", "")) in
                        (f"jit-{run['nspid']}.dump", f"perf-{run['nspid']}.map")]
                check(not mine, f"{key}: `processes` lists the container's files for host pid "
                      f"{namesake}: {mine}")


@h.case
def processes_shows_the_namespace_pid_and_the_pid_namespace():
    host_ns = containers.host_pid_ns()
    for key in ("jitdump", "perfmap"):
        run = RUNS[key]
        mine = entries_for(run["pid"])
        check(mine, f"{key}: `processes` has no entry for node's host pid {run['pid']}")
        p = mine[-1]
        print(f"  {key}: {p}")
        check(p.get("nspid") == run["nspid"], f"{key}: nspid {p.get('nspid')!r}, want "
              f"{run['nspid']} (node's pid inside the container)")
        check(p.get("pid_ns") == run["pid_ns"] and p.get("pid_ns") != host_ns,
              f"{key}: pid_ns {p.get('pid_ns')!r}, want the container's {run['pid_ns']} "
              f"(the host's is {host_ns})")
        check(p.get("mnt_ns") in (None, run["mnt_ns"]), f"{key}: mnt_ns {p.get('mnt_ns')!r}, "
              f"want the container's {run['mnt_ns']}")
        check(not p.get("alive"), f"{key}: node is still alive? {p}")
        check(p.get("sources"), f"{key}: no source listed for node: {p}")


@h.case
def answers_stay_after_the_container_and_its_tmp_are_gone():
    # The recordings ended: every process of both containers has exited, so their tmpfs is
    # unmounted and the files in it are gone. A lookup now answers from what was read.
    run = RUNS["jitdump"]
    check(not os.path.exists(f"/proc/{run['pid']}"), "node still runs")
    dump = container_dump()
    model = oracle.Oracle(dump)
    loads = [r for r in dump.loads() if r.code_size > 0 and "jitsymHot" in r.name]
    check(len(loads) >= 50, f"only {len(loads)} workload LOADs in the container's dump")
    queries = [(r.code_addr, r.eff_ts) for r in loads]
    answers = h.lookup(run["pid"], queries)
    bad = [f"{hexaddr(a)} @ {t}: got {ans.get('name')!r}, want {model.lookup(a, t).name!r}"
           for (a, t), ans in zip(queries, answers)
           if ans.get("name") != model.lookup(a, t).name]
    check(not bad, f"{len(bad)} of {len(queries)} LOADs of the exited container answer wrong:\n"
          "  " + "\n  ".join(bad[:10]))
    basic = RUNS["perfmap"]
    lines = [l for l in perfmap.read(os.path.join(basic["out"], f"perf-{basic['nspid']}.map"))
             if "jitsymHot" in l.name]
    check(lines, "no workload function in the container's perf map")
    answers = h.lookup(basic["pid"], [(l.start, None) for l in lines])
    want = [perfmap.latest(lines, l.start).name for l in lines]
    bad = [f"{hexaddr(l.start)}: got {a.get('name')!r}, want {w!r}"
           for l, a, w in zip(lines, answers, want) if a.get("name") != w]
    check(not bad, f"{len(bad)} of {len(lines)} perf map lines of the exited container answer "
          "wrong:\n  " + "\n  ".join(bad[:10]))


@h.case
def shared_tmp_the_file_belongs_to_the_process_that_maps_it_not_to_init():
    # No tmpfs: node runs as pid 1 of its pid namespace in a watched host directory and writes
    # jit-1.dump there. Host pid 1 is init; the file is node's (it maps the file as perf's marker).
    # It runs in a cgroup of its own, as a container runtime puts each container.
    out = os.path.join(h.watch_dir)
    node = shutil.which("node")
    argv = (containers.unshare_argv(private_tmp=False) +
            [node, "--perf-prof", "--interpreted-frames-native-stack", LIVE])
    group = containers.make_cgroup(f"jitsym-test-{os.getpid()}")
    if group is not None:
        argv = containers.in_cgroup_argv(group[1], argv)
    proc = h.spawn(argv, cwd=out, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE)
    line = harness.read_line(proc, 60, "node in the container")
    check(line.startswith("ready 1 "), f"node should be pid 1 in its namespace: {line!r}")
    host_pid = containers.find_contained(proc.pid, 1, comm="node")
    path = os.path.join(out, "jit-1.dump")
    check(os.path.exists(path), f"node did not write {path}")
    print(f"  node: host pid {host_pid}, pid 1 in its namespace, wrote {path}")
    dump = jitdump.read_file(path)
    hot = [r for r in dump.loads() if r.code_size > 0 and "jitsymHot" in r.name]
    check(hot, "no LOAD of the workload's functions yet")
    model = oracle.Oracle(dump)
    last = hot[-1]
    want = model.lookup(last.code_addr, last.eff_ts).name
    try:
        h.wait_resolves(host_pid, last.code_addr, want, t=last.eff_ts, timeout=5)
        waited = None
    except harness.Failure as e:
        waited = e
    # Init first: that is the wrong answer a user would get without a warning.
    init = h.lookup(1, [(r.code_addr, r.eff_ts) for r in hot])
    wrong = [a.get("name") for a in init if a.get("found") and a.get("origin") == "jitdump"]
    check(not wrong, f"host pid 1 (init) answers {len(wrong)} of {len(hot)} of node's "
          f"functions: {wrong[:3]}")
    init_files = [s.get("path") for p in entries_for(1) for s in p.get("sources", [])
                  if s.get("path") == path]
    check(not init_files, f"`processes` lists {path} for host pid 1")
    if waited:
        raise waited
    answers = h.lookup(host_pid, [(r.code_addr, r.eff_ts) for r in hot])
    bad = [f"{hexaddr(r.code_addr)}: {a.get('name')!r}" for r, a in zip(hot, answers)
           if a.get("name") != model.lookup(r.code_addr, r.eff_ts).name]
    check(not bad, f"{len(bad)} of {len(hot)} of node's functions wrong: {bad[:5]}")
    mine = entries_for(host_pid)
    check(mine and any(s.get("path") == path for s in mine[-1].get("sources", [])),
          f"`processes` does not list {path} for node's host pid {host_pid}: {mine}")
    check(mine[-1].get("nspid") == 1, f"nspid of node: {mine[-1].get('nspid')!r}, want 1")
    if group is not None:
        check(mine[-1].get("cgroup") == group[0], f"cgroup of node: "
              f"{mine[-1].get('cgroup')!r}, want {group[0]!r}")
        res = h.client("processes")
        row = [l for l in res.stdout.splitlines() if l.split()[:1] == [str(host_pid)]]
        check(row and group[0] in row[0] and " 1 " in row[0],
              f"`jitsym processes` shows no NSPID 1 and CGROUP {group[0]} for node: {row}")
    proc.stdin.close()
    check(proc.wait(30) == 0, f"the container exited with {proc.returncode}")
    if group is not None:
        containers.remove_cgroup(group[1])
    after = h.lookup(host_pid, [(r.code_addr, r.eff_ts) for r in hot])
    check(all(a.get("name") == b.get("name") for a, b in zip(after, answers)),
          "answers changed after the container exited")
    init = h.lookup(1, [(r.code_addr, r.eff_ts) for r in hot])
    check(not any(a.get("found") and a.get("origin") == "jitdump" for a in init),
          "host pid 1 answers node's functions after the container exited")


@h.case
def a_jvm_perf_map_snapshot_in_the_containers_tmp_is_found():
    # `jcmd <host pid> Compiler.perfmap`, run on the host, makes the containerized JVM write
    # /tmp/perf-<nspid>.map inside the container: found through /proc/<pid>/root/tmp.
    if not all(shutil.which(t) for t in ("java", "jcmd")):
        print("  no JVM here (java, jcmd): nothing to check")
        return
    out = os.path.join(h.root, "jvm")
    os.mkdir(out)
    # Single-file source mode: the class path under the harness directory (in /tmp) would be
    # hidden by the container's tmpfs.
    proc = h.spawn(containers.unshare_argv(private_tmp=True) +
                   [out, "java", containers.staged(os.path.join(HERE, "java", "JitsymHotLoop.java"))],
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = harness.read_line(proc, 120, "java in the container")
    check(line.startswith("ready "), f"unexpected java output {line!r}")
    nspid = int(line.split()[1])
    host_pid = containers.find_contained(proc.pid, nspid, comm="java")
    inside = f"/proc/{host_pid}/root/tmp/perf-{nspid}.map"

    def snapshot():
        res = subprocess.run(["jcmd", str(host_pid), "Compiler.perfmap"], capture_output=True,
                             text=True, timeout=60)
        check(res.returncode == 0, f"jcmd {host_pid} Compiler.perfmap: {res.stdout[-300:]}")
        lines = perfmap.read(inside)
        return lines if any(JVM_HOT in l.name for l in lines) else None
    lines = wait_until(snapshot, 60, f"{JVM_HOT} in {inside}", interval=0.5)
    hot = [l for l in lines if JVM_HOT in l.name and l.size]
    print(f"  java: host pid {host_pid}, pid {nspid} in its namespace; {len(lines)} lines in "
          f"{inside}, {len(hot)} for {JVM_HOT}")
    want = perfmap.latest(lines, hot[-1].start).name
    h.wait_resolves(host_pid, hot[-1].start, want, timeout=3)
    queries = [(l.start, None) for l in hot]
    for namesake in sorted({nspid, 1}):
        wrong = [a.get("name") for a in h.lookup(namesake, queries)
                 if a.get("found") and a.get("origin") == "perfmap"]
        check(not wrong, f"host pid {namesake} answers the JVM's {wrong[:3]}")
    proc.stdin.close()
    check(proc.wait(60) == 0, f"the container exited with {proc.returncode}")
    answers = h.lookup(host_pid, queries)
    bad = [f"{hexaddr(l.start)}: {a.get('name')!r}" for l, a in zip(hot, answers)
           if a.get("name") != perfmap.latest(lines, l.start).name]
    check(not bad, f"after the container exited: {bad[:5]}")


h.main()
