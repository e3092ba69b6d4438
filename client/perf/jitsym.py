# jitsym.py: a perf script module that names JIT frames through jitsymd.
#
#   perf record -k mono -g -e cpu-clock -p PID
#   perf script -s client/perf/jitsym.py                 # symbolized samples
#   perf script -s client/perf/jitsym.py -- --folded     # collapsed stacks for flame graphs
#
# perf calls process_event() for every sample; frames perf could not name (no symbol, or a JIT
# dso such as //anon, /tmp/perf-<pid>.map, jit-<pid>.dump) are asked of jitsymd by pid and
# sample time (CLOCK_MONOTONIC with -k mono, the jitdump clock), in batches, over its Unix
# socket with the NDJSON protocol (docs/protocol.md). Python standard library only.
#
# Options (after `--`): --folded, --socket PATH (default $JITSYM_SOCKET, else where `jitsym`
# looks: the user's own daemon's socket, then /run/jitsymd/jitsymd.sock), --batch N (samples
# per round trip, default 4096).
#
# Output, one block per sample as `perf script` prints callchains:
#   COMM PID/TID SECS.NSECS: EVENT:
#   <TAB>IP NAME+0xOFF (DSO)          perf's own name and dso
#   <TAB>IP NAME+0xOFF (ORIGIN:FILE)  a name jitsymd gave

import errno
import grp
import json
import os
import pwd
import re
import socket
import sys

JIT_DSO = re.compile(r"^(\[unknown\]|//anon|\[anon.*|/memfd:.*|\[JIT\].*|.*/perf-\d+\.map|"
                     r".*jit-\d+\.dump)$")


SYSTEM_SOCKET = "/run/jitsymd/jitsymd.sock"


def socket_candidates():
    """Where to connect, in order, as jitsym does (proto/daemon_socket.h): JITSYM_SOCKET alone;
    else the socket the user's own jitsymd listens on, then (not for root) the system one."""
    if os.environ.get("JITSYM_SOCKET"):
        return [os.environ["JITSYM_SOCKET"]]
    if os.geteuid() == 0:
        return [SYSTEM_SOCKET]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    own = (os.path.join(runtime, "jitsymd.sock") if runtime
           else "/tmp/jitsymd-%d.sock" % os.geteuid())
    return [own, SYSTEM_SOCKET]


# Nobody listens there: try the next candidate (a stale socket file refuses the connection).
NOBODY_LISTENS = (errno.ENOENT, errno.ENOTDIR, errno.ECONNREFUSED)


def permission_hint(path):
    """What a user refused by the socket's mode can do, worded as jitsym words it."""
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
        primary = pwd.getpwuid(os.geteuid()).pw_gid
    except KeyError:
        user, primary = str(os.geteuid()), os.getegid()
    try:
        st = os.stat(path)
        group = grp.getgrgid(st.st_gid).gr_name if st.st_mode & 0o020 else ""
    except (OSError, KeyError):
        group = ""
    if not group:
        return " (no permission on the socket or its directory)"
    if st.st_gid == os.getegid() or st.st_gid in os.getgroups():
        return " (%s is in the socket's group %s: a directory on the path refuses it)" % (
            user, group)
    if st.st_gid in os.getgrouplist(user, primary):
        return (" (the socket admits members of the group %s; %s was added to it after this "
                "login: log in again, or run `newgrp %s`)" % (group, user, group))
    return (" (the socket admits members of the group %s: as root, `usermod -aG %s %s`, then "
            "log in again)" % (group, group, user))


def parse_args(argv):
    opts = {"folded": False, "socket": None, "batch": 4096}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--folded":
            opts["folded"] = True
        elif a in ("--socket", "--batch") and i + 1 < len(argv):
            i += 1
            opts[a[2:]] = argv[i] if a == "--socket" else max(1, int(argv[i]))
        elif a.startswith("--socket="):
            opts["socket"] = a.split("=", 1)[1]
        elif a in ("-h", "--help"):
            sys.stderr.write(__doc__ if __doc__ else "see the comment at the top of jitsym.py\n")
        else:
            sys.stderr.write("jitsym.py: unknown option %r\n" % a)
        i += 1
    opts["sockets"] = [opts["socket"]] if opts["socket"] else socket_candidates()
    return opts


