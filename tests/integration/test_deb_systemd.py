#!/usr/bin/env python3
"""The .deb under a real systemd: cpack builds it, a minimal Debian 12 (debootstrap from the
configured mirror, cached between runs) boots with systemd-nspawn, and inside it: apt installs
the package, which enables and starts jitsymd.socket and jitsymd.service; a member of the group
jitsym pings and looks up her own node process with no --socket; another member is refused her
process (permission denied); a user outside the group is told to join it; `systemctl reload`
keeps the daemon; `kill -9` brings a new one that answers as before; an upgrade keeps the socket
and restarts the daemon; `apt remove` stops both units and `apt purge` forgets them; with
policy-rc.d saying no, the install enables but starts nothing. systemd applies the unit's
memory bounds. A machine that cannot boot the container fails this test, saying why."""

import os
import re
import shutil
import subprocess
import time

import debian_container
from harness import Failure, Harness, check, read_line, wait_until

h = Harness(__doc__)
BUILD_DIR = os.environ.get("JITSYM_BUILD_DIR") or os.path.dirname(h.jitsymd)
CPACK = os.environ.get("JITSYM_CPACK") or shutil.which("cpack")
SOCKET = "/run/jitsymd/jitsymd.sock"
UNITS = ["jitsymd.socket", "jitsymd.service"]
# What the test itself runs inside, besides the package's dependencies.
BASE_PACKAGES = ["systemd", "systemd-sysv", "nodejs"]
NODE_SCRIPT = r"""
function jitsymAliceHot(n) { let s = 0; for (let i = 0; i < n; i++) s += (i * i) % 7; return s; }
let t = 0;
for (let k = 0; k < 20000; k++) t += jitsymAliceHot(1000);
console.log('ready ' + process.pid + ' ' + t);
setInterval(() => {}, 1000);
"""
S = {}


def box():
    return S["box"]


def inside(args, user=None, timeout=120, ok=True, input=None):
    """Runs a command inside; with ok, fails the case (and shows jitsymd's journal) unless it
    exits 0."""
    res = box().run(args, user=user, timeout=timeout, input=input)
    if ok:
        check(res.returncode == 0, f"`{' '.join(map(str, args))}`"
              f"{' as ' + user if user else ''} exited {res.returncode}: "
              f"{(res.stdout + res.stderr)[-1500:]}")
    return res


def apt(*args, timeout=180):
    return inside(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "-q",
                   "-o", "Dpkg::Options::=--force-confold", "--no-install-recommends"] +
                  list(args), timeout=timeout)


def show(unit, *props):
    res = inside(["systemctl", "show", unit, "-p", ",".join(props)])
    return dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)


def states(command):
    """`systemctl is-active`/`is-enabled` of both units (they exit non-zero for a no)."""
    res = inside(["systemctl", command] + UNITS, ok=False)
    return res.stdout.split()


def main_pid():
    return int(show("jitsymd.service", "MainPID")["MainPID"])


def container_case(fn):
    """A case whose failure also shows jitsymd's journal inside the container."""
    def wrapped():
        try:
            fn()
        except Failure as e:
            journal = box().journal("jitsymd.service") if S.get("box") else "(not booted)"
            raise Failure(f"{e}\n  journal of jitsymd inside the container:\n{journal}")
    wrapped.__name__ = fn.__name__
    return h.case(wrapped)


def alice_lookup():
    return inside(["jitsym", "lookup", "--pid", S["node_pid"], S["hot_addr"]], user="alice",
                  ok=False)


def wait_alice_resolves(timeout, what):
    def named():
        res = alice_lookup()
        return res.returncode == 0 and "jitsymAliceHot" in res.stdout and res
    return wait_until(named, timeout, what, interval=0.2)


