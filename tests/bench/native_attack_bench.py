#!/usr/bin/env python3
"""One user's hostile native files, all at once, and another user's native lookups meanwhile,
for docs/performance.md ("Native files under attack"). With --base-jitsymd, the build before
is measured the same way in the same run.

  sudo python3 tests/bench/native_attack_bench.py --jitsymd build/jitsymd --jitsym build/jitsym \\
      [--base-jitsymd OTHER/jitsymd --base-jitsym OTHER/jitsym] [--seconds 20] [--check]

Runs the real jitsymd as root with two real unprivileged users (tests/integration/users.py).
jsbob, on three client loops at once, looks up fresh copies (a new file each time: nothing is
cached) of the files of issue items 6-10, built in his home with tests/integration/elf_craft.py:
  strings   4,200 symbols naming one 1 MiB string;
  bombs     6,000 demangler bombs ("_ZGTt", 40 doublings);
  inflate   four SHF_COMPRESSED debug sections claiming 1 GiB each;
  siblings  subprograms whose DW_AT_sibling is their own first child, 40 deep;
  unended   DWARF names whose strings do not end in .debug_str;
and stops and kills his own parse worker now and then (it runs as him). Meanwhile jsalice
looks up malloc in her own process (libc, root's) with one `jitsym lookup` after the other;
each is timed end to end (client start to exit). Prints one JSON object per build; with
--check, exits 1 unless alice's p99 is under 50 ms and the daemon is alive at the end.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import elf_craft  # noqa: E402
import users  # noqa: E402

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def make_files(home, uid, gid):
    """bob's attack files: {kind: (path, address)}."""
    out = {}
    path = os.path.join(home, "strings.so")
    long_name = "L" * (1 << 20)
    names = [f"f{i}" for i in range(4200)]
    addrs = elf_craft.library(path, names, [long_name])
    elf_craft.point_names_at(path, lambda i, n: n[long_name])
    out["strings"] = (path, addrs["f0"])
    path = os.path.join(home, "bombs.so")
    names = [elf_craft.doubling(40, "_ZGTt", f"bx{i}") for i in range(6000)]
    addrs = elf_craft.library(path, names)
    out["bombs"] = (path, addrs[names[-1]])
    path = os.path.join(home, "inflate")
    out["inflate"] = (path, elf_craft.compression_bomb(
        path, [".debug_str", ".debug_line", ".debug_abbrev", ".debug_aranges"], 1024))
    path = os.path.join(home, "siblings.so")
    out["siblings"] = (path, elf_craft.dwarf_attack(path, "sibling", 40) + 39)
    path = os.path.join(home, "unended.so")
    out["unended"] = (path, elf_craft.dwarf_attack(path, "strings"))
    for path, _ in out.values():
        os.chown(path, uid, gid)
    return out


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


def run_one(jitsymd, jitsym, seconds, files, bob, label):
    root = tempfile.mkdtemp(prefix="native-attack-")
    os.chmod(root, 0o755)
    client = os.path.join(root, "jitsym")
    shutil.copy(jitsym, client)
    os.chmod(client, 0o755)
    sock = os.path.join(root, "s")
    watch = os.path.join(root, "watch")
    os.mkdir(watch)
    log = open(os.path.join(root, "jitsymd.log"), "w")
    daemon = subprocess.Popen([jitsymd, "--socket", sock, "--watch", watch, "--log-level",
                               "warning"], stdout=log, stderr=log)
    alice_proc = subprocess.Popen(users.argv(users.ALICE, ["sleep", "600"]),
                                  stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        pid = alice_proc.pid
        base = None
        while base is None and time.monotonic() < deadline:
            for line in open(f"/proc/{pid}/maps"):
                parts = line.split()
                if len(parts) >= 6 and parts[5].endswith("libc.so.6") and int(parts[2], 16) == 0:
                    base = int(parts[0].split("-")[0], 16)
            time.sleep(0.05)
        nm = subprocess.run(["nm", "-D", "--defined-only", LIBC], capture_output=True, text=True,
                            check=True).stdout
        malloc = base + next(int(l.split()[0], 16) for l in nm.splitlines()
                             if l.split()[-1].split("@")[0] == "malloc")

        def alice_once():
            t0 = time.monotonic()
            res = users.client(users.ALICE, client, sock, "--timeout", "120", "lookup",
                               "--pid", str(pid), hex(malloc), timeout=150)
            return time.monotonic() - t0, res.returncode == 0 and "malloc" in res.stdout

        alice_once()  # libc read once before the attack
        stop = threading.Event()
        bob_counts = {"lookups": 0, "stopped": 0}

        def bob_loop(k):
            n = 0
            while not stop.is_set():
                for kind, (path, addr) in files.items():
                    if stop.is_set():
                        break
                    copy = f"{path}.{k}.{n}"
                    n += 1
                    shutil.copy(path, copy)
                    os.chown(copy, bob.pw_uid, bob.pw_gid)
                    users.client(users.BOB, client, sock, "--timeout", "120", "lookup",
                                 "--image", copy, hex(addr), timeout=150)
                    os.unlink(copy)
                    bob_counts["lookups"] += 1

        def bob_signals():
            # His own workers: he may stop and kill them.
            while not stop.wait(2.0):
                out = subprocess.run(["pgrep", "-u", str(bob.pw_uid), "-f",
                                      "jitsymd-parse-worker"], capture_output=True,
                                     text=True).stdout.split()
                for p in out[:1]:
                    users.run(users.BOB, ["kill", "-STOP", p])
                    bob_counts["stopped"] += 1
                    if stop.wait(1.0):
                        break
                    users.run(users.BOB, ["kill", "-KILL", p])

        threads = [threading.Thread(target=bob_loop, args=(k,)) for k in range(3)]
        threads.append(threading.Thread(target=bob_signals))
        for t in threads:
            t.start()
        times, failed = [], 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            took, ok = alice_once()
            times.append(took)
            failed += not ok
        stop.set()
        for t in threads:
            t.join()
        times.sort()
        return {
            "build": label,
            "alice_lookups": len(times),
            "alice_failed": failed,
            "alice_p50_ms": round(percentile(times, 0.5) * 1000, 1),
            "alice_p99_ms": round(percentile(times, 0.99) * 1000, 1),
            "alice_max_ms": round(times[-1] * 1000, 1),
            "bob_lookups": bob_counts["lookups"],
            "bob_worker_stops": bob_counts["stopped"],
            "daemon_alive": daemon.poll() is None,
        }
    finally:
        alice_proc.kill()
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(10)
        except subprocess.TimeoutExpired:
            daemon.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jitsymd", required=True)
    ap.add_argument("--jitsym", required=True)
    ap.add_argument("--base-jitsymd")
    ap.add_argument("--base-jitsym")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    alice, bob = users.ensure_both()
    files = make_files(bob.pw_dir, bob.pw_uid, bob.pw_gid)
    results = []
    if args.base_jitsymd:
        results.append(run_one(os.path.abspath(args.base_jitsymd),
                               os.path.abspath(args.base_jitsym or args.jitsym), args.seconds,
                               files, bob, "base"))
    results.append(run_one(os.path.abspath(args.jitsymd), os.path.abspath(args.jitsym),
                           args.seconds, files, bob, "this"))
    for r in results:
        print(json.dumps(r))
    for path, _ in files.values():
        os.unlink(path)
    mine = results[-1]
    if args.check and not (mine["alice_p99_ms"] < 50 and mine["daemon_alive"] and
                           mine["alice_failed"] == 0):
        sys.exit(1)


if __name__ == "__main__":
    main()
