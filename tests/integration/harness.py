"""Shared harness for the integration tests: the real jitsymd on a temporary socket and watch
directory, the real jitsym client, helper processes, polling, and a small case runner.

Each test file is a script:   python3 test_x.py --jitsymd PATH --jitsym PATH [--keep]
It builds a Harness, registers cases with @h.case, and calls h.main(). Cases run in order and
share the daemon; a failing case prints its assertion and the tail of the daemon's log and the
run goes on, so one report shows every failure. The exit status is 1 if anything failed.
"""

import argparse
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

LOG_TAIL_LINES = 40


class Failure(AssertionError):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def wait_until(predicate, timeout, what, interval=0.02):
    """Polls predicate() until it returns a truthy value, which is returned. Fails after timeout
    seconds naming `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise Failure(f"timed out after {timeout:.1f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def read_line(proc, timeout, what="the child"):
    """One line from a child's stdout (a pipe), unbuffered so select() sees what is left; fails
    with the child's exit status (and stderr tail, when piped) if it exits first."""
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            raise AssertionError(f"{what} printed nothing within {timeout}s (so far {line!r})")
        ch = os.read(proc.stdout.fileno(), 1)
        if not ch:
            err = proc.stderr.read().decode(errors="replace")[-800:] if proc.stderr else ""
            raise AssertionError(f"{what} exited with {proc.wait()} before it was ready {err}")
        line += ch
    return line.decode()


# A child process (python3 -c MAPPER PATH) that maps PATH read-only at file offset 0, as a runtime
# maps an image, prints the mapping's base address and sleeps: a live process with an image at a
# known place, for lookups by pid that go through /proc/PID/maps.
MAPPER = r"""
import mmap, sys, time
path = sys.argv[1]
f = open(path, "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].strip() == path and int(parts[2], 16) == 0:
            print(int(parts[0].split("-")[0], 16), flush=True)
            break
time.sleep(600)
"""


def asan_build(binary):
    """Whether `binary` is built with AddressSanitizer, which keeps freed memory in quarantine
    and adds shadow memory: resident-size bounds are looser under it."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()  # linked statically (clang) or dynamically (gcc)


def status_kb(pid, field):
    """A /proc/PID/status figure in KiB (VmRSS, VmHWM); 0 if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def hexaddr(value):
    return f"0x{value:x}"


def json_documents(text):
    """The JSON a `--json` command printed: one document, or one per line."""
    text = text.strip()
    if not text:
        return []
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def find_dicts(value, key):
    """Every dict inside value (recursively) that has `key`."""
    found = []
    if isinstance(value, dict):
        if key in value:
            found.append(value)
        for v in value.values():
            found += find_dicts(v, key)
    elif isinstance(value, list):
        for v in value:
            found += find_dicts(v, key)
    return found


# A stand-in for a JIT process: it sleeps, and maps its own jit-<pid>.dump in any of the given
# directories as soon as the file exists (again if it is replaced), as V8, the JVM's perf agent
# and .NET map theirs as a marker for perf. The daemon relies on that mapping to tell a
# jitdump's writer (daemon/security/writer_rule.h). Inline, so that any user can run it.
STANDIN = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
PROT_READ, PROT_EXEC, MAP_PRIVATE = 1, 4, 2
mapped = set()
name = f"jit-{os.getpid()}.dump"
print("ready", flush=True)
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    for d in sys.argv[1:]:
        path = os.path.join(d, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) not in mapped:
            if libc.mmap(None, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) not in (None, 2**64 - 1):
                mapped.add((st.st_dev, st.st_ino))
        os.close(fd)
    time.sleep(0.005)
