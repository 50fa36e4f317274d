"""What a process-sandbox agent sees of the machine: bubblewrap builds its view.

An agent runs under ``bwrap`` (bubblewrap, the tool Flatpak confines applications with)
in new mount, PID, network, IPC and UTS namespaces. Its file system is built from
nothing: its own folder at ``/agent`` and the SDK at ``/opt/arena/sdk``, both
read-only, the runtime read-only (``/usr`` and its links, the few files of ``/etc``
that the dynamic loader and Debian's alternatives need, and the Python that runs it
when it is installed outside ``/usr``), a private ``/tmp`` (a tmpfs of ``TMPFS_MB``) and
``/dev/shm`` (``SHM_MB``), a fresh ``/proc`` that shows its own processes only and a
minimal ``/dev``; the rest of the
tree bubblewrap made is read-only. Arena's data, the checkout, ``/home``, ``/root``,
``/srv`` and other agents' folders are not there at all; any of them that lies inside a
runtime folder is covered by an empty, read-only tmpfs.

Two modes (``Confinement.mode``), one command line:

- ``userns``: bubblewrap makes a user namespace first; the agent keeps the user id it
  was started with, has no capability and may make no user namespace of its own. Root
  takes the agent's own user id before it starts bubblewrap (``launcher``), so this is
  the mode of root too wherever the kernel lets users make user namespaces;
- ``setpriv``: root, where users may not make user namespaces (so neither may the
  agent): bubblewrap makes the namespaces and mounts with root's rights, then ``setpriv``
  (util-linux) switches to the agent's own user id with no capability, no supplementary
  group and ``no_new_privs``.

Where neither works (no ``bwrap``, or no root and no user namespaces), ``probe`` says
why; the sandbox then runs agents unconfined and the platform refuses to run untrusted
agents unless its operator accepts that knowingly (``docs/sandboxes.md``).

The last steps before the agent are ``env -i`` (the agent's environment, and nothing of
bubblewrap's or root's) and ``/bin/sh``, which puts the agent's streams back (the
launcher keeps them away from bubblewrap's own processes), sends one byte on
``jail.READY_FD`` and closes it: the referee learns from it (``SCM_CREDENTIALS``) that the
sandbox is set up and the agent's process id as the host sees it, and nothing the agent
does can forge either (it runs after that byte, without the descriptor). bubblewrap
reads its options from a file (``--args``), so the host paths they name do not show in
the command line of the sandbox's init.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from sandboxes import jail
from sandboxes.base import SAFE_PATH, SHM_MB, TMPFS_MB, SandboxError

#: Where the agent's stdin and stdout wait while bubblewrap starts (``launcher``), and the
#: file bubblewrap reads its options from (it closes it).
AGENT_STDIN_FD = 4
AGENT_STDOUT_FD = 5
OPTIONS_FD = 6
#: A fork server's control socket (``arena_sdk.fork_server``), where it has one.
CONTROL_FD = 7
#: Inside the sandbox: the agent's files, the SDK, the writable scratch folder.
AGENT_DIR = "/agent"
SDK_DIR = "/opt/arena/sdk"
SCRATCH_DIR = "/tmp"
#: The last step before the agent: puts its streams back where the jail set them aside,
#: sends the byte, drops the descriptor and becomes the agent (its arguments follow ``$0``).
#: A failed redirection ends the shell before the byte: the sandbox's failure, not the
#: agent's (the referee decides by the byte alone).
READY_SCRIPT = (
    f"exec 0<&{AGENT_STDIN_FD} 1>&{AGENT_STDOUT_FD} "
    f"{AGENT_STDIN_FD}<&- {AGENT_STDOUT_FD}>&- "
    f"&& printf . >&{jail.READY_FD} && exec {jail.READY_FD}>&- && "
    'exec "$@"'
)
#: What the dynamic loader and Debian's alternatives (NumPy's BLAS) read in ``/etc``.
RUNTIME_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
#: The top-level folders of a runtime: bound read-only, or recreated as the same links.
RUNTIME_TOP = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
SETPRIV = "/usr/bin/setpriv"
ENV = "/usr/bin/env"
SHELL = "/bin/sh"
#: Starts bubblewrap (``launcher``): unlike ``SHELL`` it can name descriptors above 9.
BASH = "/bin/bash"
#: bash's ``ulimit`` option for each limit a sandbox sets, and its unit in bytes (bash
#: counts sizes in KiB).
ULIMIT_OPTIONS = {
    "RLIMIT_CPU": ("t", 1),
    "RLIMIT_DATA": ("d", 1024),
    "RLIMIT_AS": ("v", 1024),
    "RLIMIT_NPROC": ("u", 1),
    "RLIMIT_FSIZE": ("f", 1024),
    "RLIMIT_NOFILE": ("n", 1),
    "RLIMIT_CORE": ("c", 1024),
}
#: The hostname the agent sees (not the host's).
HOSTNAME = "arena-agent"
#: Where the runtime must never come from: binding one of these would show the agent
#: someone's files, Arena's among them.
NEVER_RUNTIME = ("/", "/home", "/root", "/srv", "/tmp", "/var", "/opt", "/etc", "/mnt", "/media")
#: The user id a probe as root drops to (nobody's): any unprivileged one would do.
PROBE_UID = 65534
#: How long a failed probe stands before the next ``probe`` tries again (a machine put
#: right, bubblewrap installed, is seen without a restart).
FAILED_PROBE_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class Confinement:
    """Whether this machine can confine agents, and how."""

    #: The ``bwrap`` program, or None when agents cannot be confined here.
    bwrap: str | None
    #: "userns" or "setpriv" (the module's docstring); "" when not confined.
    mode: str = ""
    #: Why agents are not confined ("" when they are), with what to do about it.
    reason: str = ""

    @property
    def confined(self) -> bool:
        return self.bwrap is not None


@dataclasses.dataclass(frozen=True)
class AgentView:
    """The parts of an agent's view that do not change from one agent to the next."""

    #: The interpreter of Python agents, as the agent sees it (resolved: no venv links).
    python: str
    #: Host folders bound read-only at the same path (the runtime).
    runtime: tuple[str, ...]
    #: Host folders inside the runtime covered with an empty tmpfs.
    hidden: tuple[str, ...]


