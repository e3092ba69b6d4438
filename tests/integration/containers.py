"""Real containers for the integration tests, made the way Docker, podman and Kubernetes make
them, without any of them: `unshare --pid --fork --mount --mount-proc` (a pid namespace whose
first process is pid 1, and a mount namespace), a tmpfs mounted on the container's /tmp (a private
/tmp, invisible from the host), and for rootless containers `unshare --user --map-root-user` run
as an unprivileged user. Plus what a test needs from the host side: a contained process's host
pid, its namespace pid and namespace inodes, and the comparison of `jitsym annotate` with a
time-correct resolution from the container's own jitdump.
"""

import atexit
import os
import subprocess
import time

import oracle
import perfrec
import users

# Daemon options for these tests: discovery on, at its default interval (test daemons run
# without it unless told, harness.py).
DISCOVERY = ["--discovery-interval", "1s"]

# The script a private-/tmp container runs: remember the host directory given as $1 as the
# working directory (it stays reachable through the cwd after /tmp is covered), mount a tmpfs
# on /tmp, run the runtime in /tmp (V8 writes its jitdump into its working directory and its
# perf map into /tmp), then copy what it wrote out to the host for the test's oracle. The tmpfs
# disappears with the container.
PRIVATE_TMP_SCRIPT = r"""
set -e
cd "$1"; shift
mount -t tmpfs -o mode=1777 tmpfs /tmp
set +e
(cd /tmp && exec "$@")
status=$?
ls -la /tmp > ./container-tmp.txt
cp /tmp/jit-*.dump /tmp/perf-*.map ./ 2>/dev/null
exit $status
"""


_STAGE = []


def staged(path):
    """Where `path` (a file of tests/integration/{node,perf,java}) is in a copy of those
    directories outside /tmp, readable by every user: a container with a private /tmp covers
    the host's, and with it a checkout under /tmp (a fresh clone in CI). The directories are
    copied whole, so that the scripts' relative requires resolve."""
    import shutil
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    if not _STAGE:
        d = tempfile.mkdtemp(prefix="jitsym-stage-", dir="/var/tmp")
        os.chmod(d, 0o755)
        atexit.register(shutil.rmtree, d, True)
        for sub in ("node", "perf", "java"):
            shutil.copytree(os.path.join(here, sub), os.path.join(d, sub))
        for root, dirs, files in os.walk(d):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        _STAGE.append(d)
    return os.path.join(_STAGE[0], os.path.relpath(os.path.abspath(path), here))


def unshare_argv(private_tmp, user_ns=False):
    """argv prefix making a container; the command follows (with private_tmp: the host output
    directory, then the command)."""
    argv = ["unshare"]
    if user_ns:
        argv += ["--user", "--map-root-user"]
    # --kill-child: when unshare is killed (a test ends early), its namespace goes too, as a
    # container stops with its runtime.
    argv += ["--pid", "--fork", "--kill-child", "--mount", "--mount-proc"]
    if private_tmp:
        argv += ["sh", "-c", PRIVATE_TMP_SCRIPT, "container"]
    return argv


def ns_inode(pid, kind):
    return os.stat(f"/proc/{pid}/ns/{kind}").st_ino


def host_pid_ns():
    return ns_inode("self", "pid")


