#!/usr/bin/env python3
"""A hostile user's attacks together, and what another user sees meanwhile, for
docs/performance.md ("Under attack, all at once").

  sudo python3 tests/bench/hostile_mix_bench.py --build build [--seconds 20]
                                                [--memory-budget 512M] [--check]

Runs the real jitsymd as root (its memory budget set; discovery on) with two real unprivileged
users (tests/integration/users.py). jsbob, all at once:
  perfinfo   a process whose /tmp/perfinfo-<pid>.map has 200,000 image lines, looked up over
             and over (each lookup took 16-19 s of a query thread when the file was re-merged
             quadratically);
  huge       a process whose perfinfo map is 1 GiB, looked up over and over;
  symbols    `symbols` of a process whose perfinfo places his 1 MB r2rmap at 1,000 bases (an
             answer of about 1 GB), read 64 KiB every 20 ms;
  persons    his subordinate uids (unshare --map-auto) each opening the per-user number of
             connections and holding them;
  fuse       a process mapping jit-<pid>.dump from his own FUSE mount whose server never
             answers root (tests/bench/fuse_attack.py: user_allow_other set for the run).
Meanwhile jsalice starts a process and writes its perf map every 2 s (the time until a lookup
answers it is measured), and looks up 16 addresses of her first process every 10 ms on one
connection (the time from sending to the whole answer). The daemon's RSS is sampled every
100 ms; VmHWM gives the peak. Prints one JSON object; with --check, exits 1 unless alice's new
maps were answerable within 2 s, her p99 stayed under 50 ms and the peak RSS under the budget
plus 300 MiB.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import users  # noqa: E402
from harness import status_kb  # noqa: E402

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
SIG = "00112233445566778899AABBCCDDEEFF"


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise TimeoutError(what)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))] if values else None


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def request(sock_path, obj, timeout=10):
    """One request on a fresh connection; the first answer line."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock_path)
    s.sendall((json.dumps(obj) + "\n").encode())
    f = s.makefile("rb")
    line = f.readline()
    s.close()
    return json.loads(line)