@h.setup
def build_the_package_and_boot_debian_12():
    t0 = time.monotonic()
    check(CPACK is not None, "cpack not found")
    out = os.path.join(h.root, "pkg")
    res = subprocess.run([CPACK, "-G", "DEB", "-B", out], cwd=BUILD_DIR, capture_output=True,
                         text=True, timeout=300)
    check(res.returncode == 0, f"cpack failed: {res.stdout[-1500:]}{res.stderr[-1500:]}")
    debs = [f for f in os.listdir(out) if f.endswith(".deb")]
    check(len(debs) == 1, f"cpack made {debs}")
    # Give the container only the package, not cpack's staging tree.
    share = os.path.join(h.root, "share")
    os.mkdir(share)
    shutil.copy(os.path.join(out, debs[0]), share)
    S["deb"] = f"/srv/jitsym/{debs[0]}"
    # The package's dependencies go into the tree: the container has no network.
    depends = subprocess.run(["dpkg-deb", "-f", os.path.join(share, debs[0]), "Depends"],
                             capture_output=True, text=True, check=True).stdout
    needed = [alt.split()[0].split(":")[0] for alt in
              (d.split("|")[0].strip() for d in depends.split(",")) if alt]
    print(f"  package built in {time.monotonic() - t0:.0f} s; depends on {needed}")
    try:
        root = debian_container.bootstrapped_tree(BASE_PACKAGES + needed)
        S["box"] = debian_container.Container(root, binds=[(share, "/srv/jitsym")],
                                              log_path=os.path.join(h.root, "nspawn.log"))
        t1 = time.monotonic()
        state = S["box"].boot()
    except debian_container.Unavailable as e:
        raise Failure(f"this machine cannot boot the Debian 12 container: {e}")
    print(f"  container booted in {time.monotonic() - t1:.1f} s (state {state}); "
          f"setup {time.monotonic() - t0:.0f} s")


@container_case
def install_enables_and_starts_the_socket_and_the_service():
    apt("install", S["deb"])
    check(states("is-enabled") == ["enabled", "enabled"],
          f"is-enabled: {states('is-enabled')}")
    wait_until(lambda: states("is-active") == ["active", "active"], 30,
               "both units to be active", interval=0.2)
    res = inside(["stat", "-c", "%U:%G %a %F", SOCKET])
    check(res.stdout.strip() == "root:jitsym 660 socket", f"{SOCKET}: {res.stdout.strip()}")
    check(inside(["getent", "group", "jitsym"]).stdout.startswith("jitsym:"), "no group jitsym")


@container_case
def systemd_applies_the_units_memory_bounds():
    unit = open(box().path("/usr/lib/systemd/system/jitsymd.service")).read()
    want = {k: str(size_bytes(v)) for k, v in
            re.findall(r"^(MemoryHigh|MemoryMax)=(\S+)$", unit, re.M)}
    check(len(want) == 2, f"memory bounds in the installed unit: {want}")
    got = show("jitsymd.service", "MemoryHigh", "MemoryMax")
    check(got == want, f"systemctl show: {got}, the unit: {want}")


def size_bytes(text):
    m = re.fullmatch(r"(\d+)([KMGT]?)", text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2)]