"""


def standin_argv(dirs):
    """The command line of a stand-in JIT process mapping its jitdump in `dirs`."""
    return [sys.executable, "-c", STANDIN] + [str(d) for d in dirs]


_STANDINS = []


def register_standin(pid, dirs):
    """A stand-in started some other way (a fork at a chosen pid): Daemon.start waits for it."""
    _STANDINS.append((pid, list(dirs)))


def wait_standins_mapped(timeout=5.0):
    """Waits until every live stand-in maps its jitdump where one exists, as a real JIT
    process has long before a daemon starts."""
    for pid, dirs in _STANDINS:
        for d in dirs:
            path = os.path.join(d, f"jit-{pid}.dump")

            def mapped():
                if not os.path.exists(path):
                    return True
                try:
                    with open(f"/proc/{pid}/maps") as f:
                        return path in f.read()
                except OSError:
                    return True  # gone: nothing to wait for
            wait_until(mapped, timeout, f"stand-in {pid} to map {path}", interval=0.005)


class Daemon:
    def __init__(self, binary, watch_dirs, socket_path, log_path, extra_args=(), log_level="info"):
        self.binary = binary
        self.watch_dirs = list(watch_dirs)
        self.socket_path = socket_path
        self.log_path = log_path
        self.extra_args = list(extra_args)
        self.log_level = log_level
        self.proc = None
        self.exit_code = None
        self.needed_kill = False

    def start(self):
        wait_standins_mapped()
        args = [self.binary]
        for d in self.watch_dirs:
            args += ["--watch", d]
        args += ["--socket", self.socket_path, "--log-level", self.log_level]
        if not any(str(a).startswith("--discovery-interval") for a in self.extra_args):
            # Discovery finds every mapped jitdump on the host, other tests' included (ctest
            # runs two at once): off unless a test is about it, as the watch directory is the
            # test's own rather than /tmp.
            args += ["--discovery-interval", "0"]
        args += list(self.extra_args)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=self._log, start_new_session=True)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


    def stop(self, timeout=10.0):
        """SIGTERM, then SIGKILL after timeout. Returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.needed_kill = True
                self.proc.kill()
                self.proc.wait()
        self.exit_code = self.proc.returncode
        self._log.close()
        return self.exit_code

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_lines(self):
        return self.log().splitlines()


