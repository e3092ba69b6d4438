"""A minimal Debian 12 system booted under its own systemd, for testing the package as it is
installed: `debootstrap` from the host's configured Debian mirror into a cache (reused while the
package list is the same), then `systemd-nspawn --boot` with a tmpfs overlay over that tree, so
that nothing a test does inside reaches the cache. Commands run inside through nsenter into the
container's init; the container has no network (the tree holds every package needed).

Every step is bounded in time, and a machine that cannot do a step says why (Unavailable)."""

import ctypes
import fcntl
import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
import time

SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
CACHE_ROOT = os.environ.get("JITSYM_TEST_CACHE", "/var/cache/jitsym-tests")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Unavailable(Exception):
    """This machine cannot bootstrap or boot the container; the message says why."""


def configured_mirror():
    """The Debian archive apt uses on this host for the main suite: the first URI of a
    deb822 stanza (or a one-line `deb` entry) whose suites include bookworm."""
    if os.environ.get("JITSYM_TEST_MIRROR"):
        return os.environ["JITSYM_TEST_MIRROR"]
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        for stanza in re.split(r"\n\s*\n", open(path).read()):
            fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
            if "deb" in fields.get("Types", "").split() and \
                    SUITE in fields.get("Suites", "").split() and fields.get("URIs"):
                return fields["URIs"].split()[0]
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        try:
            text = open(path).read()
        except OSError:
            continue
        m = re.search(rf"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+{SUITE}\s", text, re.M)
        if m:
            return m.group(1)
    return DEFAULT_MIRROR


def _run(argv, timeout, what, **kwargs):
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"")[-1500:] if isinstance(e.stdout, bytes) else (e.stdout or "")[-1500:]
        raise Unavailable(f"{what} took longer than {timeout} s: {out}")
    except FileNotFoundError:
        raise Unavailable(f"{what}: {argv[0]} not found")
    if res.returncode != 0:
        raise Unavailable(f"{what} failed with status {res.returncode}: "
                          f"{(res.stdout + res.stderr)[-2000:]}")
    return res


