#!/usr/bin/env python3
"""Install and package: `cmake --install` into a DESTDIR staging directory for the /usr prefix
puts every file where the units and the docs say; the installed daemon, started with the
installed config file, serves the installed client; the service's MemoryHigh=/MemoryMax= lie
above what the installed config's budgets add up to; the units pass `systemd-analyze verify`
(with the staged binary and man pages) and `systemd-analyze security` rates the service at most
3.0; `cpack -G DEB` builds a package with the same files, a conffile, and maintainer scripts whose
sysusers file creates the user and group the units name."""

import os
import re
import shutil
import subprocess

from harness import Daemon, Harness, check, wait_until

h = Harness(__doc__)
BUILD_DIR = os.environ.get("JITSYM_BUILD_DIR") or os.path.dirname(h.jitsymd)
CMAKE = os.environ.get("JITSYM_CMAKE") or shutil.which("cmake")
CPACK = os.environ.get("JITSYM_CPACK") or shutil.which("cpack")
STAGE = os.path.join(h.root, "stage")

EXPECTED = [
    "usr/sbin/jitsymd", "usr/bin/jitsym",
    "usr/lib/systemd/system/jitsymd.service", "usr/lib/systemd/system/jitsymd.socket",
    "usr/lib/sysusers.d/jitsymd.conf", "etc/jitsymd/jitsymd.conf",
    "usr/share/man/man8/jitsymd.8", "usr/share/man/man1/jitsym.1",
    "usr/share/doc/jitsym/README.md", "usr/share/doc/jitsym/operations.md",
    "usr/share/doc/jitsym/protocol.md",
]


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)


def unit(name):
    return open(os.path.join(STAGE, "usr/lib/systemd/system", name)).read()


@h.setup
def install_into_staging_directory():
    env = dict(os.environ, DESTDIR=STAGE)
    res = run([CMAKE, "--install", BUILD_DIR, "--prefix", "/usr"], env=env)
    check(res.returncode == 0, f"cmake --install failed: {res.stderr[-2000:]}")


@h.case
def files_are_where_the_units_and_docs_say():
    missing = [p for p in EXPECTED if not os.path.isfile(os.path.join(STAGE, p))]
    check(not missing, f"not installed: {missing}")
    for exe in ("usr/sbin/jitsymd", "usr/bin/jitsym"):
        check(os.access(os.path.join(STAGE, exe), os.X_OK), f"{exe} is not executable")
    service = unit("jitsymd.service")
    # The unit names the installed paths, for the prefix installed to.
    check("\nExecStart=/usr/sbin/jitsymd --config /etc/jitsymd/jitsymd.conf\n" in service,
          f"ExecStart: {re.findall(r'ExecStart=.*', service)}")
    check("file:/usr/share/doc/jitsym/operations.md" in service, "Documentation= path")
    sysusers = open(os.path.join(STAGE, "usr/lib/sysusers.d/jitsymd.conf")).read()
    socket_unit = unit("jitsymd.socket")
    user = re.search(r"^User=(\S+)", service, re.M).group(1)
    group = re.search(r"^SocketGroup=(\S+)", socket_unit, re.M).group(1)
    check(re.search(rf"^u {user} ", sysusers, re.M), f"sysusers does not create user {user}")
    check(re.search(rf"^g {group} ", sysusers, re.M), f"sysusers does not create group {group}")
    if shutil.which("man"):
        for page in ("usr/share/man/man8/jitsymd.8", "usr/share/man/man1/jitsym.1"):
            res = run(["man", "--warnings", "-l", os.path.join(STAGE, page)],
                      env=dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0"))
            # groff's complaints about the page; not man's own notes (e.g. about the locale).
            complaints = [l for l in res.stderr.splitlines()
                          if "warning" in l or "troff" in l or "error" in l]
            text = re.sub(".\x08", "", res.stdout)  # overstrike bold
            check(res.returncode == 0 and not complaints and "SYNOPSIS" in text,
                  f"{page}: status {res.returncode}, {complaints[:5]}")


@h.case
def installed_binaries_run_with_the_installed_config():
    jitsymd = os.path.join(STAGE, "usr/sbin/jitsymd")
    jitsym = os.path.join(STAGE, "usr/bin/jitsym")
    res = run([jitsymd, "--version"])
    check(res.returncode == 0 and res.stdout.startswith("jitsymd "), f"{res.stdout}{res.stderr}")
    config = os.path.join(STAGE, "etc/jitsymd/jitsymd.conf")
    res = run([jitsymd, "--config", config, "--print-config"])
    check(res.returncode == 0, f"the installed config file does not parse: {res.stderr}")
    d = Daemon(jitsymd, [h.watch_dir], h.socket_path, os.path.join(h.root, "installed.log"),
               ["--config", config])
    d.start()
    try:
        def ping():
            check(d.alive(), f"installed jitsymd exited: {d.log()[-500:]}")
            return run([jitsym, "--socket", h.socket_path, "ping"]).returncode == 0
        wait_until(ping, 20, "the installed jitsymd to answer the installed jitsym")
        res = run([jitsym, "--socket", h.socket_path, "version"])
        check(res.returncode == 0 and res.stdout.count("0.") >= 2, res.stdout + res.stderr)
    finally:
        check(d.stop() == 0, "installed jitsymd did not exit cleanly on SIGTERM")


def size_bytes(text):
    """"8G", "512M", "1024" (bytes) as systemd and jitsymd spell sizes (powers of 1024)."""
    m = re.fullmatch(r"(\d+)([KMGT]?)", text.strip())
    check(m, f"not a size: {text!r}")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2)]


