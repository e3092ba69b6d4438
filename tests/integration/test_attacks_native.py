#!/usr/bin/env python3
"""Crafted ELF files of one local user (`jsbob`, files in his own home) against native
symbolization, while another (`jsalice`) looks up her own native process:

- one 1 MiB string named by 4,200 symbols (their names were copied per symbol: 4.2 GB, OOM):
  the daemon stores it once and answers;
- 4,200 symbols naming suffixes of that string: the names stored stay within the table's budget;
- demangler bombs only the C++ runtime's demangler reads (GCC's "_ZGTt" transaction clones,
  about 8 ms a symbol to print): two files of 6,000 held both query threads for about a minute;
  a module's demangling is now bounded by what it prints, and bob's first lookup of each file
  returns in a bounded time while alice is answered;
- DWARF whose subprograms' DW_AT_sibling is their own first child, 40 deep (libdw's walk visits
  level k 2^k times: OOM-killed in 12 s): read once, in linear time;
- DWARF names whose strings do not end inside .debug_str (libdw read past the section): left
  out, logged, the symbol table still names the function;
- bob's library whose .gnu_debuglink (no build id, no CRC) names a symlink into alice's 0700
  home: her binary's DWARF was read for him; now a debug file counts only when root's or the
  binary owner's;
- bob maps a file of his with the inode number of alice's unreadable program, deletes it and
  points its path at hers: pid lookups trusted the inode number and answered him from her
  DWARF; now the device must match too (or map_files show the very file);
- bob's file claiming libc's build id: alice's and root's `lookup --build-id` answered from it;
  now a module answers a build id only for its owner, or for anyone when it is root's.

Each case fails against the daemon before the defence."""

import json
import os
import subprocess
import threading
import time

import elf_craft
import users
from harness import asan_build, Harness, check, hexaddr, wait_until

h = Harness(__doc__)
S = {}
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def bob_lib(name, functions, long_names=()):
    """A library built by root, then given to bob in his home (0700): his file, as if he had
    built it."""
    path = os.path.join(S["bob_home"], name)
    addrs = elf_craft.library(path, functions, long_names)
    os.chown(path, S["bob"].pw_uid, S["bob"].pw_gid)
    return path, addrs


def lookup_as(user, *args, timeout=300):
    res = users.client(user, S["client"], h.socket_path, "--timeout", str(timeout), "lookup",
                       "--json", *[str(a) for a in args], timeout=timeout + 30)
    check(h.daemon.alive(), f"the daemon died: {h.log_tail()}")
    return res


def alice_lookup():
    t0 = time.monotonic()
    res = lookup_as(users.ALICE, "--pid", S["alice_pid"], hexaddr(S["malloc"]), timeout=60)
    elapsed = time.monotonic() - t0
    check(res.returncode == 0, f"alice's lookup: {res.returncode} {res.stderr}")
    name = json.loads(res.stdout.splitlines()[0]).get("name", "")
    check("malloc" in name, f"alice's libc address answered {name!r}")
    return elapsed


@h.setup
def setup():
    S["alice"], S["bob"] = users.ensure_both()
    S["bob_home"] = S["bob"].pw_dir
    os.chmod(h.root, 0o755)
    S["client"] = os.path.join(h.root, "jitsym")
    subprocess.run(["cp", h.jitsym, S["client"]], check=True)
    os.chmod(S["client"], 0o755)
    h.start_daemon()
    # Alice's own native process, and where libc's malloc is in it.
    S["alice_pid"] = h.sleep_as(users.ALICE)
    base = None
    for line in open(f"/proc/{S['alice_pid']}/maps"):
        parts = line.split()
        if len(parts) >= 6 and parts[5].endswith("libc.so.6") and int(parts[2], 16) == 0:
            base = int(parts[0].split("-")[0], 16)
            break
    nm = subprocess.run(["nm", "-D", "--defined-only", LIBC], capture_output=True, text=True,
                        check=True).stdout
    malloc = next(int(l.split()[0], 16) for l in nm.splitlines() if l.split()[-1].split("@")[0] == "malloc")
    S["malloc"] = base + malloc
    alice_lookup()  # libc's module opened once, before any attack