class ViewError(ValueError):
    """The runtime asked for cannot be given to an agent without showing it too much."""


def agent_view(python: str, *, hidden: Iterable[Path] = ()) -> AgentView:
    """The runtime for agents run by ``python``: ``/usr`` and its links, plus the
    interpreter's own installation (its ``sys.base_prefix``, asked once) if it lies
    outside them (a pyenv under ``/root``: that installation only, never its parents);
    ``hidden`` folders are covered where a bound folder holds them (Arena's data or
    checkout under ``/usr/local``, say). Raises ViewError for an installation that would
    show the agent a whole home, ``/`` or Arena's own folders."""
    executable = Path(os.path.realpath(python))
    runtime = [f"/{name}" for name in RUNTIME_TOP if _is_real_dir(Path("/", name))]
    folders = [Path(os.path.realpath(path)) for path in hidden]
    if not _inside(executable, runtime):
        prefix = Path(os.path.realpath(_base_prefix(str(executable))))
        if str(prefix) in NEVER_RUNTIME or prefix == Path.home() or prefix.parent == Path("/home"):
            raise ViewError(f"{python} is installed in {prefix}, which agents may not see")
        if any(prefix == folder or prefix in folder.parents for folder in folders):
            raise ViewError(f"{python} is installed in {prefix}, which holds Arena's files")
        runtime.append(str(prefix))
    # Only folders that exist: bwrap cannot make a mount point in a read-only folder.
    covered = sorted(
        {str(folder) for folder in folders if folder.is_dir() and _inside(folder, runtime)}
    )
    return AgentView(python=str(executable), runtime=tuple(runtime), hidden=tuple(covered))


