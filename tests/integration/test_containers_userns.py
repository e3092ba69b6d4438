#!/usr/bin/env python3
"""A rootless container: the unprivileged user jsalice runs node --perf-prof in
`unshare --user --map-root-user --pid --fork --mount --mount-proc` with a tmpfs on its /tmp, as
rootless podman does. Her jitdump is owned by her host uid (root inside the container) and lies
where no watch reaches. jsalice may query her node by its host pid and gets its names; jsbob is
denied; files jsbob plants in the shared /tmp (the daemon's watched directory here) named for her
container pid (jit-<nspid>.dump, perf-<nspid>.map) or her host pid (perf-<hostpid>.map,
jit-<hostpid>.dump), even mapped by a process of his as a jitdump writer maps its file, never
answer for her process. Her own files in the shared /tmp named for her container's pid 1 (also
host pid 1, init) are listed as unattached rather than given to either. Her own perf map named
for her host pid (how users copied containers' maps by hand) answers.

Exits with SKIP (77) when unprivileged user namespaces are disabled on this kernel."""

import os
import shutil
import subprocess
import time

import containers
import harness
import jitdump
import oracle
import perfrec
import users
from harness import Harness, check, hexaddr, json_documents, wait_until

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
LIVE = containers.staged(os.path.join(HERE, "node", "live_workload.js"))
PREDICTED_NSPID = 3  # sh is 1, mount is 2, node is 3 in PRIVATE_TMP_SCRIPT
WIDE = (0x1_0000, 0x7fff_ffff_0000 - 0x1_0000)  # the whole user address space of x86-64
S = {}

# Maps a file as a jitdump writer maps its own (read and execute, at offset 0: the marker perf
# looks for), then sleeps.
MARKER_MAPPER = r"""
import mmap, sys, time
f = open(sys.argv[1], "rb")
try:
    m = mmap.mmap(f.fileno(), 4096, flags=mmap.MAP_PRIVATE,
                  prot=mmap.PROT_READ | mmap.PROT_EXEC)
except OSError:
    m = mmap.mmap(f.fileno(), 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
print("mapped", flush=True)
time.sleep(600)
"""


def json_lines(text):
    return [d for d in json_documents(text)]


def as_user(user, *args, input=None):
    return users.client(user, S["client"], h.socket_path, *args, input=input)


def lookup_as(user, pid, queries):
    text = "".join(hexaddr(a) + ("" if t is None else f" {t}") + "\n" for a, t in queries)
    res = as_user(user, "lookup", "--pid", pid, "--json", input=text)
    docs = json_lines(res.stdout)
    check(len(docs) == len(queries), f"{user}: {len(docs)} answers for {len(queries)} queries "
          f"(exit {res.returncode}, {res.stderr.strip()[-300:]!r})")
    return docs


def processes_as(user=None):
    res = as_user(user, "processes", "--json") if user else h.client("processes", "--json")
    check(res.returncode == 0, f"processes as {user or 'root'}: {res.stderr[-300:]}")
    return json_lines(res.stdout)


def unattached_paths(docs):
    """Paths listed as unattached: `{"unattached":{"path":..,"reason":..}}` lines (or a list
    there, or a bare {"path","reason"} document)."""
    out = set()
    for d in docs:
        if not isinstance(d, dict):
            continue
        listed = d.get("unattached") or []
        for u in [listed] if isinstance(listed, dict) else listed:
            if isinstance(u, dict) and "path" in u:
                out.add(u["path"])
        if "pid" not in d and "path" in d and "reason" in d:
            out.add(d["path"])
    return out


def stats():
    res = h.client("stats", "--json")
    check(res.returncode == 0, f"stats: {res.stderr}")
    return json_documents(res.stdout)[0]


def planted_dump(pid, loads):
    """jsbob's jitdump for `pid`: a LOAD named bob_planted_N at each (addr, size)."""
    w = jitdump.Writer(pid)
    t = time.monotonic_ns() - 10_000_000_000  # older than anything node wrote
    return w.header(t) + b"".join(w.load(t + i, a, s, f"bob_planted_{i}", 1000 + i)
                                  for i, (a, s) in enumerate(loads))


def planted_map(loads):
    return "".join(f"{a:x} {s:x} bob_planted_map_{i}\n" for i, (a, s) in enumerate(loads))


