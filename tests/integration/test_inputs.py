#!/usr/bin/env python3
"""Inputs checked where they enter the client, with the real daemon and real perf recordings of
node --perf-prof: `jitsym annotate -i perf.data` runs perf script itself and warns, naming
`-k mono`, about a recording perf inject --jit would refuse (made without -k mono), and not
about one made with it (whose frames it names as `perf script | jitsym annotate` does); perf
script output without a time field or without pid/tid gets one warning each and a summary that
says what was named and why the rest was not (--quiet: nothing on stderr); `jitsym lookup`
with a time in microseconds or a wall-clock epoch warns once, naming the clock expected."""

import os
import re
import subprocess
import time

import jitdump
import oracle
import perfrec
from harness import Harness, check

h = Harness(__doc__)
RUN = {}
NAMED_RE = re.compile(r"\+0x[0-9a-f]+ \((jitdump|perfmap|elf):")
SUMMARY_RE = re.compile(r"^jitsym annotate: summary: (\d+) frames to name, (\d+) named, "
                        r"(\d+) left unknown$", re.M)
NO_PID_RE = re.compile(r"^  left unknown, reason no_pid \(no pid or tid in the input: nobody to ask\): "
                       r"(\d+)$", re.M)
TIME_RE = re.compile(r"(\s)(\d+)\.(\d{6}):")