def _base_prefix(python: str) -> str:
    try:
        done = subprocess.run(
            [python, "-I", "-S", "-c", "import sys; print(sys.base_prefix)"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise ViewError(f"cannot run {python}: {error}") from error
    return done.stdout.strip()


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


def bwrap_options(
    confinement: Confinement,
    view: AgentView,
    *,
    agent_dir: Path,
    sdk_dir: Path,
    as_pid_1: bool = False,
) -> list[str]:
    """bubblewrap's options for an agent whose files are in ``agent_dir``, with the SDK
    in ``sdk_dir`` (given to it in a file: ``--args``); ``as_pid_1``: the command is the
    namespace's init itself (a fork server), not a child of bubblewrap's."""
    made: set[str] = set()
    options = [
        *(["--as-pid-1"] if as_pid_1 else []),
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        HOSTNAME,
        "--clearenv",
    ]
    if confinement.mode == "userns":
        options += ["--unshare-user", "--disable-userns"]
    for name in RUNTIME_TOP:
        top = Path("/", name)
        if top.is_symlink():
            options += ["--symlink", os.readlink(top), str(top)]
    for folder in view.runtime:
        options += [*_dirs(folder, made), "--ro-bind", folder, folder]
        made.add(folder)
    options += ["--perms", "0755", "--dir", "/etc"]
    made.add("/etc")
    for name in RUNTIME_ETC:
        options += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for folder in view.hidden:
        # Empty, tiny and read-only: a user namespace's agent would own a writable one.
        options += ["--size", "4096", "--tmpfs", folder, "--remount-ro", folder]
    options += [*_dirs(SDK_DIR, made), "--ro-bind", str(sdk_dir), SDK_DIR]
    options += ["--ro-bind", str(agent_dir), AGENT_DIR]
    options += ["--size", str(TMPFS_MB * 1024 * 1024), "--perms", "01777"]
    options += ["--tmpfs", SCRATCH_DIR, "--proc", "/proc", "--dev", "/dev"]
    # Its own /dev/shm (multiprocessing's locks and queues), bounded as /tmp is.
    options += ["--size", str(SHM_MB * 1024 * 1024), "--perms", "01777", "--tmpfs", "/dev/shm"]
    # The folders made above (/, /etc, /opt..., /dev) are tmpfs of bubblewrap's, which a
    # user namespace's agent would own: read-only, once everything is in place (devices
    # stay usable: a read-only mount does not stop writes to them; /dev/shm is a mount of
    # its own and stays writable).
    return [*options, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", AGENT_DIR]


def inner_command(
    confinement: Confinement,
    *,
    uid: int | None,
    environment: Mapping[str, str],
    command: Sequence[str],
) -> list[str]:
    """What bubblewrap runs: in ``setpriv`` mode the switch to the agent's user id
    ``uid`` first; then the agent's exact environment and the last step (``READY_SCRIPT``)
    before ``command`` (paths as the agent sees them)."""
    steps: list[str] = []
    if confinement.mode == "setpriv":
        assert uid is not None
        steps += [
            SETPRIV,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    # After the switch: nothing of the agent's environment (LD_PRELOAD...) reaches a
    # program that runs with more rights than the agent.
    variables = [f"{name}={value}" for name, value in environment.items()]
    return [*steps, ENV, "-i", *variables, SHELL, "-c", READY_SCRIPT, "arena-agent", *command]


_probed: tuple[float, Confinement] | None = None
_probe_lock = threading.Lock()


def probe() -> Confinement:
    """Whether agents can be confined here: a trial agent (``/bin/true``) is run exactly
    as a real one would be. Once per process when it can; a failure is asked again after
    ``FAILED_PROBE_SECONDS``."""
    global _probed
    with _probe_lock:
        if _probed is not None and (
            _probed[1].confined or time.monotonic() - _probed[0] < FAILED_PROBE_SECONDS
        ):
            return _probed[1]
        _probed = (time.monotonic(), _probe())
        return _probed[1]


def _probe() -> Confinement:
    as_root = os.geteuid() == 0
    bwrap = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin:/usr/sbin")
    if bwrap is None:
        return Confinement(
            None,
            reason="bubblewrap is not installed, so agents could read every world-readable "
            "file of this machine: install it (Debian: apt-get install bubblewrap)",
        )
    failures = []
    for mode in ("userns", "setpriv") if as_root else ("userns",):
        candidate = Confinement(bwrap, mode)
        if mode == "setpriv" and not os.access(SETPRIV, os.X_OK):
            failures.append(f"setpriv: {SETPRIV} (util-linux) is missing")
            continue
        failure = trial(candidate, agent_view(SHELL), ["/bin/true"])
        if not failure:
            return candidate
        failures.append(f"{mode}: {failure}")
    advice = (
        "check that this kernel allows mount, PID and network namespaces"
        if as_root
        else "run the workers as root, or allow unprivileged user namespaces "
        "(sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1 on older "
        "Debian kernels, or an AppArmor profile for bwrap on Ubuntu)"
    )
    return Confinement(
        None, reason=f"bwrap cannot confine agents here ({'; '.join(failures)}): {advice}"
    )


_views_checked: set[tuple[Confinement, AgentView]] = set()


def checked_view(confinement: Confinement, view: AgentView) -> str:
    """ "" when the agents' interpreter starts in ``view`` (``trial``), else what went
    wrong. A success is remembered for the process; a failure is asked again next time."""
    with _probe_lock:
        if (confinement, view) in _views_checked:
            return ""
    failure = trial(confinement, view, [view.python, "-I", "-S", "-c", "pass"])
    if not failure:
        with _probe_lock:
            _views_checked.add((confinement, view))
    return failure


def _limits(rlimits: Mapping[str, tuple[int, int]]) -> list[str]:
    """bash's ``ulimit`` steps for ``rlimits`` (RLIMIT_* names, soft and hard), exact:
    both set to the hard limit first (as root, raising or lowering), then the soft one."""
    steps = []
    for name, (soft, hard) in rlimits.items():
        option, unit = ULIMIT_OPTIONS[name]
        if soft % unit or hard % unit:
            raise SandboxError(f"{name} must be a multiple of {unit} bytes, not {soft}:{hard}")
        steps += [f"ulimit -SH -{option} {hard // unit}", f"ulimit -S -{option} {soft // unit}"]
    return steps


def launcher(
    confinement: Confinement,
    view: AgentView,
    *,
    agent_dir: Path,
    sdk_dir: Path,
    uid: int | None,
    environment: Mapping[str, str],
    command: Sequence[str],
    rlimits: Mapping[str, tuple[int, int]],
    report_fd: int,
    control_fd: int | None = None,
) -> tuple[list[str], int]:
    """How to start an agent confined, as the user ``uid`` (root's choice; None for the
    caller's), which reports on ``report_fd``: the command, to run in a session of its
    own with the agent's stdin, stdout and log as its three streams, and ``report_fd`` and
    the returned descriptor passed on; and that descriptor, bubblewrap's options file, for
    the caller to close once it is started.

    The command is a bash step, then bubblewrap (in ``userns`` mode through ``setpriv``,
    which takes the agent's user id first; in ``setpriv`` mode bubblewrap needs root's
    rights, and setpriv switches inside, ``inner_command``). The bash step does what a
    Python launcher would at a quarter of its start's cost: moves the report descriptor to
    ``jail.READY_FD`` and the options to ``OPTIONS_FD``, sets the agent's streams
    aside (``AGENT_STDIN_FD``, ``AGENT_STDOUT_FD``) and gives bubblewrap
    ``/dev/null`` and the log instead, so that bubblewrap's own processes, which keep
    their standard streams as long as the agent runs, never hold the agent's; then the
    limits and the umask. Its script is fixed but for the limits (numbers); every other
    value is an argument, never read as code.

    With ``control_fd`` the agent is a fork server (``arena_sdk.fork_server``): that
    socket is passed on as ``CONTROL_FD`` and the command runs as PID 1 of its namespace."""
    options = os.memfd_create("bwrap-options")
    try:
        text = "\0".join(
            bwrap_options(
                confinement,
                view,
                agent_dir=agent_dir,
                sdk_dir=sdk_dir,
                as_pid_1=control_fd is not None,
            )
        )
        os.write(options, (text + "\0").encode())
        os.lseek(options, 0, os.SEEK_SET)
    except OSError:
        os.close(options)
        raise
    aside, control = [], []
    if control_fd is not None:  # set aside first too, then put in its place
        aside = ['exec {held}<&"$control" {control}<&-']
        control = [f'exec {CONTROL_FD}<&"$held" {{held}}<&-']
    script = " && ".join(
        [
            "report=$1 options=$2 control=$3",
            "shift 3",
            # Out of the way of 3 to 6 first (bash takes descriptors from 10 up), whatever
            # numbers the two had.
            'exec {ready}>&"$report" {args}<&"$options" {report}>&- {options}<&-',
            *aside,
            f"exec {AGENT_STDIN_FD}<&0 {AGENT_STDOUT_FD}>&1 0</dev/null 1>&2 "
            f'{jail.READY_FD}>&"$ready" {OPTIONS_FD}<&"$args" {{ready}}>&- {{args}}<&-',
            *control,
            *_limits(rlimits),
            "umask 077",
            'exec "$@"',
        ]
    )
    switch = []
    if uid is not None and confinement.mode == "userns":
        switch = [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    assert confinement.bwrap is not None
    inner = inner_command(confinement, uid=uid, environment=environment, command=command)
    return [
        BASH,
        "-c",
        script,
        "arena-launcher",
        str(report_fd),
        str(options),
        "" if control_fd is None else str(control_fd),
        *switch,
        confinement.bwrap,
        "--args",
        str(OPTIONS_FD),
        "--",
        *inner,
    ], options


def trial(confinement: Confinement, view: AgentView, command: Sequence[str]) -> str:
    """Run ``command`` in ``view`` exactly as an agent would be run, in an empty agent
    folder and with no limits; "" when it ran and exited 0, else what went wrong."""
    as_root = os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="arena-confinement-probe-") as folder:
        os.chmod(folder, 0o755)
        read_end, write_end = os.pipe()
        options: int | None = None
        try:
            launch, options = launcher(
                confinement,
                view,
                agent_dir=Path(folder),
                sdk_dir=Path(folder),
                uid=PROBE_UID if as_root else None,
                environment={"PATH": SAFE_PATH},
                command=command,
                rlimits={},
                report_fd=write_end,
            )
            done = subprocess.run(
                launch,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=60,
                pass_fds=(write_end, options),
                start_new_session=True,
                cwd="/",
                env={"PATH": SAFE_PATH},
            )
            os.close(write_end)
            write_end = -1
            reported = os.read(read_end, 1) == b"."
        except (OSError, subprocess.SubprocessError) as error:
            return str(error)
        finally:
            for descriptor in (read_end, write_end, options):
                if descriptor is not None and descriptor >= 0:
                    os.close(descriptor)
    if reported and done.returncode == 0:
        return ""
    return done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