def budget_bytes(settings):
    """What jitsymd's budgets let it hold, by the sum operations.md ("Memory bounds") gives: the
    index at about twice the bytes read for it, the ingest arrays kept for reuse, native debug
    information (in the parse workers, all together), the 8 parse workers themselves, requests
    in flight, a full answer buffer per connection, the process itself."""
    mib = 1 << 20
    return (2 * size_bytes(settings["limit-total-bytes"]) + 256 * mib +
            int(settings["debug-cache-mb"]) * mib + 8 * 8 * mib +
            size_bytes(settings["request-memory"]) +
            int(settings["max-connections"]) * mib + 128 * mib)


@h.case
def unit_memory_bounds_exceed_what_the_shipped_budgets_add_up_to():
    service = unit("jitsymd.service")
    bounds = dict(re.findall(r"^(MemoryHigh|MemoryMax)=(\S+)$", service, re.M))
    check(set(bounds) == {"MemoryHigh", "MemoryMax"}, f"memory bounds in the unit: {bounds}")
    high, top = size_bytes(bounds["MemoryHigh"]), size_bytes(bounds["MemoryMax"])
    config = os.path.join(STAGE, "etc/jitsymd/jitsymd.conf")
    res = run([os.path.join(STAGE, "usr/sbin/jitsymd"), "--config", config, "--print-config"])
    check(res.returncode == 0, res.stderr)
    settings = dict(line.split(" = ", 1) for line in res.stdout.splitlines()
                    if " = " in line and not line.startswith("#"))
    budgets = budget_bytes(settings)
    check(budgets < high < top, f"budgets {budgets >> 20} MiB, MemoryHigh {high >> 20} MiB, "
          f"MemoryMax {top >> 20} MiB")
    # The byte limits come from the file, not from this host's RAM: the sum holds on any host.
    res = run([os.path.join(STAGE, "usr/sbin/jitsymd"), "--config", os.devnull, "--print-config"])
    defaults = dict(line.split(" = ", 1) for line in res.stdout.splitlines()
                    if " = " in line and not line.startswith("#"))
    text = open(config).read()
    for name in ("limit-total-bytes", "limit-user-bytes"):
        check(re.search(rf"^{name} = ", text, re.M), f"the shipped config does not set {name}")
    check(size_bytes(settings["limit-user-bytes"]) <= size_bytes(settings["limit-total-bytes"]),
          f"{settings['limit-user-bytes']} per user > {settings['limit-total-bytes']} in total")
    print(f"  budgets {budgets >> 20} MiB < MemoryHigh {high >> 20} MiB < MemoryMax "
          f"{top >> 20} MiB (host defaults: limit-total-bytes {defaults['limit-total-bytes']})")