def annotate(*args, text=None, env=None):
    """Runs jitsym annotate; returns (stdout, stderr)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    res = subprocess.run([h.jitsym, "--socket", h.socket_path, "annotate"] + list(args),
                         input=None if text is None else text.encode("utf-8", "surrogateescape"),
                         capture_output=True, timeout=300, env=full_env)
    check(res.returncode == 0, f"jitsym annotate {args} exited {res.returncode}: "
                               f"{res.stderr.decode(errors='replace')[-800:]}")
    return res.stdout.decode("utf-8", "surrogateescape"), res.stderr.decode(errors="replace")


def named_lines(text):
    return sum(1 for line in text.split("\n") if NAMED_RE.search(line))


def summary(stderr):
    m = SUMMARY_RE.search(stderr)
    check(m is not None, f"no summary on stderr:\n{stderr[-1200:]}")
    return tuple(int(g) for g in m.groups())


@h.setup
def record():
    perf = perfrec.require_perf(h.root)
    h.start_daemon()
    workload = [perfrec.WORKLOAD, "8", "12", "5"]
    mono = os.path.join(h.root, "mono.data")
    plain = os.path.join(h.root, "plain.data")
    pid = perfrec.record_node(perf, mono, h.watch_dir, workload)
    plain_pid = perfrec.record_node(perf, plain, h.watch_dir, workload, clock=None)
    dump = jitdump.read_file(h.dump_path(pid))
    check(dump is not None and dump.error is None, f"our jitdump reader: {dump and dump.error}")
    loads = [r for r in dump.loads() if r.code_size > 0]
    last = loads[-1]
    h.wait_resolves(pid, last.code_addr, oracle.Oracle(dump).lookup(last.code_addr).name,
                    timeout=30)
    RUN.update(perf=perf, mono=mono, plain=plain, pid=pid, plain_pid=plain_pid, dump=dump,
               loads=loads)


@h.case
def recording_without_k_mono_is_warned_about():
    out, err = annotate("-i", RUN["plain"])
    check("-k mono" in err and "perf inject --jit" in err and RUN["plain"] in err,
          f"no warning naming -k mono for a recording made without it:\n{err[-1200:]}")
    check(err.count("warning:") == 1, f"more than one warning:\n{err[-1200:]}")
    total, named, _ = summary(err)
    print(f"  without -k mono: {named} of {total} frames named, warned")
    check(total > 0, "no frame to name in the recording")
    # perf script --header piped in: the header's event lines tell the same.
    text = perfrec.perf_script(RUN["perf"], RUN["plain"], "--header")
    out, err = annotate(text=text)
    check("-k mono" in err and err.count("warning:") == 1,
          f"no warning for --header output of a recording without -k mono:\n{err[-1200:]}")
    text = perfrec.perf_script(RUN["perf"], RUN["mono"], "--header")
    out, err = annotate(text=text)
    check("warning" not in err, f"a warning for --header output with -k mono:\n{err[-1200:]}")


@h.case
def k_mono_recording_is_not_warned_about_and_names_as_before():
    out, err = annotate("-i", RUN["mono"])
    check("warning" not in err, f"a warning for a -k mono recording:\n{err[-1200:]}")
    # The same as feeding perf script's text in, with the fields annotate -i asks for.
    text = perfrec.perf_script(RUN["perf"], RUN["mono"], "-F", "comm,pid,tid,time,ip,sym,dso")
    piped, _ = annotate(text=text)
    check(out == piped, "annotate -i differs from perf script | jitsym annotate")
    total, named, unknown = summary(err)
    hot = sum(1 for line in out.split("\n") if "jitsymHot" in line and NAMED_RE.search(line))
    print(f"  -k mono: {named} of {total} frames named ({hot} workload functions), "
          f"{unknown} unknown")
    check(named == named_lines(out), f"summary says {named} named, the output has "
                                     f"{named_lines(out)}")
    check(hot >= 50, f"only {hot} frames named after the workload's functions")
    check(re.search(r"^  named by jitdump: \d+$", err, re.M), f"no per-origin count:\n{err}")


@h.case
def options_after_dashes_go_to_perf_script():
    out, _ = annotate("-i", RUN["mono"], "--quiet", "--", "-G")  # --hide-call-graph
    check(out and not any(l.startswith("\t") for l in out.split("\n")),
          "callchain lines printed although perf script was given -G")
    check(named_lines(out) > 0, "nothing named with -G")


@h.case
def perf_missing_is_a_clear_error():
    res = subprocess.run([h.jitsym, "--socket", h.socket_path, "annotate", "-i", RUN["mono"]],
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PATH="/nonexistent"))
    check(res.returncode == 1, f"exit {res.returncode} without perf")
    check("perf is not installed or not on PATH" in res.stderr, f"stderr: {res.stderr!r}")
    check(res.stdout == "", "output without perf")


@h.case
def no_time_field_warns_once_and_summarizes():
    text = perfrec.perf_script(RUN["perf"], RUN["mono"], "-F", "comm,pid,tid,ip,sym,dso")
    out, err = annotate(text=text)
    check(err.count("no time field") == 1 and "wrong names" in err,
          f"no single warning about the missing time field:\n{err[-1200:]}")
    total, named, _ = summary(err)
    check(named > 0 and named == named_lines(out), f"summary {total}/{named} vs output")


@h.case
def no_pid_field_warns_names_nothing_and_says_why():
    text = perfrec.perf_script(RUN["perf"], RUN["mono"], "-F", "comm,time,ip,sym,dso")
    out, err = annotate(text=text)
    check(out == text, "lines changed although the input has no pid or tid")
    check(err.count("no pid or tid field") == 1, f"no single no-pid warning:\n{err[-1200:]}")
    total, named, unknown = summary(err)
    m = NO_PID_RE.search(err)
    check(named == 0 and total > 0 and m is not None and int(m.group(1)) == unknown,
          f"the summary does not say why nothing was named:\n{err[-1200:]}")
    quiet_out, quiet_err = annotate("--quiet", text=text)
    check(quiet_out == text and quiet_err == "", f"--quiet printed: {quiet_err!r}")


@h.case
def epoch_times_in_perf_script_text_are_warned_about():
    text = perfrec.perf_script(RUN["perf"], RUN["mono"])
    offset = (time.clock_gettime_ns(time.CLOCK_REALTIME)
              - time.clock_gettime_ns(time.CLOCK_MONOTONIC)) // 1000  # in microseconds

    def to_epoch(m):
        us = int(m.group(2)) * 1000000 + int(m.group(3)) + offset
        return f"{m.group(1)}{us // 1000000}.{us % 1000000:06d}:"
    _, err = annotate(text=TIME_RE.sub(to_epoch, text))
    check(err.count("looks like CLOCK_REALTIME") == 1 and "perf record -k mono" in err,
          f"no single warning about wall-clock times:\n{err[-1200:]}")


def lookup_warning(*args, stdin=None):
    res = h.client("lookup", "--pid", RUN["pid"], *args, input=stdin)
    check(res.returncode == 0, f"lookup {args} exited {res.returncode}: {res.stderr}")
    return res.stderr


@h.case
def lookup_times_in_microseconds_or_wall_clock_are_warned_about():
    load = RUN["loads"][-1]
    addr = hex(load.code_addr)
    t = load.ts + 1000
    good = lookup_warning("--time", t, addr)
    check(good == "", f"a warning for a CLOCK_MONOTONIC time: {good!r}")
    us = lookup_warning("--time", t // 1000, addr)
    check(us.count("warning") == 1 and "looks like microseconds" in us
          and "expected CLOCK_MONOTONIC nanoseconds" in us and "-k mono" in us,
          f"microseconds: {us!r}")
    epoch = t + time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(
        time.CLOCK_MONOTONIC)
    ep = lookup_warning("--time", epoch, addr)
    check("looks like CLOCK_REALTIME nanoseconds (a wall-clock epoch)" in ep
          and "expected CLOCK_MONOTONIC nanoseconds" in ep, f"epoch: {ep!r}")
    # Times on input lines: once, however many lines.
    lines = "".join(f"{addr} {epoch // 1000}\n" for _ in range(50))
    many = lookup_warning(stdin=lines)
    check(many.count("warning") == 1 and "CLOCK_REALTIME microseconds" in many,
          f"stdin times: {many!r}")


h.main()