@h.case
def one_string_named_by_thousands_of_symbols_is_stored_once():
    long_name = "L" * (1 << 20)
    functions = [f"f{i}" for i in range(4200)]
    path, addrs = bob_lib("same.so", functions, [long_name])
    changed = elf_craft.point_names_at(path, lambda i, names: names[long_name])
    check(changed == 4201, f"rewrote {changed} symbols")
    before = h.daemon_kb("VmRSS")
    res = lookup_as(users.BOB, "--image", path, hexaddr(addrs["f0"]), hexaddr(addrs["f4199"]))
    grew = (h.daemon_kb("VmHWM") - before) >> 10
    check(res.returncode == 0, f"bob's lookup: {res.returncode} {res.stderr[:300]}")
    got = [json.loads(l) for l in res.stdout.splitlines()]
    check(all(g.get("name") == long_name for g in got), "bob's symbols are not named as written")
    print(f"  4,200 symbols naming one 1 MiB string: daemon peak RSS +{grew} MiB")
    limit = 150 * (4 if asan_build(h.jitsymd) else 1)
    check(grew < limit, f"the daemon grew by {grew} MiB (limit {limit})")
    alice_lookup()


@h.case
def suffixes_of_one_string_stay_within_the_tables_budget():
    long_name = "M" * (1 << 20)
    functions = [f"g{i}" for i in range(4200)]
    path, addrs = bob_lib("suffixes.so", functions, [long_name])
    elf_craft.point_names_at(path, lambda i, names: names[long_name] + 128 * i)
    before = h.daemon_kb("VmRSS")
    res = lookup_as(users.BOB, "--image", path, hexaddr(addrs["g0"]))
    grew = (h.daemon_kb("VmHWM") - before) >> 10
    check(res.returncode == 0, f"bob's lookup: {res.returncode} {res.stderr[:300]}")
    print(f"  4,200 symbols naming suffixes of one 1 MiB string: daemon peak RSS +{grew} MiB")
    # The names stored: at most 32 MiB + 10 times the 1 MiB string table (and the string's
    # growth by doubling).
    limit = 150 * (4 if asan_build(h.jitsymd) else 1)
    check(grew < limit, f"the daemon grew by {grew} MiB (limit {limit})")
    check("the rest of this symbol table is not read" in h.daemon.log(),
          "no log line says where the symbol table stopped")
    alice_lookup()


@h.case
def demangler_bombs_cost_their_owner_a_bounded_time():
    # Names are demangled when an answer needs them: bob asks for every bomb of his files.
    files = []
    for k in range(2):
        names = [elf_craft.doubling(40, "_ZGTt", f"b{k}x{i}") for i in range(6000)]
        path, addrs = bob_lib(f"bombs{k}.so", names)
        files.append((path, [hexaddr(addrs[n]) for n in names], os.path.getsize(path)))
    took = {}

    def bob(path, addrs):
        t0 = time.monotonic()
        res = lookup_as(users.BOB, "--image", path, *addrs, timeout=300)
        took[path] = (time.monotonic() - t0, res)

    threads = [threading.Thread(target=bob, args=(p, a)) for p, a, _ in files]
    for t in threads:
        t.start()
    alice = []
    while any(t.is_alive() for t in threads) or len(alice) < 20:
        alice.append(alice_lookup())
        time.sleep(0.02)
    for t in threads:
        t.join()
    busy = 0
    for path, (seconds, res) in took.items():
        check(res.returncode == 0, f"bob's lookup: {res.returncode} {res.stderr[:300]}")
        got = json.loads(res.stdout.splitlines()[-1])
        if got.get("reason") == "native_failed" and "busy" in got.get("detail", ""):
            # His files may hold fewer query threads than there are (threads - 1): a lookup of
            # his beyond that may be refused at once, and is answered when asked again.
            busy += 1
            addrs = next(a for p, a, _ in files if p == path)
            res = lookup_as(users.BOB, "--image", path, *addrs, timeout=300)
            got = json.loads(res.stdout.splitlines()[-1])
        name = got.get("name", "")
        check(name.startswith("_ZGTt"), f"a bomb past the budget: {got!r}"[:300])
    worst = max(s for s, _ in took.values())
    alice.sort()
    print(f"  bob's two files ({files[0][2] >> 20} MiB, 6,000 bombs each): first lookups "
          f"{', '.join(f'{s:.2f}' for s, _ in took.values())} s; alice's lookups meanwhile: "
          f"median {alice[len(alice) // 2] * 1000:.0f} ms, max {alice[-1] * 1000:.0f} ms "
          f"over {len(alice)}; {busy} of his refused as busy and asked again")
    limit = 10 * (4 if asan_build(h.jitsymd) else 1)
    check(worst < limit, f"bob's first lookup took {worst:.1f} s")
    check("later names of this file stay mangled" in h.daemon.log(),
          "no log line says the demangling budget ran out")
    check(alice[-1] < limit, f"alice waited {alice[-1]:.1f} s")