def nspids(pid):
    """The NSpid line of /proc/PID/status: host pid first, innermost last."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
    return []


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def descends_from(pid, ancestor):
    try:
        while pid > 1:
            if pid == ancestor:
                return True
            pid = parent_of(pid)
    except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
        return False
    return pid == ancestor


def find_contained(ancestor, nspid, comm=None, timeout=20.0):
    """The host pid of the process that descends from host pid `ancestor` and is `nspid` in its
    own pid namespace."""
    deadline = time.monotonic() + timeout
    while True:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            try:
                ids = nspids(pid)
                if len(ids) < 2 or ids[-1] != nspid or not descends_from(pid, ancestor):
                    continue
                if comm is not None:
                    with open(f"/proc/{pid}/comm") as f:
                        if f.read().strip() != comm:
                            continue
                return pid
            except (FileNotFoundError, ProcessLookupError):
                continue
        if time.monotonic() > deadline:
            raise AssertionError(f"no process {nspid} (in its namespace) under host pid "
                                 f"{ancestor} within {timeout}s")
        time.sleep(0.02)


def user_namespaces_work(user):
    """(True, "") when `user` can make a rootless container with a private /tmp here, else
    (False, why)."""
    try:
        res = users.run(user, unshare_argv(False, user_ns=True) +
                        ["sh", "-c", "mount -t tmpfs tmpfs /tmp && echo $$"], timeout=30)
    except FileNotFoundError as e:
        return False, str(e)
    if res.returncode != 0 or res.stdout.strip() != "1":
        return False, (f"`unshare --user --map-root-user --pid --fork --mount --mount-proc` as "
                       f"{user} failed ({res.returncode}): {res.stderr.strip()[-300:]} (are "
                       "unprivileged user namespaces disabled? user.max_user_namespaces, "
                       "kernel.unprivileged_userns_clone, an AppArmor restriction)")
    return True, ""


def jit_frames(plain_text, named_text, pid, ids_text=None):
    """[(time_ns, ip, name or None)] for the frames of host `pid` that perf left unnamed (a JIT
    dso), with the name `jitsym annotate` gave (only answers from a jitdump or perf map count).
    The sample lines that say the pid and time are ids_text's (default: plain_text's), which
    comes from `perf script --ns -F comm,pid,tid,time,ip,sym,dso`; plain_text may be another
    `perf script` output of the same recording (its default fields, say)."""
    plain, named = perfrec.samples(plain_text), perfrec.samples(named_text)
    ids = perfrec.samples(ids_text) if ids_text is not None else plain
    if not len(plain) == len(named) == len(ids):
        raise AssertionError(f"{len(plain)} samples in, {len(named)} out of annotate, "
                             f"{len(ids)} with pid and tid")
    out = []
    for (header, pf), (_, nf), (id_header, _) in zip(plain, named, ids):
        fields = id_header.split()
        ids = next((f for f in fields if "/" in f and f.split("/")[0].isdigit()), None)
        if ids is None or int(ids.split("/")[0]) != pid:
            continue
        stamp = next(f for f in fields if f.endswith(":") and "." in f and f[0].isdigit())
        secs, frac = stamp[:-1].split(".")
        t = int(secs) * 1_000_000_000 + int(frac.ljust(9, "0"))
        if len(pf) != len(nf):
            raise AssertionError(f"frame count changed by annotate in {header!r}")
        for (ip, _, pdso), (_, nsym, ndso) in zip(pf, nf):
            if pdso is None or not is_jit_dso(pdso):
                continue
            ours = perfrec.strip_offset(nsym) if ndso and ndso.split(":")[0] in (
                "jitdump", "perfmap") else None
            out.append((t, ip, ours))
    return out


def is_jit_dso(dso):
    import re
    return (dso in ("[unknown]", "//anon") or dso.startswith("[anon") or
            dso.startswith("/memfd:") or re.search(r"perf-\d+\.map$", dso) is not None or
            re.search(r"jit-\d+\.dump$", dso) is not None)


def agreement_with_jitdump(frames, dump):
    """(agreeing, total, misses): over the frames the time-correct oracle names from the
    container's jitdump, how many annotate named the same."""
    model = oracle.Oracle(dump)
    agree = total = 0
    misses = []
    for t, ip, ours in frames:
        p = model.lookup(ip, t)
        if p is None:
            continue
        total += 1
        if ours == p.name:
            agree += 1
        elif len(misses) < 10:
            misses.append(f"{ip:#x} @ {t}: oracle {p.name!r}, annotate {ours!r}")
    return agree, total, misses


def perf_script_args():
    return ["--ns", "-F", "comm,pid,tid,time,ip,sym,dso"]


def cgroup2_mount():
    """Where the cgroup v2 hierarchy is mounted, or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[:1] == ["cgroup2"]:
                return left.split()[4]
    return None


def own_cgroup():
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    return None


def make_cgroup(name):
    """A new cgroup v2 group below ours, as a container runtime makes one per container:
    (its path as /proc/PID/cgroup shows it, its directory), or None where cgroup v2 is not
    writable here."""
    mount, mine = cgroup2_mount(), own_cgroup()
    if mount is None or mine is None:
        return None
    rel = os.path.join(mine, name)
    directory = mount + rel
    try:
        os.mkdir(directory)
    except OSError:
        return None
    # At exit, after the harness has killed what it started; a failing case leaves no group.
    atexit.register(remove_cgroup, directory, 5.0)
    return rel, directory


def in_cgroup_argv(directory, argv):
    """argv that moves itself into the cgroup at `directory`, then runs argv."""
    return ["sh", "-c", 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"', "in-cgroup",
            directory] + list(argv)


def remove_cgroup(directory, timeout=10.0):
    """Removes the group once its processes are gone (a group with processes cannot be)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.rmdir(directory)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