@h.case
def units_verify_clean_and_service_exposure_at_most_3():
    if shutil.which("systemd-analyze") is None:
        print("  (systemd-analyze missing: skipped)")
        return
    # verify checks that ExecStart= exists on this host: point it at the staged binary, and
    # MANPATH at the staged man pages for Documentation=man:.
    units = os.path.join(h.root, "units")
    os.mkdir(units)
    with open(os.path.join(units, "jitsymd.service"), "w") as f:
        f.write(unit("jitsymd.service").replace("ExecStart=/usr/sbin/jitsymd",
                                                f"ExecStart={STAGE}/usr/sbin/jitsymd"))
    shutil.copy(os.path.join(STAGE, "usr/lib/systemd/system/jitsymd.socket"), units)
    env = dict(os.environ, MANPATH=os.path.join(STAGE, "usr/share/man"))
    res = run(["systemd-analyze", "verify", "jitsymd.service", "jitsymd.socket"], cwd=units,
              env=env)
    messages = [l for l in (res.stdout + res.stderr).splitlines()
                if "jitsymd" in l or "Documentation" in l]
    check(res.returncode == 0 and not messages,
          f"systemd-analyze verify (status {res.returncode}): {res.stdout}{res.stderr}")
    res = run(["systemd-analyze", "security", "--offline=true", "jitsymd.service"], cwd=units,
              env=env)
    m = re.search(r"Overall exposure level for jitsymd\.service: ([0-9.]+)", res.stdout)
    check(m, f"no exposure level in: {res.stdout[-500:]}{res.stderr[-500:]}")
    check(float(m.group(1)) <= 3.0, f"exposure {m.group(1)} > 3.0")
    print(f"  exposure level {m.group(1)}")


@h.case
def deb_package_has_the_files_and_creates_the_user_and_group():
    if CPACK is None or shutil.which("dpkg-deb") is None:
        print("  (cpack or dpkg-deb missing: skipped)")
        return
    out = os.path.join(h.root, "pkg")
    res = run([CPACK, "-G", "DEB", "-B", out], cwd=BUILD_DIR)
    check(res.returncode == 0, f"cpack failed: {res.stdout[-1500:]}{res.stderr[-1500:]}")
    debs = [f for f in os.listdir(out) if f.endswith(".deb")]
    check(len(debs) == 1, f"cpack made {debs}")
    deb = os.path.join(out, debs[0])
    listing = run(["dpkg-deb", "-c", deb]).stdout
    missing = [p for p in EXPECTED if f" ./{p}\n" not in listing + "\n"]
    check(not missing, f"not in the package: {missing}")
    control = os.path.join(h.root, "control")
    check(run(["dpkg-deb", "-e", deb, control]).returncode == 0, "dpkg-deb -e failed")
    conffiles = open(os.path.join(control, "conffiles")).read().split()
    check(conffiles == ["/etc/jitsymd/jitsymd.conf"], f"conffiles: {conffiles}")
    postinst = open(os.path.join(control, "postinst")).read()
    check("systemd-sysusers /usr/lib/sysusers.d/jitsymd.conf" in postinst, postinst)
    res = run(["sh", "-n", os.path.join(control, "postinst")])
    check(res.returncode == 0, f"postinst: {res.stderr}")
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    check("libsystemd0" in depends, f"Depends: {depends}")
    # What the postinst runs, on an unpacked copy: the user and group appear.
    root = os.path.join(h.root, "unpacked")
    check(run(["dpkg-deb", "-x", deb, root]).returncode == 0, "dpkg-deb -x failed")
    if shutil.which("systemd-sysusers"):
        res = run(["systemd-sysusers", f"--root={root}",
                   os.path.join(root, "usr/lib/sysusers.d/jitsymd.conf")])
        check(res.returncode == 0, f"systemd-sysusers: {res.stderr}")
        passwd = open(os.path.join(root, "etc/passwd")).read()
        group = open(os.path.join(root, "etc/group")).read()
        check(re.search(r"^jitsymd:", passwd, re.M), f"no user jitsymd: {passwd}")
        check(re.search(r"^jitsym:", group, re.M), f"no group jitsym: {group}")


h.main()