@h.case
def compressed_debug_sections_claiming_gibibytes_are_not_inflated():
    """Four 1 GiB debug sections in a 4 MB file: libdw would inflate them all when it opens the
    DWARF. Their claims are read from their headers first, and the DWARF is left unread."""
    path = os.path.join(S["bob_home"], "bomb")
    main = elf_craft.compression_bomb(
        path, [".debug_str", ".debug_line", ".debug_abbrev", ".debug_aranges"], 1024)
    os.chown(path, S["bob"].pw_uid, S["bob"].pw_gid)
    before = h.daemon_kb("VmRSS")
    res = lookup_as(users.BOB, "--image", path, hexaddr(main), "0x10")
    grew = (h.daemon_kb("VmHWM") - before) >> 10
    check(res.returncode == 0, f"bob's lookup: {res.returncode} {res.stderr[:300]}")
    got = [json.loads(l) for l in res.stdout.splitlines()]
    check(got[0].get("name") == "main", f"the symbol table no longer answers: {got[0]}")
    detail = got[1].get("detail", "")
    print(f"  {os.path.getsize(path) >> 20} MiB file claiming 4 x 1 GiB: daemon peak RSS "
          f"+{grew} MiB; {detail}")
    limit = 150 * (4 if asan_build(h.jitsymd) else 1)
    check(grew < limit, f"the daemon grew by {grew} MiB (limit {limit})")
    check("DWARF not read: compressed debug sections claim 4096 MiB" in detail,
          f"the miss does not say why the DWARF was left: {got[1]}")
    alice_lookup()


@h.case
def sibling_loops_forty_deep_are_walked_once():
    """40 nested subprograms, each DW_AT_sibling pointing at its own first child: the walk
    follows no sibling into a subtree it is about to enter, so each DIE is read once."""
    path = os.path.join(S["bob_home"], "siblings.so")
    f = elf_craft.dwarf_attack(path, "sibling", 40)
    os.chown(path, S["bob"].pw_uid, S["bob"].pw_gid)
    before = h.daemon_kb("VmRSS")
    t0 = time.monotonic()
    res = lookup_as(users.BOB, "--image", path, hexaddr(f + 39), timeout=60)
    took = time.monotonic() - t0
    grew = (h.daemon_kb("VmHWM") - before) >> 10
    check(res.returncode == 0, f"bob's lookup: {res.returncode} {res.stderr[:300]}")
    got = json.loads(res.stdout.splitlines()[0])
    frames = [fr.get("name") for fr in got.get("frames", [])]
    print(f"  {os.path.getsize(path) >> 10} KiB file: answered in {took:.2f} s, daemon peak RSS "
          f"+{grew} MiB: {got.get('name')} {frames}")
    check(got.get("found") and got.get("name") == "f", f"answer {got}")
    check(took < 10, f"bob's lookup took {took:.1f} s")
    check(grew < 100 * (4 if asan_build(h.jitsymd) else 1), f"the daemon grew by {grew} MiB")
    alice_lookup()


@h.case
def strings_that_do_not_end_in_their_section_are_left_out():
    """Names in .debug_str with no NUL before the section's end, and one past its end: never read
    past the section; the names are left out (the log says where), the rest answers."""
    path = os.path.join(S["bob_home"], "strings.so")
    f = elf_craft.dwarf_attack(path, "strings")
    os.chown(path, S["bob"].pw_uid, S["bob"].pw_gid)
    res = lookup_as(users.BOB, "--image", path, hexaddr(f), hexaddr(f + 0x10), hexaddr(f + 0x20),
                    timeout=60)
    check(res.returncode == 0, f"bob's lookup: {res.returncode} {res.stderr[:300]}")
    got = [json.loads(l) for l in res.stdout.splitlines()]
    inner = [a.get("frames", [{}])[0].get("name") for a in got]
    print(f"  names: {[a.get('name') for a in got]}, DWARF's: {inner}")
    check(all(a.get("found") and a.get("name") == "f" for a in got), f"answers {got}")
    logged = [l for l in h.daemon.log_lines()
              if path in l and "string runs past its section's end" in l]
    check(len(logged) == 1, f"the unreadable names are not logged once: {logged}")
    alice_lookup()


