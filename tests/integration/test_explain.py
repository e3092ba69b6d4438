#!/usr/bin/env python3
"""`jitsym explain` with the real daemon and client. A generated jitdump for a stand-in process
loads code, moves it away and reuses the address for other code: explained at several times,
the report lists every definition with its validity interval [from, to), marks the one that
answered, and its answer is the lookup's. A real `node --perf-prof` run is explained at a hot
address. Another user asking about a process not theirs learns nothing lookup would not tell
(no paths, no definitions). An unknown pid is explained as unknown; usage errors exit 2."""

import json
import os
import shutil
import subprocess
import time

import harness
import jitdump
import oracle
import users
from harness import Harness, check, hexaddr

h = Harness(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
S = {}

A = 0x7000_0000          # alpha's first home
MOVED = 0x7100_0000      # where alpha moves to
B = A + 0x10             # beta reuses part of alpha's old range
ASK = A + 0x20           # covered by alpha (until the move) and by beta (after the reuse)


def explain_json(*args, runner=None, status=0):
    """The report; `status` is the exit status wanted (3: unknown process, 4: denied, as
    lookup's)."""
    res = runner(*args) if runner else h.client("explain", *args, "--json")
    check(res.returncode == status,
          f"explain {args}: exit {res.returncode}, want {status}: {res.stderr.strip()}")
    return json.loads(res.stdout)


@h.setup
def start():
    users.ensure_both()
    S["client"] = users.share_like_tmp(h)
    h.start_daemon()
    pid = h.sleeper()
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    data = (w.header(base) + w.load(base + 100, A, 0x40, "alpha", 1) +
            w.move(base + 200, A, MOVED, 0x40, 1) + w.load(base + 300, B, 0x40, "beta", 2))
    h.write_file(h.dump_path(pid), data)
    h.wait_resolves(pid, ASK, "beta", t=base + 300)
    S.update(pid=pid, base=base)


def definitions_at(e):
    return [(d.get("name"), d.get("removed", False), d.get("from"), d.get("to"),
             d.get("picked", False)) for d in e["definitions"]]


@h.case
def every_definition_with_its_interval_and_the_answer_at_each_time():
    pid, base = S["pid"], S["base"]
    want_defs = [("alpha", base + 100, base + 200), (None, base + 200, base + 300),
                 ("beta", base + 300, None)]
    # (time, the name lookup answers, index of the definition that answered)
    for t, want_name, picked in ((base + 150, "alpha", 0), (base + 250, None, None),
                                 (base + 350, "beta", 2), (base + 50, None, None),
                                 (None, "beta", 2)):
        args = ["--pid", pid] + (["--time", t] if t is not None else []) + [hexaddr(ASK)]
        e = explain_json(*args)
        got = definitions_at(e)
        check(len(got) == 3, f"at {t}: want 3 definitions, got {got}")
        for (name, removed, frm, to, _), (wname, wfrom, wto) in zip(got, want_defs):
            check((name, removed, frm, to) == (wname, wname is None, wfrom, wto),
                  f"at {t}: definition {(name, removed, frm, to)}, want {(wname, wfrom, wto)}")
        marks = [i for i, d in enumerate(got) if d[4]]
        check(marks == ([] if picked is None else [picked]), f"at {t}: picked {marks}")
        ans = e["answer"]
        check((ans.get("name") if ans.get("found") else None) == want_name,
              f"at {t}: answer {ans}, want {want_name}")
        # The same answer as lookup gives.
        look = h.lookup_one(pid, ASK, t)
        check(look.get("found") == ans.get("found") and look.get("name") == ans.get("name"),
              f"at {t}: explain answered {ans}, lookup {look}")
        check(e["rule"], f"at {t}: no rule")
        if t == base + 50:
            check("later than T" in e["rule"], f"before the code: rule {e['rule']!r}")
    # The moved code is found at its new home with its own history.
    e = explain_json("--pid", pid, "--time", base + 250, hexaddr(MOVED + 8))
    check([d[0] for d in definitions_at(e)] == ["alpha"] and e["answer"].get("name") == "alpha",
          f"moved code: {e}")


@h.case
def process_and_sources_are_described():
    pid = S["pid"]
    e = explain_json("--pid", pid, hexaddr(ASK))
    check(len(e["incarnations"]) == 1, f"incarnations: {e['incarnations']}")
    inc = e["incarnations"][0]
    check(inc["alive"] and inc.get("uid") == 0 and inc.get("start_time"), f"incarnation: {inc}")
    src = inc["sources"]
    check(len(src) == 1 and src[0]["path"] == h.dump_path(pid), f"sources: {src}")
    s = src[0]
    check(s.get("owner") == 0 and s.get("trust") == "root" and s.get("records") == 3 and
          s["bytes_read"] == os.path.getsize(h.dump_path(pid)), f"source: {s}")


@h.case
def text_report_has_sections_and_relative_times():
    pid, base = S["pid"], S["base"]
    res = h.client("explain", "--pid", pid, "--time", base + 350, hexaddr(ASK))
    check(res.returncode == 0, f"exit {res.returncode}: {res.stderr}")
    out = res.stdout
    print("  " + out.replace("\n", "\n  ").rstrip())
    for part in ("process:", "incarnation", "source jitdump " + h.dump_path(pid),
                 "definitions covering", "(removed)", "answer: beta", "rule:", " s)"):
        check(part in out, f"{part!r} missing from the report:\n{out}")
    check(any(l.startswith("* ") and "beta" in l for l in out.splitlines()),
          f"the answering definition is not marked:\n{out}")


@h.case
def unknown_pid_is_said_so():
    e = explain_json("--pid", 999999, "0x1000", status=3)
    check(e["incarnations"] == [] and e["definitions"] == [] and
          not e["answer"].get("found"), f"unknown pid: {e}")
    check("no incarnation" in e["rule"], f"rule: {e['rule']!r}")


@h.case
def usage_errors_exit_2():
    for args in (["--pid", "1", "--image", "/bin/true", "0x10"], ["--pid", "1"],
                 ["0x10"], ["--pid", "1", "zz"], ["--pid", "1", "--time", "soon", "0x10"]):
        res = h.client("explain", *args)
        check(res.returncode == 2, f"explain {args}: exit {res.returncode}, want 2")


@h.case
def another_user_learns_no_paths():
    # jsalice's process and jitdump; jsbob asks about them.
    pid = h.sleeper(wrap=lambda argv: users.argv(users.ALICE, argv))
    alice = users.ensure(users.ALICE)
    harness.wait_until(lambda: os.stat(f"/proc/{pid}").st_uid == alice.pw_uid, 5,
                       "alice's sleeper")
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    users.write(users.ALICE, h.dump_path(pid),
                w.header(base) + w.load(base + 10, 0x5100_0000, 0x40, "alice_secret_fn", 1))
    h.wait_resolves(pid, 0x5100_0000, "alice_secret_fn")

    def as_user(name):
        return lambda *args: users.client(name, S["client"], h.socket_path, "explain", *args,
                                          "--json")

    mine = explain_json("--pid", pid, hexaddr(0x5100_0008), runner=as_user(users.ALICE))
    check(mine["answer"].get("name") == "alice_secret_fn" and mine["definitions"] and
          mine["incarnations"][0]["sources"][0]["path"] == h.dump_path(pid),
          f"the owner's own report: {mine}")
    res = users.client(users.BOB, S["client"], h.socket_path, "explain", "--pid", pid,
                       "--json", hexaddr(0x5100_0008))
    check(res.returncode == 4, f"bob: exit {res.returncode}, want 4: {res.stderr}")
    theirs = json.loads(res.stdout)
    check(theirs["incarnations"] == [] and theirs["definitions"] == [] and
          theirs["ignored"] == [], f"bob sees alice's process: {theirs}")
    check(theirs["answer"].get("error") == "permission denied", f"bob's answer: {theirs}")
    for secret in (h.dump_path(pid), "jit-", "alice_secret_fn", h.watch_dir):
        check(secret not in res.stdout, f"bob's report holds {secret!r}: {res.stdout}")
    look = users.client(users.BOB, S["client"], h.socket_path, "lookup", "--pid", pid, "--json",
                        hexaddr(0x5100_0008))
    check(json.loads(look.stdout.splitlines()[0]).get("error") == "permission denied",
          f"bob's lookup: {look.stdout}")
    text = users.client(users.BOB, S["client"], h.socket_path, "explain", "--pid", pid,
                        hexaddr(0x5100_0008))
    for secret in (h.dump_path(pid), "jit-", "alice_secret_fn"):
        check(secret not in text.stdout, f"bob's text report holds {secret!r}: {text.stdout}")


@h.case
def a_planted_file_is_listed_as_ignored_to_root_only():
    # jsbob writes a jitdump naming root's process: refused (untrusted). Root's report lists
    # it with the reason; jsbob, who may not query root's process, is told nothing of it.
    pid = h.sleeper()
    path = h.dump_path(pid)
    base = time.monotonic_ns()
    w = jitdump.Writer(pid)
    users.write(users.BOB, path, w.header(base) + w.load(base + 10, 0x5200_0000, 0x40, "x", 1))

    def ignored():
        e = explain_json("--pid", pid, "0x52000008")
        return e if e["ignored"] else None
    e = harness.wait_until(ignored, 5, "the planted file to be refused")
    check([i["path"] for i in e["ignored"]] == [path] and "untrusted" in e["ignored"][0]["reason"],
          f"ignored: {e['ignored']}")
    check(not e["answer"].get("found") and "ignored" in e["rule"], f"report: {e}")
    res = h.client("explain", "--pid", pid, "0x52000008")
    check("ignored files:" in res.stdout and path in res.stdout, f"text report:\n{res.stdout}")
    bob = users.client(users.BOB, S["client"], h.socket_path, "explain", "--pid", pid, "--json",
                       "0x52000008")
    check(bob.returncode == 4 and json.loads(bob.stdout)["ignored"] == [],
          f"bob's report: {bob.stdout} {bob.stderr}")


@h.case
def node_hot_address_is_explained():
    node = shutil.which("node")
    check(node is not None, "node is not on PATH (./build.sh installs Debian's nodejs)")
    proc = h.spawn([node, "--perf-prof", os.path.join(HERE, "node", "live_workload.js")],
                   cwd=h.watch_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = harness.read_line(proc, 60, "node")
    check(line.startswith("ready"), f"unexpected node output {line!r}")
    path = h.dump_path(proc.pid)
    dump = jitdump.read_file(path)
    hot = [r for r in dump.loads() if r.code_size > 0 and "jitsymHot" in r.name]
    check(hot, f"no hot function in {path}")
    model = oracle.Oracle(dump)
    rec = hot[-1]
    addr, t = rec.code_addr + rec.code_size // 2, rec.eff_ts
    want = model.lookup(addr, t).name
    h.wait_resolves(proc.pid, addr, want, t=t, timeout=15)
    e = explain_json("--pid", proc.pid, "--time", t, hexaddr(addr))
    check(e["answer"].get("name") == want, f"answer {e['answer']}, want {want!r}")
    picked = [d for d in e["definitions"] if d.get("picked")]
    check(len(picked) == 1 and picked[0]["name"] == want and picked[0]["from"] <= t and
          (picked[0].get("to") is None or t < picked[0]["to"]), f"picked: {picked}")
    check(any(d["name"] == rec.name for d in e["definitions"] if not d.get("removed")),
          f"{rec.name!r} not among the definitions")
    check("jitdump" in e["rule"], f"rule: {e['rule']!r}")
    print(f"  {hexaddr(addr)} at {t}: {want} ({len(e['definitions'])} definitions)")
    proc.stdin.close()


if __name__ == "__main__":
    h.main()
