#!/usr/bin/env python3
"""jitsymd as a service: socket activation through the real systemd-socket-activate, the sd_notify
protocol (READY=1 after the initial scan, STATUS=, WATCHDOG=1 keep-alives, RELOADING=1,
STOPPING=1) read from a datagram socket the test owns, SIGHUP reloading the config file (watch
directories, log level; a bad file keeps the running settings) without losing indexed state,
and a restart answering exactly as before from the files left on disk. The shipped config file
lists every setting with its true default."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import jitdump
from harness import Daemon, Failure, Harness, check, wait_until

h = Harness(__doc__)
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_dump(directory, pid, base, names, start=0x5000_0000, size=0x100):
    """A jitdump for pid with one LOAD per name, `size` bytes apart. Returns [(addr, name)]."""
    w = jitdump.Writer(pid)
    chunks = [w.header(base)]
    placed = []
    for i, name in enumerate(names):
        addr = start + i * size
        chunks.append(w.load(base + 100 * (i + 1), addr, size, name, i + 1))
        placed.append((addr, name))
    h.write_file(os.path.join(directory, f"jit-{pid}.dump"), *chunks)
    return placed


def resolves(pid, addr, socket_path=None):
    res = h.client("lookup", "--pid", pid, "--json", hex(addr), socket_path=socket_path,
                   timeout=20)
    if res.returncode != 0:
        return None
    answer = json.loads(res.stdout.splitlines()[0])
    return answer.get("name") if answer.get("found") else None


class NotifySocket:
    """The service manager's end of sd_notify: a datagram socket; messages are KEY=VALUE lines."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []  # (monotonic time, {key: value})

    def receive(self, timeout):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return None
        fields = {}
        for line in data.decode().splitlines():
            key, _, value = line.partition("=")
            fields[key] = value
        self.messages.append((time.monotonic(), fields))
        return fields

    def wait_for(self, key, timeout, value=None):
        """Reads messages until one has `key` (with `value`, if given); returns it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fields = self.receive(max(0.01, deadline - time.monotonic()))
            if fields and key in fields and (value is None or fields[key] == value):
                return fields
        raise Failure(f"no {key}{'=' + value if value else ''} notification within {timeout}s; "
                      f"got {[m for _, m in self.messages][-8:]}")

    def close(self):
        self.sock.close()
        os.unlink(self.path)


def own_daemon(name, config_text, extra_args=(), env=None):
    """A jitsymd of this test's own (not h.daemon) reading a config file, with only --config and
    --socket on its command line (so the file decides the rest); returns (daemon, config path).
    """
    config = os.path.join(h.root, f"{name}.conf")
    if "discovery-interval" not in config_text:
        # As for every test daemon (harness.Daemon): no discovery of other tests' files.
        config_text += "discovery-interval = 0\n"
    with open(config, "w") as f:
        f.write(config_text)
    d = Daemon(h.jitsymd, [], os.path.join(h.root, f"{name}.sock"),
               os.path.join(h.root, f"{name}.log"))
    full_env = dict(os.environ)
    for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID",
                "JOURNAL_STREAM"):
        full_env.pop(key, None)
    full_env.update(env or {})
    d._log = open(d.log_path, "ab")
    d.proc = subprocess.Popen([h.jitsymd, "--config", config, "--socket", d.socket_path,
                               *extra_args], stdin=subprocess.DEVNULL, stdout=d._log,
                              stderr=d._log, start_new_session=True, env=full_env)
    return d, config


def wait_ping(d, timeout=20):
    def ok():
        if not d.alive():
            raise Failure(f"jitsymd exited with {d.proc.returncode}: {d.log()[-600:]}")
        return h.client("ping", socket_path=d.socket_path, timeout=5).returncode == 0
    wait_until(ok, timeout, "jitsymd to answer ping", 0.05)


def stop(d):
    code = d.stop()
    check(not d.needed_kill, "jitsymd did not exit within 10s of SIGTERM")
    check(code == 0, f"jitsymd exited with {code} on SIGTERM")


@h.case
def socket_activation_with_systemd_socket_activate():
    if shutil.which("systemd-socket-activate") is None:
        print("  (systemd-socket-activate missing: skipped)")
        return
    watch = os.path.join(h.root, "activated")
    os.mkdir(watch)
    pid = h.sleeper([watch])
    placed = write_dump(watch, pid, time.monotonic_ns(), ["activated_one", "activated_two"])
    config = os.path.join(h.root, "activated.conf")
    with open(config, "w") as f:
        f.write(f"watch = {watch}\n# never used: systemd passes the socket\n"
                f"socket = {h.root}/not-this.sock\n")
    sock = os.path.join(h.root, "activated.sock")
    log = open(os.path.join(h.root, "activated.log"), "wb")
    proc = h.spawn(["systemd-socket-activate", "-l", sock, h.jitsymd, "--config", config],
                   stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: os.path.exists(sock), 10, "systemd-socket-activate to listen")
        # The daemon starts on this first connection and must answer it completely: the initial
        # scan is done before the passed socket is served.
        check(resolves(pid, placed[1][0], sock) == "activated_two",
              "first lookup through the activated socket did not resolve")
        with open(os.path.join(h.root, "activated.log")) as f:
            text = f.read()
        check("serving the socket passed by systemd" in text, f"daemon log: {text[-800:]}")
        check(not os.path.exists(os.path.join(h.root, "not-this.sock")),
              "jitsymd created its own socket although one was passed")
        proc.send_signal(signal.SIGTERM)  # systemd-socket-activate exec'd jitsymd: same pid
        check(proc.wait(10) == 0, f"activated jitsymd exited with {proc.returncode}")
        # The socket belongs to the service manager: jitsymd must not remove it.
        check(os.path.exists(sock), "jitsymd removed the socket systemd passed")
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


@h.case
def notify_ready_status_watchdog_reload_stopping():
    watch = os.path.join(h.root, "notified")
    os.mkdir(watch)
    pid = h.sleeper([watch])
    # More than one file's turn at start-up (32 MiB of records: long names; code bytes do not
    # count, they are skipped), so READY=1 must wait for several turns.
    names = [f"notified_{i}_" + "n" * 1000 for i in range(40000)]
    placed = write_dump(watch, pid, time.monotonic_ns(), names, size=0x40)
    notify = NotifySocket(os.path.join(h.root, "notify.sock"))
    try:
        d, config = own_daemon("notified", f"watch = {watch}\n",
                               env={"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"})
        ready = notify.wait_for("READY", 30, "1")
        # READY=1 comes after the initial scan: the last record already resolves.
        check(resolves(pid, placed[-1][0], d.socket_path) == names[-1],
              "READY=1 was sent before the files present at start-up were indexed")
        check("STATUS" in ready and "40000 code ranges" in ready["STATUS"],
              f"READY=1 without a useful STATUS=: {ready}")
        # Keep-alives at about half of WATCHDOG_USEC.
        t0 = time.monotonic()
        for _ in range(4):
            notify.wait_for("WATCHDOG", 5, "1")
        elapsed = time.monotonic() - t0
        check(elapsed < 4.0, f"4 keep-alives took {elapsed:.1f}s with WATCHDOG_USEC=0.4s")
        # SIGHUP: RELOADING=1, then READY=1 again.
        d.proc.send_signal(signal.SIGHUP)
        notify.wait_for("RELOADING", 10, "1")
        notify.wait_for("READY", 10, "1")
        # A wedged daemon (stopped here) sends no keep-alive.
        d.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        while notify.receive(0.05):  # drain what was in flight
            pass
        check(notify.receive(1.2) is None, "keep-alives went on while jitsymd was stopped")
        d.proc.send_signal(signal.SIGCONT)
        notify.wait_for("WATCHDOG", 5, "1")
        d.proc.send_signal(signal.SIGTERM)
        notify.wait_for("STOPPING", 10, "1")
        # A service manager or an operator may signal again while the daemon stops: every
        # further SIGTERM, until the very end, must leave a clean exit.
        deadline = time.monotonic() + 10
        while d.proc.poll() is None and time.monotonic() < deadline:
            d.proc.send_signal(signal.SIGTERM)
            time.sleep(0.001)
        stop(d)
    finally:
        notify.close()


@h.case
def reload_applies_watch_dirs_and_log_level_and_keeps_state():
    a = os.path.join(h.root, "reload-a")
    b = os.path.join(h.root, "reload-b")
    os.mkdir(a)
    os.mkdir(b)
    d, config = own_daemon("reload", f"watch = {a}\nlog-level = info\n")
    try:
        wait_ping(d)
        pid_a, pid_b = h.sleeper(), h.sleeper()
        in_a = write_dump(a, pid_a, time.monotonic_ns(), ["reload_in_a"])
        in_b = write_dump(b, pid_b, time.monotonic_ns(), ["reload_in_b"])
        wait_until(lambda: resolves(pid_a, in_a[0][0], d.socket_path) == "reload_in_a", 10,
                   "the file in the watched directory to resolve")
        check(resolves(pid_b, in_b[0][0], d.socket_path) is None,
              "a file in an unwatched directory resolved")
        check(" debug: " not in d.log(), "debug lines at log level info")

        with open(config, "w") as f:
            f.write(f"# now b only, and quieter\nwatch = {b}\nlog-level = warning\nthreads = 7\n")
        lines_before = len(d.log_lines())
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: resolves(pid_b, in_b[0][0], d.socket_path) == "reload_in_b", 10,
                   "the file in the newly watched directory to resolve after SIGHUP")
        # Indexed state survives the reload, though its directory is not watched any more.
        check(resolves(pid_a, in_a[0][0], d.socket_path) == "reload_in_a",
              "state indexed before the reload was lost")
        new_lines = d.log_lines()[lines_before:]
        check(any("reload: threads changed; it takes effect on restart" in l for l in new_lines),
              f"no warning for a setting that needs a restart: {new_lines}")
        # At level warning, following the new file (an info line) is not logged.
        check(not any(" info: " in l for l in new_lines),
              f"info lines after the reload to log-level warning: {new_lines}")

        # A broken file: logged, the running settings stay, the daemon keeps serving.
        with open(config, "w") as f:
            f.write(f"watch = {b}\nthreads = lots\n")
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "keeping the running settings" in d.log() or None, 10,
                   "the reload error")
        check(f"{config}:2: threads takes a number from 1 to 256" in d.log(),
              "the reload error does not name the file and line")
        check(resolves(pid_b, in_b[0][0], d.socket_path) == "reload_in_b",
              "lost state after a bad reload")
        stop(d)
    finally:
        if d.alive():
            d.stop()


@h.case
def restart_answers_exactly_as_before():
    watch = os.path.join(h.root, "restart")
    os.mkdir(watch)
    live = h.sleeper([watch])
    dead = h.sleeper([watch])
    base = time.monotonic_ns()
    # Two incarnations' worth of history in each file: loads, a reload over the same address.
    w_live, w_dead = jitdump.Writer(live), jitdump.Writer(dead)
    for w, pid, tag in ((w_live, live, "live"), (w_dead, dead, "dead")):
        h.write_file(os.path.join(watch, f"jit-{pid}.dump"), w.header(base),
                     w.load(base + 100, 0x6000_0000, 0x100, f"{tag}_first", 1),
                     w.load(base + 200, 0x6000_0100, 0x80, f"{tag}_second", 2),
                     w.load(base + 300, 0x6000_0000, 0x40, f"{tag}_replaced", 3),
                     w.move(base + 400, 0x6000_0100, 0x6100_0000, 0x80, 2))
    with open(os.path.join(watch, f"perf-{live}.map"), "w") as f:
        f.write("7000000000 40 perfmap_live_one\n7000000040 40 perfmap_live_two\n")
    d, _ = own_daemon("restart", f"watch = {watch}\n")
    try:
        wait_ping(d)
        wait_until(lambda: resolves(dead, 0x6000_0010, d.socket_path), 10, "the dumps to load")
        h.kill_child(dead)
        # Its exit is noticed (and the file drained) before comparing.
        def dead_exited():
            res = h.client("processes", "--json", socket_path=d.socket_path)
            return f'"pid":{dead},' in res.stdout and '"alive":false' in res.stdout
        wait_until(dead_exited, 10, f"pid {dead} to be seen exiting")

        times = [None, base + 150, base + 250, base + 350, base + 450]
        addrs = [0x6000_0000, 0x6000_0020, 0x6000_0050, 0x6000_0110, 0x6100_0010, 0x6200_0000,
                 0x70_0000_0010, 0x70_0000_0050]
        queries = [(pid, a, t) for pid in (live, dead) for a in addrs for t in times]

        def answers():
            out = []
            for pid, a, t in queries:
                args = ["lookup", "--pid", pid, "--json", hex(a)]
                if t is not None:
                    args += ["--time", t]
                res = h.client(*args, socket_path=d.socket_path)
                check(res.returncode == 0, f"lookup failed: {res.stderr}")
                out.append(res.stdout.strip())
            return out

        before = answers()
        check(sum('"found":true' in a for a in before) >= 20,
              f"too few answers found before the restart: {before}")
        stop(d)
        d2, _ = own_daemon("restart", open(os.path.join(h.root, "restart.conf")).read())
        wait_ping(d2)
        d = d2
        after = answers()
        diff = [f"pid {q[0]} {hex(q[1])} @ {q[2]}:\n    before {b}\n    after  {a}"
                for q, b, a in zip(queries, before, after) if a != b]
        check(not diff, f"{len(diff)} answers changed across the restart:\n  " +
              "\n  ".join(diff[:8]))
        stop(d)
    finally:
        if d.alive():
            d.stop()


@h.case
def shipped_config_file_lists_every_setting_with_its_default():
    shipped = os.path.join(SOURCE_DIR, "systemd", "jitsymd.conf")
    text = open(shipped).read()
    help_text = subprocess.run([h.jitsymd, "--help"], capture_output=True, text=True).stdout
    options = sorted({word[2:] for line in help_text.splitlines() for word in line.split()
                      if word.startswith("--") and len(word) > 2})
    meta = {"config", "print-config", "version", "help"}
    # Shown commented out with its default, or set (the byte limits the unit's memory bound
    # assumes).
    missing = [o for o in options
               if o not in meta and f"\n#{o} = " not in text and f"\n{o} = " not in text]
    check(not missing, f"settings missing from systemd/jitsymd.conf: {missing}")
    # Uncommented, the file parses; the values it shows for settings with fixed defaults are the
    # defaults.
    uncommented = os.path.join(h.root, "uncommented.conf")
    with open(uncommented, "w") as f:
        for line in text.splitlines():
            stripped = line[1:] if re.match(r"#[a-z0-9-]+ = ", line) else line
            f.write(stripped + "\n")
    empty = os.path.join(h.root, "empty.conf")
    open(empty, "w").close()

    def printed(path):
        res = subprocess.run([h.jitsymd, "--config", path, "--print-config"], capture_output=True,
                             text=True)
        check(res.returncode == 0, f"--print-config on {path}: {res.stderr}")
        # Comment lines (the descriptor budget) are not settings.
        return dict(line.split(" = ", 1) for line in res.stdout.splitlines()
                    if not line.startswith("#"))

    shown, defaults = printed(uncommented), printed(empty)
    for key in ("log-level", "retention", "memory-budget"):
        check(shown.get(key) == defaults.get(key),
              f"the shipped file shows {key} = {shown.get(key)}, the default is "
              f"{defaults.get(key)}")
    # A bad file is a start-up error (status 2) naming the file and line.
    bad = os.path.join(h.root, "bad.conf")
    with open(bad, "w") as f:
        f.write("# fine\nretention = forever\n")
    res = subprocess.run([h.jitsymd, "--config", bad], capture_output=True, text=True, timeout=10)
    check(res.returncode == 2 and f"{bad}:2: retention" in res.stderr,
          f"bad config: status {res.returncode}, {res.stderr!r}")
    res = subprocess.run([h.jitsymd, "--config", os.path.join(h.root, "missing.conf")],
                         capture_output=True, text=True, timeout=10)
    check(res.returncode == 2 and "missing.conf" in res.stderr,
          f"missing --config file: status {res.returncode}, {res.stderr!r}")


@h.case
def journal_priority_prefixes_under_systemd():
    watch = os.path.join(h.root, "journal")
    os.mkdir(watch)
    # systemd names the stderr stream in JOURNAL_STREAM=DEV:INODE; here stderr is the log file.
    log_path = os.path.join(h.root, "journal.log")
    open(log_path, "w").close()
    st = os.stat(log_path)
    d, _ = own_daemon("journal", f"watch = {watch}\n",
                      env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
    wait_ping(d)
    stop(d)
    lines = [l for l in d.log_lines() if l.strip()]
    check(lines and all(re.match(r"<[3467]>jitsymd: (debug|info|warning|error): ", l)
                        for l in lines), f"lines without a <N> prefix: {lines[:5]}")
    check(any(l.startswith("<6>jitsymd: info: ready") for l in lines), f"{lines[:5]}")
    # Inherited from a service but writing elsewhere: no prefixes.
    d, _ = own_daemon("not-journal", f"watch = {watch}\n",
                      env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino + 1}"})
    wait_ping(d)
    stop(d)
    lines = [l for l in d.log_lines() if l.strip()]
    check(lines and all(l.startswith("jitsymd: ") for l in lines),
          f"prefixes on a stream that is not the journal: {lines[:5]}")


h.main()