@h.case
def a_debug_link_into_another_users_home_is_not_followed():
    """bob's library names, in .gnu_debuglink (no CRC: any file matches), `secret.debug` beside
    it: a symlink to alice's program with DWARF, in her 0700 home. The daemon reads as root; her
    file is not read for him."""
    alice_dir = os.path.join(S["alice"].pw_dir, "private")
    os.makedirs(alice_dir, exist_ok=True)
    src = os.path.join(alice_dir, "secret.c")
    with open(src, "w") as f:
        f.write("int alice_secret_function(int x) { return x * 3 + 1; }\n")
    secret = os.path.join(alice_dir, "secret.so")
    subprocess.run(["gcc", "-g", "-O0", "-shared", "-fPIC", "-o", secret, src], check=True)
    for p in (alice_dir, src, secret):
        os.chown(p, S["alice"].pw_uid, S["alice"].pw_gid)
    os.chmod(alice_dir, 0o700)
    nm = subprocess.run(["nm", secret], capture_output=True, text=True, check=True).stdout
    addr = next(int(l.split()[0], 16) for l in nm.splitlines()
                if l.split()[-1] == "alice_secret_function")
    # bob's library: no DWARF, no build id, a debug link without a CRC, text where hers is.
    lib = os.path.join(S["bob_home"], "linked.so")
    asm = lib + ".s"
    with open(asm, "w") as f:
        f.write(".text\n.globl bob_function\n.type bob_function, @function\nbob_function:\n" +
                "  nop\n" * 255 + "  ret\n.size bob_function, 256\n")
    subprocess.run(["gcc", "-shared", "-nostdlib", "-Wl,--build-id=none",
                    f"-Wl,--section-start=.text={addr:#x}", "-o", lib, asm], check=True)
    os.unlink(asm)
    link = lib + ".link"
    with open(link, "wb") as f:
        f.write(b"secret.debug\0\0\0\0")  # the name, NUL, padding: no room for a CRC
    subprocess.run(["objcopy", "--add-section", f".gnu_debuglink={link}", lib], check=True)
    os.unlink(link)
    target = os.path.join(S["bob_home"], "secret.debug")
    if os.path.lexists(target):
        os.unlink(target)
    os.symlink(secret, target)
    for p in (lib,):
        os.chown(p, S["bob"].pw_uid, S["bob"].pw_gid)
    os.lchown(os.path.join(S["bob_home"], "secret.debug"), S["bob"].pw_uid, S["bob"].pw_gid)
    res = lookup_as(users.BOB, "--image", lib, hexaddr(addr + 4), timeout=60)
    check(res.returncode == 0, f"bob's lookup: {res.returncode} {res.stderr[:300]}")
    text = res.stdout
    got = json.loads(text.splitlines()[0])
    print(f"  bob's answer: {got.get('name')} {got.get('file', '')}")
    check("alice_secret" not in text and "secret.c" not in text,
          f"alice's DWARF answered bob: {text[:300]}")
    check(got.get("name") == "bob_function", f"bob's own symbol does not answer: {got}")
    logged = [l for l in h.daemon.log_lines() if "secret.debug" in l and "not read" in l]
    check(logged, "the refused debug file is not logged")
    alice_lookup()