class Bench:
    def __init__(self, args):
        self.args = args
        self.root = tempfile.mkdtemp(prefix="jitsym-hostile-mix-")
        os.chmod(self.root, 0o755)
        self.watch = os.path.join(self.root, "watch")
        os.mkdir(self.watch)
        os.chmod(self.watch, 0o1777)
        self.sock = os.path.join(self.root, "jitsymd.sock")
        self.client = os.path.join(self.root, "jitsym")
        shutil.copy(os.path.join(args.build, "jitsym"), self.client)
        self.children = []
        self.tmp_files = []
        self.stop = threading.Event()
        self.notes = {}
        self.daemon = None
        self.fuse = None

    def as_user(self, name, argv, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(users.argv(name, argv), env=users.env(name), **kw)
        self.children.append(p)
        return p

    def sleeper(self, name):
        p = self.as_user(name, ["sleep", "3600"])
        uid = users.ensure(name).pw_uid
        wait_for(lambda: os.stat(f"/proc/{p.pid}").st_uid == uid, 5, "a sleeper")
        return p.pid

    def perfinfo(self, pid, lines, image="Bob", bases=None):
        path = f"/tmp/perfinfo-{pid}.map"
        self.tmp_files.append(path)
        if bases is None:
            bases = [0x7f00_0000_0000 + i * 0x10000 for i in range(lines)]
        text = "".join(f"ImageLoad;/app/{image}.dll;{{{SIG}}};0x{b:x};\n" for b in bases)
        users.write(users.BOB, path, text)
        return path

    def loop(self, name, fn):
        def run():
            n = 0
            while not self.stop.is_set():
                try:
                    fn()
                    n += 1
                except Exception as e:  # an attack that fails is noted, not fatal
                    self.notes[name + "_error"] = repr(e)[:200]
                    time.sleep(0.1)
            self.notes[name + "_rounds"] = n
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    # ---- bob's attacks ----------------------------------------------------------------------

    def attack_perfinfo(self):
        pid = self.sleeper(users.BOB)
        self.perfinfo(pid, 200_000)
        addr = 0x7f00_0000_0000 + 123_456 * 0x10000 + 0x1010
        self.loop("perfinfo", lambda: request(self.sock, {"v": 1, "op": "lookup", "pid": pid,
                                                          "addrs": [hex(addr)]}, 60))

    def attack_huge(self):
        pid = self.sleeper(users.BOB)
        path = self.perfinfo(pid, 1000)
        users.run(users.BOB, ["truncate", "-s", "1G", path])
        self.loop("huge", lambda: request(self.sock, {"v": 1, "op": "lookup", "pid": pid,
                                                      "addrs": ["0x7f0000001010"]}, 60))

    def attack_symbols(self):
        pid = self.sleeper(users.BOB)
        records = "".join(f"{0x1000 + i * 0x40:08X} 40 Bob.Namespace.Type::Method_{i}()\n"
                          for i in range(24_000))
        users.write(users.BOB, os.path.join(self.watch, "Bob.ni.r2rmap"),
                    f"FFFFFFFF 00 {SIG}\nFFFFFFFE 00 1\n" + records)
        self.perfinfo(pid, 0, bases=[0x7e00_0000_0000 + i * 0x1000_0000 for i in range(1000)])
        received = [0]

        def slow_symbols():
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(self.sock)
            s.sendall((json.dumps({"v": 1, "op": "symbols", "pid": pid}) + "\n").encode())
            while not self.stop.is_set():
                chunk = s.recv(65536)
                if not chunk:
                    break
                received[0] += len(chunk)
                time.sleep(0.02)
            s.close()
        self.loop("symbols", slow_symbols)
        self.notes["symbols_bytes_read"] = received

    def attack_persons(self):
        crowd = os.path.join(self.root, "subuid_crowd.py")
        shutil.copy(os.path.join(HERE, "..", "integration", "subuid_crowd.py"), crowd)
        os.chmod(crowd, 0o755)
        p = self.as_user(users.BOB, ["unshare", "--user", "--map-auto", "--map-root-user", PYTHON,
                                     crowd, "16", self.sock, "hold", "64"],
                         stdout=subprocess.PIPE, text=True)
        lines = []
        threading.Thread(target=lambda: lines.extend(l.strip() for l in p.stdout),
                         daemon=True).start()
        self.notes["persons_lines"] = lines

    def attack_fuse(self):
        # fuse_attack.py mounts bob's never-answering filesystem and starts his process mapping
        # jit-<pid>.dump from it; it prints "ready PID" and puts everything back on SIGTERM.
        p = subprocess.Popen([PYTHON, os.path.join(HERE, "fuse_attack.py"), self.root],
                             stdout=subprocess.PIPE, text=True)
        self.fuse = p
        self.notes["fuse"] = p.stdout.readline().strip()

    # ---- alice ------------------------------------------------------------------------------

    def alice_new_maps(self, times):
        while not self.stop.is_set():
            pid = self.sleeper(users.ALICE)
            t0 = time.monotonic()
            users.write(users.ALICE, os.path.join(self.watch, f"perf-{pid}.map"),
                        "30000000 40 alice_new\n")
            deadline = t0 + 30
            answered = False
            while time.monotonic() < deadline and not self.stop.is_set():
                try:
                    r = request(self.sock, {"v": 1, "op": "lookup", "pid": pid,
                                            "addrs": ["0x30000010"]}, 10)
                    if r.get("results", [{}])[0].get("name") == "alice_new":
                        times.append(time.monotonic() - t0)
                        answered = True
                        break
                except OSError:
                    pass
                time.sleep(0.02)
            if not answered and time.monotonic() >= deadline:
                times.append(float("inf"))
            time.sleep(2)

    def alice_probe(self, pid, times):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(self.sock)
        f = s.makefile("rb")
        line = (json.dumps({"v": 1, "op": "lookup", "pid": pid,
                            "addrs": [hex(0x20000010 + i * 64) for i in range(16)]}) + "\n").encode()
        while not self.stop.is_set():
            t0 = time.monotonic()
            s.sendall(line)
            answer = f.readline()
            times.append((time.monotonic() - t0) * 1000)
            if b"alice_fn" not in answer:
                self.notes["alice_probe_bad_answer"] = answer[:200].decode(errors="replace")
            time.sleep(0.01)

    def run(self):
        a = self.args
        users.ensure_both()
        alice_pid = self.sleeper(users.ALICE)
        users.write(users.ALICE, os.path.join(self.watch, f"perf-{alice_pid}.map"),
                    "".join("%x 40 alice_fn_%d\n" % (0x20000000 + i * 64, i) for i in range(1000)))
        log = open(os.path.join(self.root, "jitsymd.log"), "wb")
        daemon = subprocess.Popen([os.path.join(a.build, "jitsymd"), "--watch", self.watch,
                                   "--socket", self.sock, "--memory-budget", a.memory_budget,
                                   "--discovery-interval", "200ms"], stdout=log, stderr=log)
        self.daemon = daemon
        wait_for(lambda: os.path.exists(self.sock), 30, "the socket")
        wait_for(lambda: b"alice_fn_1" in subprocess.run(
            [self.client, "--socket", self.sock, "lookup", "--pid", str(alice_pid), "0x20000040"],
            capture_output=True).stdout, 60, "alice's map")
        rss_idle = status_kb(daemon.pid, "VmRSS")
        for attack in a.attacks.split(","):
            getattr(self, "attack_" + attack)()
        time.sleep(1)  # the attacks under way
        samples, new_maps, probe = [], [], []

        def sample():
            while not self.stop.is_set():
                samples.append(status_kb(daemon.pid, "VmRSS"))
                time.sleep(0.1)
        threads = [threading.Thread(target=sample, daemon=True),
                   threading.Thread(target=self.alice_new_maps, args=(new_maps,), daemon=True),
                   threading.Thread(target=self.alice_probe, args=(alice_pid, probe),
                                    daemon=True)]
        for t in threads:
            t.start()
        time.sleep(a.seconds)
        self.stop.set()
        for t in threads:
            t.join(35)
        peak = status_kb(daemon.pid, "VmHWM")
        budget_mib = parse_size(a.memory_budget) >> 20
        persons = self.notes.pop("persons_lines", [])
        symbols_read = self.notes.pop("symbols_bytes_read", [0])[0]
        out = {
            "attacks": a.attacks,
            "seconds": a.seconds,
            "daemon_alive": daemon.poll() is None,
            "memory_budget_mib": budget_mib,
            "rss_idle_mib": rss_idle >> 10,
            "rss_max_sampled_mib": (max(samples) >> 10) if samples else None,
            "rss_peak_vmhwm_mib": peak >> 10,
            "alice_new_maps": len(new_maps),
            # Never answerable within 30 s counts as null, and in _never.
            "alice_new_map_answerable_max_s":
                round(max(new_maps), 3) if new_maps and max(new_maps) < 1e9 else None,
            "alice_new_maps_never": sum(t == float("inf") for t in new_maps),
            "alice_lookups": len(probe),
            "alice_p50_ms": round(percentile(probe, 50), 2) if probe else None,
            "alice_p99_ms": round(percentile(probe, 99), 2) if probe else None,
            "alice_max_ms": round(max(probe), 2) if probe else None,
            "bob_connections_admitted": sum(l.split()[1:2] == ["ok"] for l in persons),
            "bob_connections_refused": sum(l.split()[1:2] == ["refused"] for l in persons),
            "bob_symbols_bytes_read": symbols_read,
        }
        out.update(self.notes)
        print(json.dumps(out, indent=1))
        ok = (out["daemon_alive"] and new_maps and max(new_maps) <= 2.0 and probe and
              percentile(probe, 99) < 50 and (peak >> 10) < budget_mib + 300)
        return ok

    def cleanup(self):
        self.stop.set()
        if self.fuse is not None and self.fuse.poll() is None:
            self.fuse.terminate()  # it unmounts and puts /etc/fuse.conf back
            self.fuse.wait(60)
        for p in self.children:
            if p.poll() is None:
                p.kill()
            p.wait()
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        subprocess.run(["pkill", "-KILL", "-f", os.path.join(self.root, "subuid_crowd.py")],
                       capture_output=True)
        for path in self.tmp_files:
            if os.path.exists(path):
                os.unlink(path)
        shutil.rmtree(self.root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--memory-budget", default="512M")
    ap.add_argument("--attacks", default="perfinfo,huge,symbols,persons,fuse")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (acts as jsalice and jsbob through setpriv)")
    bench = Bench(args)
    try:
        ok = bench.run()
    finally:
        bench.cleanup()
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