class Harness:
    def __init__(self, description):
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--jitsymd", required=True, help="path of the jitsymd binary")
        parser.add_argument("--jitsym", required=True, help="path of the jitsym client binary")
        parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
        parser.add_argument("--log-level", default="info", help="daemon log level")
        parser.add_argument("--only", help="run only cases whose name contains this")
        self.args = parser.parse_args()
        self.jitsymd = os.path.abspath(self.args.jitsymd)
        self.jitsym = os.path.abspath(self.args.jitsym)
        # Never /tmp itself: every run gets its own directory and socket.
        self.root = tempfile.mkdtemp(prefix="jitsym-it-")
        self.watch_dir = os.path.join(self.root, "watch")
        os.mkdir(self.watch_dir)
        self.socket_path = os.path.join(self.root, "jitsymd.sock")
        self.daemon = None
        self._cases = []
        self._setup = None
        self._children = []
        self.failures = []
        self.passes = 0

    # ---- processes ----------------------------------------------------------------------------

    def start_daemon(self, extra_args=(), ready_timeout=20.0):
        self.daemon = Daemon(self.jitsymd, [self.watch_dir], self.socket_path,
                             os.path.join(self.root, "jitsymd.log"), extra_args,
                             self.args.log_level)
        self.daemon.start()

        def ready():
            if not self.daemon.alive():
                raise Failure(f"jitsymd exited with status {self.daemon.proc.returncode} "
                              "before answering ping")
            return self.client("ping", timeout=5).returncode == 0

        wait_until(ready, ready_timeout, "jitsymd to answer `jitsym ping`", interval=0.05)
        return self.daemon

    def spawn(self, args, **kwargs):
        """Starts a helper process that is killed when the run ends."""
        proc = subprocess.Popen(args, **kwargs)
        self._children.append(proc)
        return proc

    def kill_child(self, pid):
        """SIGKILLs a helper started by spawn() and reaps it, so its pid no longer exists."""
        proc = next(p for p in self._children if p.pid == pid)
        proc.kill()
        proc.wait()

    def sleeper(self, dirs=None, wrap=None, env=None):
        """A real process to own a generated jitdump: its pid exists and is ours (or, through
        `wrap` (users.argv), a user's), and it maps its jit-<pid>.dump once one appears (in the
        watch directory, or `dirs`), as every real jitdump writer does for perf."""
        dirs = list(dirs or [self.watch_dir])
        argv = standin_argv(dirs)
        proc = self.spawn(wrap(argv) if wrap else argv, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, env=env)
        read_line(proc, 30, "the stand-in JIT process")
        register_standin(proc.pid, dirs)
        return proc.pid

    def sleep_as(self, user):
        """A `sleep 600` of `user` (tests/integration/users.py): a live process the user owns,
        killed when the run ends. Returns its pid once /proc says whose it is and its libraries
        are mapped."""
        import users  # tests that use no real user need not make any
        proc = self.spawn(users.argv(user, ["sleep", "600"]), stdin=subprocess.DEVNULL,
                          env=users.env(user))
        uid = users.ensure(user).pw_uid
        sleep = os.path.realpath(shutil.which("sleep"))

        def sleeping():
            # setpriv changes the uid before it execs sleep: until then, the maps are its own;
            # right after the exec, the dynamic loader has not mapped libc yet.
            if (os.stat(f"/proc/{proc.pid}").st_uid != uid or
                    os.path.realpath(f"/proc/{proc.pid}/exe") != sleep):
                return False
            with open(f"/proc/{proc.pid}/maps") as f:
                return "libc.so" in f.read()
        wait_until(sleeping, 5, f"{user}'s sleeper")
        return proc.pid

    def daemon_kb(self, field):
        """The running daemon's /proc/PID/status figure in KiB (VmRSS, VmHWM)."""
        return status_kb(self.daemon.proc.pid, field)

    def client(self, *args, input=None, env=None, timeout=60, socket_path=None, use_socket=True):
        cmd = [self.jitsym]
        if use_socket:
            cmd += ["--socket", socket_path or self.socket_path]
        cmd += [str(a) for a in args]
        full_env = dict(os.environ)
        full_env.pop("JITSYM_SOCKET", None)
        if env:
            full_env.update(env)
        return subprocess.run(cmd, input=input, capture_output=True, text=True, env=full_env,
                              timeout=timeout)

    # ---- lookups ------------------------------------------------------------------------------

    def lookup(self, pid, queries, timeout=120):
        """queries: [(addr, time or None)], sent through stdin mode as `ADDR [TIME]` lines with
        --json. Returns one dict per query, in order."""
        text = "".join(hexaddr(a) + ("" if t is None else f" {t}") + "\n" for a, t in queries)
        res = self.client("lookup", "--pid", pid, "--json", input=text, timeout=timeout)
        # 3 and 4 (the process unknown, or denied) come with an answer for every address.
        check(res.returncode in (0, 3, 4),
              f"jitsym lookup exited {res.returncode}: {res.stderr.strip()[:500]}")
        out = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
        check(len(out) == len(queries),
              f"jitsym lookup printed {len(out)} answers for {len(queries)} queries")
        for (addr, _), answer in zip(queries, out):
            check(isinstance(answer.get("addr"), str) and int(answer["addr"], 16) == addr,
                  f"answer out of order or malformed: asked {hexaddr(addr)}, got {answer}")
        return out

    def lookup_one(self, pid, addr, t=None):
        return self.lookup(pid, [(addr, t)])[0]

    def wait_resolves(self, pid, addr, name, t=None, timeout=5.0, interval=0.02):
        """Polls until addr resolves to name; returns the answer."""
        def probe():
            a = self.lookup_one(pid, addr, t)
            return a if a.get("found") and a.get("name") == name else None
        return wait_until(probe, timeout, f"{hexaddr(addr)} in pid {pid} to resolve to {name!r}",
                          interval)

    def raw_connection(self, timeout=10.0):
        return RawConnection(self.socket_path, timeout)

    # ---- files --------------------------------------------------------------------------------

    def dump_path(self, pid, directory=None):
        return os.path.join(directory or self.watch_dir, f"jit-{pid}.dump")

    @staticmethod
    def write_file(path, *chunks):
        with open(path, "wb") as f:
            for c in chunks:
                f.write(c)

    @staticmethod
    def append_file(path, *chunks):
        with open(path, "ab") as f:
            for c in chunks:
                f.write(c)

    # ---- running ------------------------------------------------------------------------------

    def case(self, fn):
        self._cases.append(fn)
        return fn

    def setup(self, fn):
        """Runs once before the cases (typically writes fixtures and starts the daemon); if it
        fails, no case runs."""
        self._setup = fn
        return fn

    def log_tail(self, lines=LOG_TAIL_LINES):
        if self.daemon is None:
            return "(daemon not started)"
        tail = self.daemon.log_lines()[-lines:]
        return "\n".join("    | " + l for l in tail) or "    | (empty)"

    def _record(self, name, error=None, elapsed=0.0):
        if error is None:
            self.passes += 1
            print(f"PASS {name} ({elapsed:.2f}s)", flush=True)
        else:
            self.failures.append(name)
            print(f"FAIL {name} ({elapsed:.2f}s): {error}", flush=True)
            where = self.daemon.log_path if self.daemon else "-"
            print(f"  daemon log, last {LOG_TAIL_LINES} lines ({where}):")
            print(self.log_tail(), flush=True)

    def main(self):
        try:
            cases = list(self._cases)
            if self._setup is not None:
                t0 = time.monotonic()
                try:
                    self._setup()
                except Exception as e:
                    detail = str(e) if isinstance(e, Failure) else traceback.format_exc().rstrip()
                    self._record(self._setup.__name__, detail, time.monotonic() - t0)
                    cases = []
            for fn in cases:
                name = fn.__name__
                if self.args.only and self.args.only not in name:
                    continue
                t0 = time.monotonic()
                try:
                    fn()
                    self._record(name, elapsed=time.monotonic() - t0)
                except Failure as e:
                    self._record(name, str(e), time.monotonic() - t0)
                except Exception:  # a bug in the test or an unexpected client answer
                    self._record(name, traceback.format_exc().rstrip(), time.monotonic() - t0)
                if self.daemon is not None and not self.daemon.alive():
                    self._record("daemon_still_running",
                                 f"jitsymd died during {name} with status "
                                 f"{self.daemon.proc.returncode}")
                    break
            self._finish_daemon()
        finally:
            self._cleanup()
        total = self.passes + len(self.failures)
        print(f"{self.passes} passed, {len(self.failures)} failed")
        if self.failures:
            print("failed: " + ", ".join(self.failures))
        sys.exit(1 if self.failures or total == 0 else 0)

    def _finish_daemon(self):
        if self.daemon is None or not self.daemon.alive():
            return
        t0 = time.monotonic()
        self.daemon.stop()
        error = None
        if self.daemon.needed_kill:
            error = "jitsymd did not exit within 10s of SIGTERM"
        elif self.daemon.exit_code not in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
            error = f"jitsymd exited with status {self.daemon.exit_code} on SIGTERM"
        self._record("daemon_exits_on_sigterm", error, time.monotonic() - t0)

    def _cleanup(self):
        for p in self._children:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self.daemon is not None and self.daemon.alive():
            self.daemon.stop(timeout=2)
        if self.args.keep or self.failures:
            print(f"kept {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


class RawConnection:
    """A plain Unix-socket connection speaking the NDJSON protocol by hand."""

    def __init__(self, path, timeout):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def send_line(self, text):
        data = text.encode() if isinstance(text, str) else text
        self.sock.sendall(data + b"\n")

    def send(self, obj):
        self.send_line(json.dumps(obj))

    def read_line(self):
        chunks = [self.buf]
        while b"\n" not in chunks[-1]:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                partial = b"".join(chunks)[:200]
                raise Failure(f"connection closed by jitsymd (partial answer: {partial!r})")
            chunks.append(chunk)
        line, self.buf = b"".join(chunks).split(b"\n", 1)
        return json.loads(line)

    def request(self, obj):
        self.send(obj)
        return self.read_line()

    def close(self):
        self.sock.close()