class Daemon:
    """One connection to jitsymd; requests are pipelined, one response line each."""

    def __init__(self, paths):
        tried = []
        for i, path in enumerate(paths):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(path)
                self.path = path
                break
            except OSError as e:
                self.sock.close()
                tried.append("%s: %s" % (path, e.strerror))
                if e.errno in NOBODY_LISTENS and i + 1 < len(paths):
                    continue
                if e.errno in (errno.EACCES, errno.EPERM):
                    hint = permission_hint(path)
                else:
                    hint = " (is jitsymd running? set JITSYM_SOCKET or --socket)"
                sys.stderr.write("jitsym.py: cannot connect to jitsymd at %s%s\n" %
                                 (", nor at ".join(tried), hint))
                raise SystemExit(1)
        self.buf = b""
        self.reported = set()

    def _read_line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise SystemExit("jitsym.py: jitsymd closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def lookup_many(self, requests):
        """requests: [(pid, [(addr, time_ns or None)])] -> per request, a list of results."""
        out = []
        payload = []
        for pid, queries in requests:
            addrs = [{"addr": "0x%x" % a, "time": t} if t is not None else "0x%x" % a
                     for a, t in queries]
            payload.append(json.dumps({"v": 1, "op": "lookup", "pid": pid,
                                       "fields": ["name", "offset", "origin", "source", "image"],
                                       "addrs": addrs}, separators=(",", ":")))
        self.sock.sendall(("\n".join(payload) + "\n").encode())
        for pid, queries in requests:
            resp = self._read_line()
            if not resp.get("ok"):
                err = resp.get("error", {})
                if err.get("code") not in self.reported:
                    self.reported.add(err.get("code"))
                    sys.stderr.write("jitsym.py: jitsymd refused a lookup (%s): %s\n" %
                                     (err.get("code"), err.get("message")))
                out.append([{"found": False}] * len(queries))
            else:
                out.append(resp["results"])
        return out


OPTS = parse_args(sys.argv[1:])
DAEMON = None
PENDING = []  # samples waiting for answers
FOLDED = {}
OUTPUT_CLOSED = False


def frames_of(param_dict):
    """[(ip, name or None, dso or None)], leaf first."""
    chain = param_dict.get("callchain")
    if chain:
        out = []
        for node in chain:
            sym = node.get("sym") or {}
            out.append((node.get("ip", 0), sym.get("name"), node.get("dso")))
        return out
    sample = param_dict["sample"]
    return [(sample.get("ip", 0), param_dict.get("symbol"), param_dict.get("dso"))]


def needs_name(name, dso):
    if dso is not None and dso != "":
        return JIT_DSO.match(dso) is not None
    return not name or name == "[unknown]"


def flush():
    global PENDING
    if not PENDING:
        return
    by_pid = {}
    for s in PENDING:
        for k, (ip, name, dso) in enumerate(s["frames"]):
            if s["pid"] > 0 and needs_name(name, dso):
                by_pid.setdefault(s["pid"], []).append((s, k, ip))
    requests = [(pid, [(ip, s["time"]) for s, _, ip in items]) for pid, items in by_pid.items()]
    answers = DAEMON.lookup_many(requests) if requests else []
    for (pid, items), results in zip(by_pid.items(), answers):
        for (s, k, _), r in zip(items, results):
            if r.get("found"):
                s["named"][k] = r
    out = []
    for s in PENDING:
        if OPTS["folded"]:
            names = []
            for k, (ip, name, dso) in enumerate(s["frames"]):
                r = s["named"].get(k)
                names.append((r["name"] if r else name or "[unknown]").replace(";", ":"))
            key = ";".join([s["comm"]] + names[::-1])
            FOLDED[key] = FOLDED.get(key, 0) + 1
            continue
        t = s["time"] or 0
        out.append("%s %d/%d %d.%09d: %s:\n" % (s["comm"], s["pid"], s["tid"], t // 10**9,
                                               t % 10**9, s["event"]))
        for k, (ip, name, dso) in enumerate(s["frames"]):
            r = s["named"].get(k)
            if r:
                where = "%s:%s" % (r.get("origin", "?"), r.get("image") or r.get("source", ""))
                out.append("\t%16x %s+0x%x (%s)\n" % (ip, r["name"], r.get("offset", 0), where))
            else:
                out.append("\t%16x %s (%s)\n" % (ip, name or "[unknown]", dso or "[unknown]"))
        out.append("\n")
    write("".join(out))
    PENDING = []


def write(text):
    # A reader that went away (perf script -s ... | head) ends the output, not perf.
    global OUTPUT_CLOSED
    if OUTPUT_CLOSED:
        return
    try:
        sys.stdout.write(text)
    except BrokenPipeError:
        OUTPUT_CLOSED = True
        sys.stdout = open(os.devnull, "w")


def trace_begin():
    global DAEMON
    DAEMON = Daemon(OPTS["sockets"])


def process_event(param_dict):
    sample = param_dict["sample"]
    PENDING.append({
        "comm": param_dict.get("comm", "?"),
        "pid": sample.get("pid", -1),
        "tid": sample.get("tid", -1),
        "time": sample.get("time") or None,  # None: not recorded; the latest code answers
        "event": param_dict.get("ev_name", "?"),
        "frames": frames_of(param_dict),
        "named": {},
    })
    if len(PENDING) >= OPTS["batch"]:
        flush()


def trace_end():
    flush()
    if OPTS["folded"]:
        write("".join("%s %d\n" % (k, v) for k, v in sorted(FOLDED.items())))
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")
