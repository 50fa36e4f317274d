"""A second Docker engine on this machine: the engine of a second worker host.

Its own ``dockerd`` with its own data root, exec root (and so its own containerd), socket,
pid file and cgroup parent, no bridge network and no iptables rules (agents and builds
run with no network anyway), all in a temporary folder, and in a network namespace of its
own: a ``dockerd`` without a bridge deletes the ``docker0`` it finds, and in the machine's
namespace that would be the machine's engine's bridge. Its clients reach it by its unix
socket, which a network namespace does not hide. It shares no image, container or
build cache with the machine's engine. The agents' base image is copied into it (``docker
save | docker load``), as an operator builds it on each machine; anything else it has,
it made itself. Stopped and deleted at the end; the kernel stops it if the process that
started it dies first, and the next start removes what such a run left.

Needs root, ``dockerd`` and the ``docker`` command. Django-free: the benchmark of worker
hosts (``bench/bench_hosts.py``) starts one too.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.processes import ended

PREFIX = "arena-test-engine-"
DOCKERD = "/usr/sbin/dockerd"
CGROUPS = Path("/sys/fs/cgroup")
STARTUP_SECONDS = 60.0
_PR_SET_PDEATHSIG = 1


def second_engine_problem() -> str | None:
    """Why a second engine cannot run here, or None."""
    if os.geteuid() != 0:
        return "a second Docker engine needs root"
    if not Path(DOCKERD).is_file():
        return "dockerd is not installed (apt-get install docker.io)"
    if shutil.which("docker") is None:
        return "the docker command is not installed (apt-get install docker.io)"
    if shutil.which("unshare") is None:
        return "unshare is not installed (apt-get install util-linux)"
    return None


@dataclasses.dataclass
class Engine:
    root: Path
    process: subprocess.Popen[bytes]

    @property
    def socket(self) -> str:
        return str(self.root / "docker.sock")

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket}"

    def docker(self, *arguments: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """The ``docker`` command against this engine."""
        return subprocess.run(
            ["docker", "-H", self.docker_host, *arguments],
            capture_output=True,
            text=True,
            check=False,
            **options,
        )

    def images(self, repository: str) -> set[str]:
        """``repository:tag`` of every image of ``repository`` this engine holds."""
        listed = self.docker("images", repository, "--format", "{{.Repository}}:{{.Tag}}")
        return set(listed.stdout.split())

    def load_image_from(self, image: str, docker_host: str = "") -> None:
        """Copy ``image`` from the engine at ``docker_host`` (the machine's by default)."""
        source = ["docker", *(["-H", docker_host] if docker_host else []), "save", image]
        saver = subprocess.Popen(source, stdout=subprocess.PIPE)
        loaded = subprocess.run(
            ["docker", "-H", self.docker_host, "load"],
            stdin=saver.stdout,
            capture_output=True,
            text=True,
            check=False,
        )
        assert saver.stdout is not None
        saver.stdout.close()
        if saver.wait() != 0 or loaded.returncode != 0:
            raise RuntimeError(f"could not copy {image} into the second engine: {loaded.stderr}")

    def stop(self) -> None:
        try:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    ended(self.process)
        finally:
            _remove_root(self.root)


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _remove_root(root: Path) -> None:
    # A dockerd that did not stop cleanly can leave its layers mounted below its root.
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    for line in sorted(mounts, key=len, reverse=True):
        target = line.split()[1]
        if target.startswith(str(root) + "/"):
            subprocess.run(["umount", "-l", target], capture_output=True, check=False)
    shutil.rmtree(root, ignore_errors=True)
    # Its containers' cgroup parent, in every controller (empty once they are gone).
    for parent in CGROUPS.glob(f"*/{root.name}"):
        for folder in sorted(parent.rglob("*"), key=lambda path: len(path.parts), reverse=True):
            if folder.is_dir():
                with contextlib.suppress(OSError):
                    folder.rmdir()
        with contextlib.suppress(OSError):
            parent.rmdir()


def cpu_pinning_problem() -> str | None:
    """Why engines cannot be pinned to CPUs here (cgroup v1's cpuset), or None."""
    if not (CGROUPS / "cpuset" / "cpuset.cpus").is_file():
        return "no cgroup v1 cpuset hierarchy"
    if shutil.which("taskset") is None:
        return "taskset is not installed (apt-get install util-linux)"
    return None


def _cpuset(name: str, cpus: str) -> None:
    """A cpuset cgroup that the engine's containers are put below (its cgroup parent)."""
    folder = CGROUPS / "cpuset" / name
    folder.mkdir(exist_ok=True)
    (folder / "cpuset.mems").write_text((CGROUPS / "cpuset" / "cpuset.mems").read_text())
    (folder / "cpuset.cpus").write_text(cpus)


def remove_abandoned_engines(parent: Path = Path("/tmp")) -> None:
    """Stop and delete the engines of test runs that died without doing so."""
    for root in parent.glob(PREFIX + "*"):
        try:
            owner = int((root / "owner").read_text())
        except (OSError, ValueError):
            continue
        if Path(f"/proc/{owner}").exists():
            continue
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((root / "docker.pid").read_text()), signal.SIGTERM)
            time.sleep(2)
        _remove_root(root)


def start_engine(cpus: str = "") -> Engine:
    """Start a second engine in a new temporary folder; returns once it answers.

    ``cpus`` (``"1"``, ``"0-1"``) pins it to those CPUs: the daemons (``taskset``) and its
    containers (a cpuset cgroup as their parent), as on a machine with only those.
    """
    remove_abandoned_engines()
    root = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/tmp"))
    (root / "owner").write_text(str(os.getpid()))
    if cpus:
        _cpuset(root.name, cpus)
    command = [
        *(["taskset", "-c", cpus] if cpus else []),
        "unshare",
        "--net",
        DOCKERD,
        f"--data-root={root / 'data'}",
        f"--exec-root={root / 'exec'}",
        f"--pidfile={root / 'docker.pid'}",
        f"--host=unix://{root / 'docker.sock'}",
        f"--cgroup-parent=/{root.name}",
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-masq=false",
    ]
    log = open(root / "dockerd.log", "wb")  # noqa: SIM115 - closed once it is started
    process = subprocess.Popen(
        command,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    log.close()
    engine = Engine(root=root, process=process)
    deadline = time.monotonic() + STARTUP_SECONDS
    while engine.docker("version").returncode != 0:
        if process.poll() is not None or time.monotonic() > deadline:
            tail = (root / "dockerd.log").read_text(errors="replace")[-2000:]
            engine.stop()
            raise RuntimeError(f"the second Docker engine did not start:\n{tail}")
        time.sleep(0.2)
    return engine


@contextlib.contextmanager
def second_engine_running(base_image: str, cpus: str = "") -> Iterator[Engine]:
    """A second engine holding ``base_image`` (copied from the machine's engine)."""
    engine = start_engine(cpus)
    try:
        engine.load_image_from(base_image)
        yield engine
    finally:
        engine.stop()
