"""What a process-sandbox agent sees of the machine: bubblewrap builds its view.

An agent runs under ``bwrap`` (bubblewrap, the tool Flatpak confines applications with)
in new mount, PID, network, IPC and UTS namespaces. Its file system is built from
nothing: its own folder at ``/agent`` and the SDK at ``/opt/arena/sdk``, both
read-only, the runtime read-only (``/usr`` and its links, the few files of ``/etc``
that the dynamic loader and Debian's alternatives need, and the Python that runs it
when it lives outside ``/usr``), a private ``/tmp`` (a tmpfs of ``TMPFS_MB``), a fresh
``/proc`` that shows its own processes only and a minimal ``/dev``. Arena's data, the
checkout, ``/home``, ``/root``, ``/srv`` and other agents' folders are not there at all;
any of them that lies inside a runtime folder is covered by an empty tmpfs.

Two ways to get there, one command line:

- **as root** (CI, a dedicated worker): ``bwrap`` makes the namespaces and mounts with
  root's rights, then ``setpriv`` (util-linux) switches to the agent's own user id with
  no capability left, no supplementary group and ``no_new_privs``, and runs the agent;
- **without root**, where the kernel lets users make user namespaces: ``bwrap`` makes a
  user namespace first (the agent keeps the caller's user id, with no capability), and
  forbids the agent to make further ones.

Where neither works (no ``bwrap``, or no root and no user namespaces), ``probe`` says
why; the sandbox then runs agents unconfined and the platform refuses untrusted uploads
unless its operator accepts that knowingly (``docs/sandboxes.md``).

The last step before the agent is ``/bin/sh``, which puts the agent's streams back (the
jail keeps them away from bubblewrap's own processes), sends one byte on the jail's
``READY_FD`` and closes it: the referee learns from it (``SCM_CREDENTIALS``) that the
sandbox is set up and the agent's process id as the host sees it, and nothing the agent
does can forge either (it runs after that byte, without the descriptor).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from sandboxes import jail
from sandboxes.base import TMPFS_MB

#: Inside the sandbox: the agent's files, the SDK, the writable scratch folder.
AGENT_DIR = "/agent"
SDK_DIR = "/opt/arena/sdk"
SCRATCH_DIR = "/tmp"
#: The last step before the agent: puts its streams back where the jail set them aside,
#: sends the byte, drops the descriptor and becomes the agent (its arguments follow ``$0``).
READY_SCRIPT = (
    f"exec 0<&{jail.AGENT_STDIN_FD} 1>&{jail.AGENT_STDOUT_FD} "
    f"{jail.AGENT_STDIN_FD}<&- {jail.AGENT_STDOUT_FD}>&- "
    f"&& printf . >&{jail.READY_FD} || exit 125; exec {jail.READY_FD}>&-; "
    'exec "$@"'
)
#: What the dynamic loader and Debian's alternatives (NumPy's BLAS) read in ``/etc``.
RUNTIME_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
#: The top-level folders of a runtime: bound read-only, or recreated as the same links.
RUNTIME_TOP = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
SETPRIV = "/usr/bin/setpriv"
SHELL = "/bin/sh"
#: The hostname the agent sees (not the host's).
HOSTNAME = "arena-agent"


@dataclasses.dataclass(frozen=True)
class Confinement:
    """Whether this machine can confine agents, and how."""

    #: The ``bwrap`` program, or None when agents cannot be confined here.
    bwrap: str | None
    #: Root switches to the agent's user id inside; otherwise a user namespace is made.
    as_root: bool
    #: Why agents are not confined ("" when they are), with what to do about it.
    reason: str = ""

    @property
    def confined(self) -> bool:
        return self.bwrap is not None


@dataclasses.dataclass(frozen=True)
class View:
    """The parts of an agent's view that do not change from one agent to the next."""

    #: The interpreter of Python agents, as the agent sees it (resolved: no venv links).
    python: str
    #: Host folders bound read-only at the same path (the runtime).
    runtime: tuple[str, ...]
    #: Host folders inside the runtime covered with an empty tmpfs.
    hidden: tuple[str, ...]


def view(python: str, *, hidden: Iterable[Path] = ()) -> View:
    """The runtime for agents run by ``python``: ``/usr`` and its links, plus the
    interpreter's own installation if it lies outside them (a pyenv under ``/root``: that
    installation only, never its parents); ``hidden`` folders are covered where a bound
    folder holds them (Arena's data or checkout under ``/usr/local``, say)."""
    executable = Path(os.path.realpath(python))
    runtime = [f"/{name}" for name in RUNTIME_TOP if _is_real_dir(Path("/", name))]
    if not _inside(executable, runtime):
        # <prefix>/bin/python3.x: the prefix holds its standard library and shared libraries.
        runtime.append(str(executable.parent.parent))
    # Only folders that exist: bwrap cannot make a mount point in a read-only folder.
    covered = sorted(
        {
            os.path.realpath(path)
            for path in hidden
            if os.path.isdir(path) and _inside(Path(os.path.realpath(path)), runtime)
        }
    )
    return View(python=str(executable), runtime=tuple(runtime), hidden=tuple(covered))