@container_case
def a_group_member_pings_and_looks_up_her_own_node_process_with_no_option():
    inside(["useradd", "--create-home", "--groups", "jitsym", "alice"])
    inside(["useradd", "--create-home", "--groups", "jitsym", "bob"])
    inside(["useradd", "--create-home", "carol"])
    res = inside(["jitsym", "ping"], user="alice")
    check(res.stdout.startswith(f"pong from {SOCKET}:"), f"ping: {res.stdout!r}")
    S["node"] = node = h.spawn(box().argv(["node", "--perf-basic-prof", "-e", NODE_SCRIPT], user="alice"),
                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Debian's node 18 also logs V8 events (`new,CodeRange,...`) to stdout with this option.
    deadline = time.monotonic() + 60
    line = ""
    while not line.startswith("ready "):
        line = read_line(node, max(1, deadline - time.monotonic()), "node inside the container")
    S["node_pid"] = int(line.split()[1])  # its pid inside the container
    map_path = box().path(f"/tmp/perf-{S['node_pid']}.map")
    hot = wait_until(lambda: [l for l in open(map_path).read().splitlines()
                              if "jitsymAliceHot" in l], 20, "a perf map line for the function")
    start, size = (int(x, 16) for x in hot[-1].split()[:2])
    S["hot_addr"] = hex(start + size // 2)
    res = wait_alice_resolves(15, "alice's lookup of her node process")
    print(f"  {res.stdout.strip()}")


@container_case
def native_frames_come_from_a_parse_worker_without_privileges():
    """Native files are read by a worker that holds none of the unit's capabilities, under its
    limits and a seccomp filter, and still answers alice's lookup of her own process."""
    maps = inside(["cat", f"/proc/{S['node_pid']}/maps"]).stdout
    libc = [l.split() for l in maps.splitlines() if "/libc.so" in l and " r-xp " in l]
    check(libc, f"no executable libc mapping in node's maps:\n{maps[:1500]}")
    start, offset, path = int(libc[0][0].split("-")[0], 16), int(libc[0][2], 16), libc[0][5]
    nm = subprocess.run(["nm", "-D", box().path(path)], capture_output=True, text=True).stdout
    sym = [l.split() for l in nm.splitlines() if l.endswith(" malloc@@GLIBC_2.2.5")]
    check(sym, f"no malloc in {path}")
    malloc_off = int(sym[0][0], 16)
    # The file offset of malloc is its address in libc (text's offset equals its address).
    addr = hex(start + malloc_off - offset)
    res = inside(["jitsym", "lookup", "--pid", S["node_pid"], addr], user="alice", ok=False)
    check(res.returncode == 0 and "malloc" in res.stdout,
          f"alice's native lookup: exit {res.returncode}: {res.stdout!r} {res.stderr!r}")
    print(f"  {res.stdout.strip()}")
    pids = inside(["pgrep", "-f", "jitsymd-parse-worker"], ok=False).stdout.split()
    check(pids, "no parse worker process")
    for pid in pids:
        status = dict(l.split(":", 1) for l in
                      inside(["cat", f"/proc/{pid}/status"]).stdout.splitlines() if ":" in l)
        got = {k: status[k].strip() for k in ("CapEff", "CapPrm", "CapAmb", "NoNewPrivs",
                                              "Seccomp")}
        check(got == {"CapEff": "0000000000000000", "CapPrm": "0000000000000000",
                      "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"},
              f"parse worker {pid}: {got}")
        limits = inside(["cat", f"/proc/{pid}/limits"]).stdout
        check(re.search(r"Max address space\s+4294967296\s", limits) is not None,
              f"parse worker {pid}: no address space limit:\n{limits}")
        print(f"  parse worker {pid}: {got}, address space 4 GiB")
    journal = box().journal("jitsymd.service", 200)
    check("parse worker" not in journal or "could not" not in journal,
          f"a parse worker could not do all it should:\n{journal[-1500:]}")


@container_case
def another_member_is_refused_her_process_and_a_non_member_is_told_to_join():
    res = inside(["jitsym", "lookup", "--pid", S["node_pid"], S["hot_addr"]], user="bob",
                 ok=False)
    check(res.returncode == 4 and "permission_denied" in res.stdout,
          f"bob: exit {res.returncode}: {res.stdout!r} {res.stderr!r}")
    res = inside(["jitsym", "ping"], user="carol", ok=False)
    check(res.returncode == 1 and f"{SOCKET}: Permission denied" in res.stderr and
          "usermod -aG jitsym carol" in res.stderr, f"carol: {res.returncode} {res.stderr!r}")
    print(f"  carol: {res.stderr.strip()}")


@container_case
def reload_keeps_the_daemon_and_applies_the_file():
    pid = main_pid()
    conf = "/etc/jitsymd/jitsymd.conf"
    inside(["sh", "-c", f"echo 'retention = 20m' >> {conf}"])
    inside(["systemctl", "reload", "jitsymd.service"], timeout=60)
    wait_until(lambda: f"reloaded {conf}" in box().journal("jitsymd.service", 20), 15,
               "the daemon to log the reload")
    check(main_pid() == pid, f"reload replaced the daemon: {pid} -> {main_pid()}")
    wait_alice_resolves(10, "alice's lookup after the reload")


@container_case
def kill_9_brings_a_new_daemon_that_answers_as_before():
    pid = main_pid()
    check(pid > 0, "jitsymd.service has no main process to kill")  # kill -9 0: our own group
    inside(["sh", "-c", f"kill -9 {pid}"])
    t0 = time.monotonic()
    wait_until(lambda: main_pid() not in (0, pid) and states("is-active")[1] == "active", 30,
               "systemd to restart jitsymd", interval=0.2)
    wait_alice_resolves(20, "alice's lookup after the restart")
    restarts = show("jitsymd.service", "NRestarts")["NRestarts"]
    print(f"  new daemon answering {time.monotonic() - t0:.1f} s after kill -9 "
          f"(NRestarts={restarts})")
    check(restarts == "1", f"NRestarts={restarts}")


@container_case
def an_upgrade_keeps_the_socket_and_restarts_the_daemon():
    pid = main_pid()
    before = show("jitsymd.socket", "ActiveEnterTimestampMonotonic", "InvocationID")
    apt("install", "--reinstall", S["deb"])
    after = show("jitsymd.socket", "ActiveEnterTimestampMonotonic", "InvocationID")
    check(after == before, f"the socket was restarted: {before} -> {after}")
    wait_until(lambda: main_pid() not in (0, pid), 30, "a new daemon after the upgrade")
    wait_alice_resolves(20, "alice's lookup after the upgrade")
    check(states("is-enabled") == ["enabled", "enabled"], f"{states('is-enabled')}")


@container_case
def apt_remove_stops_both_and_purge_forgets_them():
    pid = main_pid()
    apt("remove", "jitsym")
    check(states("is-active")[0] != "active" and states("is-active")[1] != "active",
          f"after remove: {states('is-active')}")
    check(not os.path.exists(box().path(SOCKET)), f"{SOCKET} left behind")
    check(not os.path.exists(box().path(f"/proc/{pid}")), f"jitsymd ({pid}) still runs")
    for path in ("/usr/bin/jitsym", "/usr/sbin/jitsymd", "/usr/lib/systemd/system/jitsymd.socket"):
        check(not os.path.exists(box().path(path)), f"{path} left after remove")
    apt("purge", "jitsym")
    links = inside(["sh", "-c", "find /etc/systemd/system -name 'jitsymd*'"]).stdout.split()
    check(not links, f"enablement left after purge: {links}")
    check(not os.path.exists(box().path("/etc/jitsymd")), "/etc/jitsymd left after purge")


@container_case
def policy_rc_d_saying_no_enables_but_starts_nothing():
    policy = "/usr/sbin/policy-rc.d"
    inside(["sh", "-c", f"printf '#!/bin/sh\\nexit 101\\n' > {policy} && chmod 755 {policy}"])
    try:
        apt("install", S["deb"])
        check(states("is-enabled") == ["enabled", "enabled"], f"{states('is-enabled')}")
        check(states("is-active") == ["inactive", "inactive"], f"{states('is-active')}")
    finally:
        inside(["rm", "-f", policy])
    apt("purge", "jitsym")


@h.case
def the_container_shuts_down():
    if S.get("node_pid", 0) > 0:
        # Not in a unit of the container (nsenter's child): its shutdown would wait for it.
        inside(["sh", "-c", f"kill -9 {S['node_pid']}"], ok=False)
        S["node"].wait(10)
    if S.get("box"):
        t0 = time.monotonic()
        box().stop()
        print(f"  stopped in {time.monotonic() - t0:.1f} s")


try:
    h.main()
finally:
    if S.get("box"):
        S["box"].stop()