@h.setup
def start_alices_container():
    alice, bob = users.ensure_both()
    S.update(alice=alice, bob=bob)
    if shutil.which("node") is None:
        perfrec.skip("node is not on PATH")
    works, why = containers.user_namespaces_work(users.ALICE)
    if not works:
        perfrec.skip(why)
    S["client"] = users.share_like_tmp(h)
    h.start_daemon(containers.DISCOVERY)
    # jsbob plants first, before jsalice's container exists: files named for the pid her node
    # will have inside it, covering every address V8 uses.
    wide_map = f"{WIDE[0]:x} {WIDE[1]:x} bob_planted_wide\n"
    users.write(users.BOB, os.path.join(h.watch_dir, f"perf-{PREDICTED_NSPID}.map"), wide_map)
    out = os.path.join(h.root, "alice-out")
    os.mkdir(out)
    os.chmod(out, 0o777)
    node = shutil.which("node")
    proc = users.spawn(users.ALICE, containers.unshare_argv(private_tmp=True, user_ns=True) +
                       [out, node, "--perf-prof", "--interpreted-frames-native-stack", LIVE],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    h._children.append(proc)
    line = harness.read_line(proc, 60, "node in jsalice's container")
    check(line.startswith("ready "), f"unexpected node output {line!r}")
    nspid = int(line.split()[1])
    host_pid = containers.find_contained(proc.pid, nspid, comm="node")
    check(os.stat(f"/proc/{host_pid}").st_uid == alice.pw_uid, "node does not run as jsalice")
    inside = f"/proc/{host_pid}/root/tmp/jit-{nspid}.dump"
    dump = jitdump.read_file(inside)  # root on the host reads it through the process's root
    check(dump is not None, f"no jitdump at {inside}")
    st = os.stat(inside)
    print(f"  node: host pid {host_pid}, pid {nspid} in its namespace, uid {alice.pw_uid}; "
          f"{inside} is owned by uid {st.st_uid}, {len(dump.loads())} LOADs")
    hot = [r for r in dump.loads() if r.code_size > 0 and "jitsymHot" in r.name]
    check(hot, "no LOAD of the workload's functions yet")
    S.update(proc=proc, pid=host_pid, nspid=nspid, dump=dump, hot=hot, out=out,
             pid_ns=containers.ns_inode(host_pid, "pid"))
    # Now jsbob plants files with exactly her code's addresses.
    spans = [(r.code_addr, r.code_size) for r in hot]
    S["planted"] = {
        "nspid_dump": os.path.join(h.watch_dir, f"jit-{nspid}.dump"),
        "nspid_map": os.path.join(h.watch_dir, f"perf-{nspid}.map"),
        "hostpid_map": os.path.join(h.watch_dir, f"perf-{host_pid}.map"),
    }
    users.write(users.BOB, S["planted"]["nspid_dump"], planted_dump(nspid, spans))
    users.write(users.BOB, S["planted"]["nspid_map"], wide_map + planted_map(spans))
    users.write(users.BOB, S["planted"]["hostpid_map"], planted_map(spans))
    # And one named for her host pid that he maps the way a jitdump writer maps its file
    # (perf's marker), in a process of his own: that makes his process the writer, never hers.
    S["planted"]["hostpid_dump"] = os.path.join(h.watch_dir, f"jit-{host_pid}.dump")
    users.write(users.BOB, S["planted"]["hostpid_dump"], planted_dump(host_pid, spans))
    mapper = users.spawn(users.BOB, ["python3", "-c", MARKER_MAPPER,
                                     S["planted"]["hostpid_dump"]], stdout=subprocess.PIPE)
    h._children.append(mapper)
    check(harness.read_line(mapper, 20, "jsbob's mapper").startswith("mapped"),
          "jsbob's mapper did not map its file")
    time.sleep(1.5)  # the daemon sees each within a second (inotify, /proc scan); let it decide


def hot_queries():
    model = oracle.Oracle(S["dump"])
    return [((r.code_addr, r.eff_ts), model.lookup(r.code_addr, r.eff_ts).name)
            for r in S["hot"]]


@h.case
def jsalice_may_query_her_rootless_containers_node():
    queries = hot_queries()
    last_q, last_name = queries[-1]
    try:
        h.wait_resolves(S["pid"], last_q[0], last_name, t=last_q[1], timeout=5)
    except harness.Failure as e:
        lines = [l for l in h.daemon.log_lines() if str(S["pid"]) in l or "jit-" in l]
        raise harness.Failure(f"{e}; daemon log lines naming her pid or a jitdump: {lines[-8:]}")
    answers = lookup_as(users.ALICE, S["pid"], [q for q, _ in queries])
    bad = [f"{hexaddr(q[0])}: got {a.get('name')!r} {a.get('error', '')}, want {want!r}"
           for (q, want), a in zip(queries, answers) if a.get("name") != want]
    print(f"  jsalice asked {len(queries)} addresses of her node: {len(queries) - len(bad)} named")
    check(not bad, f"{len(bad)} of {len(queries)} wrong for jsalice:\n  " + "\n  ".join(bad[:8]))
    mine = [p for p in processes_as(users.ALICE) if isinstance(p, dict) and
            p.get("pid") == S["pid"]]
    check(mine, "jsalice's `processes` does not list her node")
    check(mine[-1].get("uid") == S["alice"].pw_uid,
          f"node's owner is shown as {mine[-1].get('uid')!r}, want jsalice's host uid "
          f"{S['alice'].pw_uid}")
    check(mine[-1].get("nspid") == S["nspid"] and mine[-1].get("pid_ns") == S["pid_ns"],
          f"nspid/pid_ns {mine[-1].get('nspid')!r}/{mine[-1].get('pid_ns')!r}, want "
          f"{S['nspid']}/{S['pid_ns']}")


@h.case
def jsbob_is_denied_her_process():
    queries = hot_queries()
    answers = lookup_as(users.BOB, S["pid"], [q for q, _ in queries])
    leaked = [a for a in answers if a.get("found") or "name" in a]
    check(not leaked, f"jsbob got names of jsalice's node: {leaked[:3]}")
    check(all(a.get("error") == "permission denied" for a in answers),
          f"jsbob's answers are not `permission denied`: {answers[:3]}")
    pids = {p.get("pid") for p in processes_as(users.BOB) if isinstance(p, dict)}
    check(S["pid"] not in pids, f"jsbob's `processes` lists jsalice's node {S['pid']}")


@h.case
def files_jsbob_planted_never_answer_for_her_process():
    queries = hot_queries()
    probes = [q for q, _ in queries] + [(q[0], None) for q, _ in queries] + [
        (WIDE[0] + 0x1000, None), (WIDE[0] + WIDE[1] - 0x1000, None)]
    for who in (None, users.ALICE):
        answers = h.lookup(S["pid"], probes) if who is None else lookup_as(who, S["pid"], probes)
        planted = [f"{a['addr']} -> {a.get('name')!r} ({a.get('image')})" for a in answers
                   if "bob_planted" in (a.get("name") or "")]
        check(not planted, f"{who or 'root'} gets jsbob's names for jsalice's node:\n  " +
              "\n  ".join(planted[:8]))
    for path in S["planted"].values():
        check(os.path.exists(path), f"{path} is gone")
    sources = [s.get("path") for p in processes_as() if isinstance(p, dict) and
               p.get("pid") == S["pid"] for s in p.get("sources", [])]
    wrong = [s for s in sources if s in S["planted"].values()]
    check(not wrong, f"`processes` lists jsbob's files as sources of jsalice's node: {wrong}")


@h.case
def files_named_for_her_container_pid_in_the_shared_tmp_are_left_unattached():
    # jsalice herself writes perf-1.map and jit-1.dump into the shared /tmp, unmapped and not
    # held open. 1 is the pid her container's first process (sh) calls itself, and host pid 1
    # is init: either may be meant and nothing tells, so neither gets them. They are listed
    # as unattached to root and to her (their owner), not to jsbob, and counted.
    # (jsbob's planted files are judged against the host pid of their number, since he owns no
    # process in her namespace, and ignored: checked above never to answer.)
    paths = {os.path.join(h.watch_dir, "perf-1.map"), os.path.join(h.watch_dir, "jit-1.dump")}
    spans = [(r.code_addr, r.code_size) for r in S["hot"]]
    users.write(users.ALICE, os.path.join(h.watch_dir, "perf-1.map"), planted_map(spans))
    users.write(users.ALICE, os.path.join(h.watch_dir, "jit-1.dump"), planted_dump(1, spans))
    try:
        listed = wait_until(lambda: paths <= unattached_paths(processes_as()) and
                            unattached_paths(processes_as()), 10,
                            "both files to be listed as unattached to root")
    except harness.Failure as e:
        lines = [l for p in paths for l in h.daemon.log_lines() if p in l]
        raise harness.Failure(f"{e}; the log about them: {lines[-4:]}")
    print(f"  root sees unattached: {sorted(listed)}")
    listed_alice = unattached_paths(processes_as(users.ALICE))
    check(paths <= listed_alice, f"jsalice (their owner) sees unattached {sorted(listed_alice)}")
    listed_bob = unattached_paths(processes_as(users.BOB))
    check(not (paths & listed_bob), f"jsbob sees jsalice's unattached files {sorted(listed_bob)}")
    st = stats()
    check(st.get("files_unattached", 0) >= 2, f"stats files_unattached = "
          f"{st.get('files_unattached')!r}, want >= 2")
    logged = [l for p in paths for l in h.daemon.log_lines() if p in l]
    print("  log:\n    " + "\n    ".join(logged[-4:]))
    check(all(any(p in l and ("unattached" in l or "not attached" in l) for l in logged)
              for p in paths),
          f"no log line says each file is unattached: {logged}")
    for pid in (1, S["pid"]):
        answers = h.lookup(pid, [(a, None) for a, _ in spans])
        got = [a.get("name") for a in answers if "bob_planted" in (a.get("name") or "")]
        check(not got, f"pid {pid} answers from the unattached files: {got[:3]}")


@h.case
def her_own_perf_map_named_for_her_host_pid_answers():
    # What users did before containers were handled: copy the container's perf map to the
    # host's /tmp under the host pid. Owned by her, for her process: believed. (jsbob's file of
    # that name goes first; he may remove his own file from the sticky directory.)
    path = S["planted"]["hostpid_map"]
    res = users.run(users.BOB, ["rm", "-f", path])
    check(res.returncode == 0 and not os.path.exists(path), f"jsbob could not remove {path}")
    users.write(users.ALICE, path, "2000 100 alice_copied_by_hand\n")
    written = time.monotonic()

    def answered():
        a = lookup_as(users.ALICE, S["pid"], [(0x2010, None)])[0]
        return a if a.get("name") == "alice_copied_by_hand" else None
    try:
        wait_until(answered, 3, f"0x2010 in her node {S['pid']} to answer from {path}")
    except harness.Failure as e:
        lines = [l for l in h.daemon.log_lines() if path in l]
        raise harness.Failure(f"{e}; the log about {path}: {lines[-4:]}")
    print(f"  answered {time.monotonic() - written:.2f}s after she wrote {path}")


@h.case
def after_her_container_exited_she_still_gets_the_names_and_bob_still_does_not():
    proc = S["proc"]
    proc.stdin.close()
    check(proc.wait(30) == 0, f"the container exited with {proc.returncode}: "
          f"{proc.stderr.read().decode(errors='replace')[-500:]}")
    check(not os.path.exists(f"/proc/{S['pid']}"), "node still runs")
    copied = jitdump.read_file(os.path.join(S["out"], f"jit-{S['nspid']}.dump"))
    check(copied is not None, "the container did not copy its jitdump out")
    model = oracle.Oracle(copied)
    hot = [r for r in copied.loads() if r.code_size > 0 and "jitsymHot" in r.name]
    queries = [(r.code_addr, r.eff_ts) for r in hot]
    answers = lookup_as(users.ALICE, S["pid"], queries)
    bad = [f"{hexaddr(a)}: {ans.get('name')!r} {ans.get('error', '')}"
           for (a, t), ans in zip(queries, answers) if ans.get("name") != model.lookup(a, t).name]
    check(not bad, f"{len(bad)} of {len(queries)} wrong for jsalice after the exit: {bad[:5]}")
    # Once the process is gone, a refused client is told what it would be told for a pid never
    # indexed (operations.md, "Who may ask"): no name either way.
    refused = lookup_as(users.BOB, S["pid"], queries[:3])
    check(all(not a.get("found") and "name" not in a and
              a.get("error") in (None, "permission denied") for a in refused),
          f"jsbob after the exit: {refused}")


h.main()