def bootstrapped_tree(packages, timeout=300, log=print):
    """The root of a Debian 12 tree holding `packages` (and the minimal base), bootstrapped on
    first use and cached under CACHE_ROOT by the package list, mirror and architecture. Other
    cached trees of ours are removed once a new one is complete."""
    for tool in ("debootstrap", "systemd-nspawn", "nsenter"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} is not installed (./build.sh deps installs debootstrap "
                              "and systemd-container)")
    if os.geteuid() != 0:
        raise Unavailable("bootstrapping and booting a container needs root")
    mirror = configured_mirror()
    arch = _run(["dpkg", "--print-architecture"], 30, "dpkg --print-architecture").stdout.strip()
    key_text = "\n".join([SUITE, mirror, arch, "minbase"] + sorted(set(packages)))
    key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
    os.makedirs(CACHE_ROOT, exist_ok=True)
    entry = os.path.join(CACHE_ROOT, f"debian12-{key}")
    root = os.path.join(entry, "root")
    with open(os.path.join(CACHE_ROOT, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run bootstrapping the same tree
        if os.path.exists(os.path.join(entry, "complete")):
            log(f"  cached Debian 12 tree: {root}")
            return root
        shutil.rmtree(entry, ignore_errors=True)
        os.makedirs(entry)
        partial = os.path.join(entry, "partial")
        log(f"  debootstrap {SUITE} from {mirror} ({len(packages)} packages asked for) ...")
        t0 = time.monotonic()
        _run(["debootstrap", "--variant=minbase", f"--arch={arch}",
              "--include=" + ",".join(sorted(set(packages))), SUITE, partial, mirror],
             timeout, f"debootstrap {SUITE} from {mirror}")
        os.rename(partial, root)
        with open(os.path.join(entry, "packages"), "w") as f:
            f.write(key_text + "\n")
        open(os.path.join(entry, "complete"), "w").close()
        log(f"  bootstrapped in {time.monotonic() - t0:.0f} s: {root}")
        for old in glob.glob(os.path.join(CACHE_ROOT, "debian12-*")):
            if old != entry:
                shutil.rmtree(old, ignore_errors=True)
    return root


def _terminate_with_parent():
    """In the child: SIGTERM (an orderly shutdown, for systemd-nspawn) when the test process
    dies, killed by a ctest timeout included."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Container:
    """A booted container over `root` (read-only under a tmpfs overlay), `binds` being
    (host_dir, container_dir) pairs mounted read-only."""

    def __init__(self, root, binds=(), name=None, log_path=None):
        self.root = root
        self.binds = list(binds)
        # nspawn keeps per-name state under /run/systemd/nspawn: one name per run.
        self.name = name or f"jitsym-test-{os.getpid()}"
        self.log_path = log_path
        self.proc = None
        self.leader = None

    def boot(self, timeout=120):
        argv = ["systemd-nspawn", "--boot", "--volatile=overlay", "--register=no",
                "--keep-unit", "--private-network", f"--machine={self.name}",
                f"--directory={self.root}"]
        argv += [f"--bind-ro={host}:{inside}" for host, inside in self.binds]
        self._log = open(self.log_path, "wb")
        # No host systemd is needed: no machined (--register=no), no scope (--keep-unit).
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env=dict(os.environ, SYSTEMD_LOG_COLOR="0"),
                                     preexec_fn=_terminate_with_parent)
        deadline = time.monotonic() + timeout
        while self.leader is None:
            self._check_nspawn("before its init started")
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                    kids = f.read().split()
            except OSError:
                kids = []
            for kid in kids:
                try:
                    with open(f"/proc/{kid}/comm") as f:
                        if f.read().strip() == "systemd":
                            self.leader = int(kid)
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise Unavailable(f"no systemd started in the container within {timeout} s:\n"
                                  f"{self.boot_log()}")
            time.sleep(0.05)
        state = ""
        while True:
            self._check_nspawn("while booting")
            left = deadline - time.monotonic()
            if left <= 0:
                failed = self.run(["systemctl", "--failed", "--no-legend", "--plain"], timeout=20)
                raise Unavailable(f"the container's systemd did not finish booting within "
                                  f"{timeout} s (state {state!r}; failed units: "
                                  f"{failed.stdout.strip()!r}):\n{self.boot_log()}")
            try:
                res = self.run(["systemctl", "is-system-running", "--wait"],
                               timeout=min(left, 30))
            except subprocess.TimeoutExpired:
                continue
            state = res.stdout.strip()
            if state in ("running", "degraded"):
                return state
            time.sleep(0.2)  # its manager not listening yet

    def _check_nspawn(self, when):
        if self.proc.poll() is not None:
            raise Unavailable(f"systemd-nspawn exited with status {self.proc.returncode} {when}:"
                              f"\n{self.boot_log()}")

    def boot_log(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        return "\n".join("    | " + l for l in text.splitlines()[-lines:])

    def argv(self, args, user=None):
        """argv that runs `args` inside the container, as root or as `user` (with that user's
        groups from the container's group database, as a fresh login has them)."""
        inside = ["env", "-i", f"PATH={PATH}", "LC_ALL=C"]
        if user is None:
            inside += ["HOME=/root"]
        else:
            inside = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"] + \
                inside + [f"HOME=/home/{user}", f"USER={user}", f"LOGNAME={user}"]
        return ["nsenter", f"--target={self.leader}", "--all", "--root", "--wd", "--"] + \
            inside + [str(a) for a in args]

    def run(self, args, user=None, timeout=60, input=None):
        return subprocess.run(self.argv(args, user), capture_output=True, text=True,
                              timeout=timeout, input=input)

    def spawn(self, args, user=None, **kwargs):
        return subprocess.Popen(self.argv(args, user), **kwargs)

    def path(self, inside):
        """The host's view of a path inside the running container."""
        return f"/proc/{self.leader}/root{inside}"

    def journal(self, unit, lines=60):
        res = self.run(["journalctl", "--no-pager", "-o", "short-monotonic", "-n", str(lines),
                        "-u", unit], timeout=30)
        return "\n".join("    | " + l for l in (res.stdout + res.stderr).splitlines())

    def stop(self, timeout=30):
        if self.proc is None or self.proc.poll() is not None:
            return
        # systemd-nspawn turns SIGTERM into an orderly shutdown of the container.
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._log.close()
