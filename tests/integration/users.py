"""Two real unprivileged local users for the access and attack tests: `jsalice` (the victim)
and `jsbob` (the attacker), made with useradd on first use (with 0700 home directories, as a
distribution makes them), and ways to run commands, write files and call the client as them.
The tests run as root; a user's commands run through setpriv with that user's uid, gid and
supplementary groups, so the daemon sees exactly what it would see from a login of that user."""

import grp
import os
import pwd
import subprocess

ALICE = "jsalice"
BOB = "jsbob"


def ensure(name):
    """The user's pwd entry, creating the user (and a private home) if it does not exist."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", "--user-group", name],
                   check=True, capture_output=True, timeout=30)
    entry = pwd.getpwnam(name)
    os.chmod(entry.pw_dir, 0o700)
    return entry


def ensure_both():
    return ensure(ALICE), ensure(BOB)


def groups_of(name):
    entry = pwd.getpwnam(name)
    gids = {entry.pw_gid} | {g.gr_gid for g in grp.getgrall() if name in g.gr_mem}
    return sorted(gids)


def argv(name, args):
    """argv that runs `args` as the user: real and effective uid/gid and the user's groups."""
    entry = pwd.getpwnam(name)
    groups = ",".join(str(g) for g in groups_of(name))
    return ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
            f"--groups={groups}", "--"] + [str(a) for a in args]


def env(name):
    entry = pwd.getpwnam(name)
    out = {k: v for k, v in os.environ.items() if k not in ("JITSYM_SOCKET",)}
    out.update(HOME=entry.pw_dir, USER=name, LOGNAME=name)
    return out


def run(name, args, timeout=60, **kwargs):
    """Runs `args` as the user and waits; text output captured unless told otherwise."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    return subprocess.run(argv(name, args), env=env(name), timeout=timeout, **kwargs)


def spawn(name, args, **kwargs):
    """Starts `args` as the user (a Popen; the caller reaps it)."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen(argv(name, args), env=env(name), **kwargs)


def write(name, path, data):
    """The user writes `path` itself (and so owns it, as in /tmp)."""
    if isinstance(data, str):
        data = data.encode()
    subprocess.run(argv(name, ["sh", "-c", 'cat > "$1"', "_", path]), input=data, check=True,
                   timeout=60, env=env(name))


def client(name, jitsym, socket_path, *args, input=None, timeout=60):
    """The real jitsym client run as the user against `socket_path`."""
    cmd = [jitsym, "--socket", socket_path] + [str(a) for a in args]
    return run(name, cmd, timeout=timeout, input=input)


def share_like_tmp(h):
    """Makes the harness's run directory reachable and its watch directory writable by every
    user, as /tmp is, and returns the path of a copy of the client that every user may run."""
    import shutil
    os.chmod(h.root, 0o755)
    os.chmod(h.watch_dir, 0o1777)
    client_path = os.path.join(h.root, "jitsym")
    shutil.copy(h.jitsym, client_path)
    os.chmod(client_path, 0o755)
    return client_path