@h.case
def a_mapped_file_with_the_inode_number_of_anothers_is_not_hers():
    """alice's program with DWARF on a tmpfs of hers (0700); on a tmpfs of bob's, bob makes
    files until one has her file's inode number, maps it executable in a process of his, deletes
    it and puts a symlink to her program at its path. Its maps then name a path that resolves to
    a file with the mapped inode number: hers, on another device."""
    base = os.path.join(h.root, "inodes")
    a_dir, b_dir = os.path.join(base, "alice"), os.path.join(base, "bob")
    for d, who in ((a_dir, S["alice"]), (b_dir, S["bob"])):
        os.makedirs(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=64m,mode=0700,uid={who.pw_uid}",
                        "tmpfs", d], check=True)
    os.chmod(base, 0o755)
    try:
        src = os.path.join(a_dir, "secret.c")
        with open(src, "w") as f:
            f.write("int alice_inode_secret(int x) { return x * 5 + 2; }\n")
        secret = os.path.join(a_dir, "secret.so")
        subprocess.run(["gcc", "-g", "-O0", "-shared", "-fPIC", "-o", secret, src], check=True)
        for p in (src, secret):
            os.chown(p, S["alice"].pw_uid, S["alice"].pw_gid)
        ino = os.stat(secret).st_ino
        nm = subprocess.run(["nm", secret], capture_output=True, text=True, check=True).stdout
        fn = next(int(l.split()[0], 16) for l in nm.splitlines()
                  if l.split()[-1] == "alice_inode_secret")
        # bob's side, as bob: files until one has her inode number, mapped r-x at offset 0.
        script = (
            "import mmap, os, sys, time\n"
            f"d, want = {b_dir!r}, {ino}\n"
            "for i in range(100000):\n"
            "    p = os.path.join(d, f'f{i}')\n"
            "    with open(p, 'wb') as f: f.write(b'\\0' * 65536)\n"
            "    st = os.stat(p)\n"
            "    if st.st_ino == want: break\n"
            "    os.unlink(p)\n"
            "    if st.st_ino > want: sys.exit(3)\n"
            "fd = os.open(p, os.O_RDONLY)\n"
            "m = mmap.mmap(fd, 65536, prot=mmap.PROT_READ | mmap.PROT_EXEC)\n"
            "os.unlink(p)\n"
            f"os.symlink({secret!r}, p)\n"
            "print(p, flush=True)\n"
            "time.sleep(600)\n")
        proc = h.spawn(users.argv(users.BOB, ["python3", "-c", script]), env=users.env(users.BOB),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        path = proc.stdout.readline().strip()
        check(path, f"bob found no file with inode {ino} (exit {proc.poll()})")
        start = None
        for line in open(f"/proc/{proc.pid}/maps"):
            if path in line:
                start = int(line.split("-")[0], 16)
        check(start is not None, f"{path} is not in bob's maps")
        res = lookup_as(users.BOB, "--pid", proc.pid, hexaddr(start + fn + 4), timeout=60)
        text = res.stdout
        print(f"  inode {ino}: bob's answer: {text.strip()[:160]}")
        check("alice_inode_secret" not in text and "secret.c" not in text,
              f"bob was answered from alice's file: {text[:300]}")
        # What bob mapped is read (through map_files: his deleted file of zeros), not hers.
        got = json.loads(text.splitlines()[0]) if text else {}
        check(res.returncode in (0, 3) and not got.get("found"), f"answer {got} {res.stderr[:200]}")
        proc.kill()
        proc.wait()
    finally:
        for d in (a_dir, b_dir):
            subprocess.run(["umount", "-l", d])


@h.case
def a_file_claiming_libcs_build_id_answers_only_its_owner():
    """bob writes, world-readable, a library with libc's build id whose one function sits at
    malloc's address, and looks it up (the daemon now knows a file with that id). alice's and
    root's `lookup --build-id` of libc still answer malloc; bob's own answers him."""
    out = subprocess.run(["readelf", "-n", LIBC], capture_output=True, text=True,
                         check=True).stdout
    build_id = next(l.split()[-1] for l in out.splitlines() if "Build ID" in l)
    nm = subprocess.run(["nm", "-D", "--defined-only", LIBC], capture_output=True, text=True,
                        check=True).stdout
    malloc = next(int(l.split()[0], 16) for l in nm.splitlines()
                  if l.split()[-1].split("@")[0] == "malloc")
    d = os.path.join(h.root, "bob-public")
    os.makedirs(d)
    fake = os.path.join(d, "libfake.so")
    asm = fake + ".s"
    with open(asm, "w") as f:
        f.write(".text\n.globl FAKE_bob_malloc\n.type FAKE_bob_malloc, @function\n"
                "FAKE_bob_malloc:\n" + "  nop\n" * 63 + "  ret\n.size FAKE_bob_malloc, 64\n")
    subprocess.run(["gcc", "-shared", "-nostdlib", f"-Wl,--build-id=0x{build_id}",
                    f"-Wl,--section-start=.text={malloc:#x}", "-o", fake, asm], check=True)
    os.unlink(asm)
    for p in (d, fake):
        os.chown(p, S["bob"].pw_uid, S["bob"].pw_gid)
        os.chmod(p, 0o755)
    res = lookup_as(users.BOB, "--image", fake, hexaddr(malloc), timeout=60)
    check("FAKE_bob_malloc" in res.stdout, f"bob's file does not answer him: {res.stdout[:300]}")
    # libc's module known from a path too (alice's process maps it).
    alice_lookup()
    for who in (users.ALICE, None):
        args = ["--build-id", build_id, hexaddr(malloc)]
        if who is None:
            res = h.client("lookup", "--json", *args)
        else:
            res = lookup_as(who, *args, timeout=60)
        got = json.loads(res.stdout.splitlines()[0]) if res.returncode == 0 else {}
        print(f"  {who or 'root'}: lookup --build-id {build_id[:8]}… {hexaddr(malloc)}: "
              f"{got.get('name')} ({got.get('image')})")
        check("FAKE" not in res.stdout and "malloc" in got.get("name", ""),
              f"{who or 'root'}: {res.returncode} {res.stdout[:300]} {res.stderr[:300]}")
    res = lookup_as(users.BOB, "--build-id", build_id, hexaddr(malloc), timeout=60)
    print(f"  bob: {res.stdout.strip()[:120]}")


if __name__ == "__main__":
    h.main()