def _is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _inside(path: Path, folders: Sequence[str]) -> bool:
    return any(path == Path(folder) or Path(folder) in path.parents for folder in folders)


def _dirs(path: str, made: set[str]) -> list[str]:
    """``--dir`` for ``path``'s parents not made yet, world-traversable (bwrap would make
    them 0700, which the agent's user could not traverse)."""
    arguments: list[str] = []
    for parent in reversed(Path(path).parents):
        name = str(parent)
        if name != "/" and name not in made:
            made.add(name)
            arguments += ["--perms", "0755", "--dir", name]
    return arguments


def bwrap_command(
    confinement: Confinement,
    view: View,
    *,
    agent_dir: Path,
    sdk_dir: Path,
    uid: int | None,
    command: Sequence[str],
) -> list[str]:
    """The command line that runs ``command`` (paths as the agent sees them) confined,
    from the agent's files in ``agent_dir`` and the SDK in ``sdk_dir``; ``uid`` is the
    agent's own user id when root runs it."""
    assert confinement.bwrap is not None
    made: set[str] = set()
    arguments = [
        confinement.bwrap,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        HOSTNAME,
    ]
    if not confinement.as_root:
        arguments += ["--unshare-user", "--disable-userns"]
    for name in RUNTIME_TOP:
        top = Path("/", name)
        if top.is_symlink():
            arguments += ["--symlink", os.readlink(top), str(top)]
    for folder in view.runtime:
        arguments += [*_dirs(folder, made), "--ro-bind", folder, folder]
        made.add(folder)
    arguments += ["--perms", "0755", "--dir", "/etc"]
    made.add("/etc")
    for name in RUNTIME_ETC:
        arguments += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for folder in view.hidden:
        arguments += ["--tmpfs", folder]
    arguments += [*_dirs(SDK_DIR, made), "--ro-bind", str(sdk_dir), SDK_DIR]
    arguments += ["--ro-bind", str(agent_dir), AGENT_DIR]
    arguments += ["--size", str(TMPFS_MB * 1024 * 1024), "--perms", "01777"]
    arguments += ["--tmpfs", SCRATCH_DIR, "--proc", "/proc", "--dev", "/dev"]
    # The folders made above (/, /etc, /opt..., and /dev with its /dev/shm) are tmpfs of
    # bubblewrap's, which a user namespace's agent would own: read-only, once everything
    # is in place (devices stay usable: a read-only mount does not stop writes to them).
    arguments += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", AGENT_DIR, "--"]
    if confinement.as_root:
        assert uid is not None
        arguments += [
            SETPRIV,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    return [*arguments, SHELL, "-c", READY_SCRIPT, "arena-agent", *command]


@functools.cache
def probe() -> Confinement:
    """Whether agents can be confined here: a trial agent (``/bin/true``) is run exactly
    as a real one would be, once per process."""
    as_root = os.geteuid() == 0
    bwrap = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin:/usr/sbin")
    if bwrap is None:
        return Confinement(
            None,
            as_root,
            "bubblewrap is not installed, so agents could read every world-readable file "
            "of this machine: install it (Debian: apt-get install bubblewrap)",
        )
    if as_root and not os.access(SETPRIV, os.X_OK):
        return Confinement(
            None, as_root, f"{SETPRIV} (util-linux) is missing: agents cannot drop root"
        )
    candidate = Confinement(bwrap, as_root)
    with tempfile.TemporaryDirectory(prefix="arena-confinement-probe-") as folder:
        os.chmod(folder, 0o755)
        trial = bwrap_command(
            candidate,
            view(SHELL),
            agent_dir=Path(folder),
            sdk_dir=Path(folder),
            uid=65534 if as_root else None,
            command=["/bin/true"],
        )
        reported, completed, failure = jail.trial(trial)
    if reported and completed == 0:
        return candidate
    advice = (
        "run the workers as root, or allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1 on Debian, or an AppArmor profile for "
        "bwrap on Ubuntu)"
        if not as_root
        else "check that this kernel allows mount, PID and network namespaces"
    )
    return Confinement(None, as_root, f"bwrap cannot confine agents here ({failure}): {advice}")
