"""The ``docker`` sandbox: each agent in a container of its own for the whole duel.

The container has no network, a memory limit without swap, one CPU (in a turn-based
duel, the duel's own: ``DockerAgent.pin_to``), a process limit, a read-only root with a
small tmpfs at ``/tmp``, an unprivileged user, no capabilities, no new privileges, and
rlimits on CPU time, open files, file size and core dumps. The agent's files are
bind-mounted read-only at ``/agent`` (its working folder), unless the image already holds
them there: a revision's own image (``AgentSource.image``, built by the builder with its
dependencies in ``/opt/arena/deps``) is started as it is.

Moves never cross the engine: before the container starts, the referee listens on a
Unix socket in a host folder bind-mounted at ``/run/arena``; the container's command is
``python3 -m arena_sdk.bridge``, which connects, receives the agent's ends of three pipes
(stdin, stdout, stderr) on that connection and execs the agent on them. The referee's
request and reply fds are plain pipes, as to a host process; the engine is only asked to
start, pin, inspect and remove the container.

With a warm pool, a Python agent's containers are kept from one duel to the next: each
runs the agent's fork server (``sandboxes.fork_servers``) as its process 1, reached on a
control socket the bridge receives instead of the three pipes (``arena_sdk.bridge
--control``), and each duel's agent is a child it forks, which finds the container as a
fresh one would be. A duel then costs the engine nothing where the worker sees the
containers' processes (one pin of the server's container where it does not: compose); a
fresh container costs it some 125 ms of CPU to create, start and remove.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import shutil
import socket
import stat
import struct
import tempfile
import time
import weakref
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena_sdk.bridge import CONTROL, PIPES, STREAMS

from sandboxes import docker_engine, docker_images
from sandboxes.base import (
    AgentSource,
    EntryKind,
    SandboxError,
    SandboxLimits,
    agent_environment,
)
from sandboxes.cpus import PROCESS_CPUS, away_from_duels
from sandboxes.docker_agent import (
    DockerAgent,
    ServerContainer,
    Stream,
)
from sandboxes.docker_container import (
    AGENT_DIR,
    DEPS_PATH,
    SDK_PATH,
    SOCKET_DIR,
    SOCKET_NAME,
    confinement,
    container_command,
    server_command,
    server_environment,
)
from sandboxes.docker_engine import LABEL_ROLE, LABEL_SANDBOX, EngineError
from sandboxes.fork_servers import ForkedAgent, ForkServers, started_ahead
from sandboxes.warm_pool import Reaper, WarmKey, shut_down, wait_until_reading

logger = logging.getLogger(__name__)

DEFAULT_ROOT = Path(tempfile.gettempdir()) / "arena-sandboxes"
#: How long the container may take to start and connect: the platform's time, not
#: the agent's (its own start-up limit begins with the handshake).
CONNECT_TIMEOUT = 30.0


class StoppedBeforeConnecting(SandboxError):
    """The container ended before it reached the referee, with ``exit_code`` (None: gone)."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


#: How a bridge older than the fork servers ends when asked for a control socket: its usage.
BRIDGE_USAGE_ERROR = 2


def _make_readable(folder: Path) -> None:
    """Everything readable (and folders searchable) by the container's user, nothing writable."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        executable = path.is_dir() or mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.chmod(path, 0o755 if executable else 0o644)


@dataclass
class _Started:
    """A container just started, and what it will connect to."""

    container: docker_engine.Container
    listener: socket.socket
    folder: Path
    token: str


def _short_name(label: str, length: int = 16) -> str:
    """``label`` cut short, with what the engine refuses in names replaced."""
    return re.sub(r"[^a-zA-Z0-9_.-]+", "_", label)[:length]


def _container_name(label: str, token: str) -> str:
    return f"arena-{_short_name(label, 40)}-{token}"


class DockerSandbox:
    """The ``docker`` backend.

    ``image`` is what agents start from: by default the base image of this checkout
    (``sandboxes.base_image``), which gets the agent's files bind-mounted at ``/agent``;
    an image that already holds them there sets ``agent_files_in_image``. An agent
    whose ``AgentSource.image`` is set (a revision's own image) starts from that image
    instead, with its files in it. ``labels`` go on every container (e.g. the duel's id).

    Containers are killed and removed in a background thread (``flush`` waits for that).
    With ``pool_size`` > 0 the sandbox keeps up to that many containers started ahead
    (``WarmPool``): each ``start`` takes a ready one for the same image, agent files,
    limits and environment if there is one, and has another started for next time; a
    ready container waits at most ``pool_idle_seconds``. Ready containers are locked
    down exactly as the others and are used by one duel only. With a pool, a Python
    agent's containers run its fork server and are kept between duels (each duel's agent
    is a child the server forks), unless ``fork`` is False. ``close`` (also run at
    exit) discards them and waits for the removals; the orphan sweep removes what a
    killed worker left. Use one long-lived sandbox per worker process for the pool to
    pay off.
    """

    name = "docker"
    confined = True
    unconfined_reason = ""

    def __init__(
        self,
        root: Path | None = None,
        *,
        image: str | None = None,
        agent_files_in_image: bool = False,
        labels: dict[str, str] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        pool_size: int = 0,
        pool_idle_seconds: float = 60.0,
        fork: bool = True,
    ) -> None:
        # A folder of its own under the sandbox root. The engine mounts from it, so when
        # the referee runs in a container itself this path must be the same on the host.
        self.root = Path(root or DEFAULT_ROOT) / "docker"
        self._image = image
        self.agent_files_in_image = agent_files_in_image
        self.labels = dict(labels or {})
        self.connect_timeout = connect_timeout
        self._images_checked: set[str] = set()
        self._reaper = Reaper()
        #: With a pool (and ``fork``), a Python agent's containers are kept between duels,
        #: each running its fork server (``sandboxes.fork_servers``).
        self.pool, self.fork_servers = started_ahead(
            pool_size, pool_idle_seconds, self._start_warm, forking=fork
        )
        #: Images whose bridge cannot start a fork server (an image built before it could).
        self._serverless: set[str] = set()
        # At exit (or when the sandbox is collected): no pooled container outlives us.
        self._finalizer = weakref.finalize(
            self, shut_down, self.pool, self._reaper, connect_timeout, self.fork_servers
        )

    def close(self) -> None:
        """Discard the pooled containers and wait for every removal; idempotent."""
        self._finalizer()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every agent closed so far has its container and folder removed."""
        return self._reaper.flush(timeout)

    @property
    def image(self) -> str:
        if self._image is None:
            from sandboxes.base_image import base_image_tag

            self._image = base_image_tag()
        return self._image

    def _check_image(self, image: str) -> None:
        """Once per image: a missing image is a set-up problem, said as such."""
        if image in self._images_checked:
            return
        if not docker_images.image_exists(image):
            if image.startswith("arena-base:"):
                advice = "build it with `python manage.py build_base_image` (or `make base-image`)"
            elif image.startswith("arena-revision:"):
                advice = "rebuild the revision"
            else:
                advice = "build it first"
            raise SandboxError(f"the agents' image {image} does not exist: {advice}")
        self._images_checked.add(image)

    def _command(self, source: AgentSource) -> list[str]:
        return container_command(source.entry, source.kind)

    def _environment(self, source: AgentSource, token: str) -> dict[str, str]:
        # The SDK first: a dependency must not shadow it. The folder of dependencies only
        # exists in a revision's image.
        return agent_environment(
            source,
            sandbox=self.name,
            token=token,
            home="/tmp",
            pythonpath=f"{SDK_PATH}:{DEPS_PATH}",
        )

    def _container_options(
        self,
        limits: SandboxLimits,
        agent_dir: Path,
        socket_dir: Path,
        *,
        files_in_image: bool,
        server: bool,
    ) -> dict[str, Any]:
        mib = 1024 * 1024
        volumes = {str(socket_dir): {"bind": SOCKET_DIR, "mode": "ro"}}
        if not files_in_image:
            volumes[str(agent_dir)] = {"bind": AGENT_DIR, "mode": "ro"}
        return {
            **confinement(memory_mb=limits.memory_mb, max_processes=limits.max_processes),
            "working_dir": AGENT_DIR,
            # An init as process 1 reaps the zombies an agent's children leave; a fork
            # server is process 1 itself (which no process inside may signal) and reaps.
            "init": not server,
            "volumes": volumes,
            "ulimits": {
                "cpu": (limits.cpu_seconds, limits.cpu_seconds + 1),
                "nofile": (limits.max_open_files, limits.max_open_files),
                "fsize": (limits.max_file_mb * mib, limits.max_file_mb * mib),
                "core": (0, 0),
            },
            "hostname": "agent",
        }

    def _listen(self, socket_dir: Path) -> socket.socket:
        path = socket_dir / SOCKET_NAME
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        # The container's user must be allowed to connect; the host folder above is
        # private, and the mount is read-only, so the agent cannot plant files here.
        os.chmod(path, 0o666)
        listener.listen(STREAMS)
        return listener

    def _accept_streams(
        self,
        listener: socket.socket,
        container: docker_engine.Container,
        control: socket.socket | None = None,
    ) -> tuple[list[Stream], int | None]:
        """The agent's three streams: pipes, handed to the bridge when it asks for them on
        its connection; or the three connections of a bridge older than the pipes (in an
        image built before them), in the order it made them. Which one it is shows at
        once: the first connection asks, or a second one comes. With ``control`` (a fork
        server's container), that socket is handed to the bridge instead
        (``_hand_control``) and no stream is returned. With them, the process id of the
        bridge (the server, once it has exec'ed) as seen here, if it is."""
        deadline = time.monotonic() + self.connect_timeout
        connections: list[socket.socket] = []
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SandboxError(
                        f"the agent's container did not connect within {self.connect_timeout:g} s"
                        + self._engine_log(container)
                    )
                waiting = select.poll()
                waiting.register(listener, select.POLLIN)
                if len(connections) == 1:
                    waiting.register(connections[0], select.POLLIN)
                ready = {descriptor for descriptor, _ in waiting.poll(min(0.25, remaining) * 1000)}
                if not ready:
                    self._check_running(container)
                    continue
                if len(connections) == 1 and connections[0].fileno() in ready:
                    connection = connections.pop()
                    pid = self._peer_pid(connection)
                    if control is not None:
                        self._hand_control(connection, container, control)
                        return [], pid
                    return self._hand_pipes(connection, container), pid
                if listener.fileno() in ready:
                    connection, _ = listener.accept()
                    connection.setblocking(True)
                    connections.append(connection)
                    if len(connections) == STREAMS and control is None:
                        streams = [Stream(c.fileno(), c) for c in connections]
                        connections = []
                        return streams, None
        finally:
            for connection in connections:
                connection.close()

    def _check_running(self, container: docker_engine.Container) -> None:
        state = docker_engine.container_state(container)
        if state is None or not state.running:
            code = None if state is None else state.exit_code
            raise StoppedBeforeConnecting(
                f"the agent's container stopped before connecting (exit code {code})"
                + self._engine_log(container),
                code,
            )

    def _hand_pipes(
        self, connection: socket.socket, container: docker_engine.Container
    ) -> list[Stream]:
        """Three pipes, the agent's ends sent to the bridge on ``connection``: the read end
        of its requests and the write ends of its replies and its log."""
        with connection:
            if connection.recv(1) != PIPES:
                self._check_running(container)  # it ended: says how
                raise SandboxError("the agent's bridge did not ask for its streams")
            requests, replies, log = os.pipe(), os.pipe(), os.pipe()
            try:
                socket.send_fds(connection, [PIPES], [requests[0], replies[1], log[1]])
            except OSError:
                for pair in (requests, replies, log):
                    os.close(pair[0])
                    os.close(pair[1])
                raise
            for descriptor in (requests[0], replies[1], log[1]):
                os.close(descriptor)
        return [Stream(requests[1]), Stream(replies[0]), Stream(log[0])]

    def _hand_control(
        self, connection: socket.socket, container: docker_engine.Container, control: socket.socket
    ) -> None:
        """``control`` sent to a fork server's bridge on ``connection``, once it asks."""
        with connection:
            if connection.recv(1) != CONTROL:
                self._check_running(container)
                raise StoppedBeforeConnecting("the fork server's bridge did not ask for control")
            socket.send_fds(connection, [CONTROL], [control.fileno()])

    @staticmethod
    def _peer_pid(connection: socket.socket) -> int | None:
        """The process id of the peer of ``connection`` as seen here (None: unseen)."""
        credentials = connection.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
        )
        pid, _uid, _gid = struct.unpack("3i", credentials)
        return pid or None

    @staticmethod
    def _engine_log(container: docker_engine.Container) -> str:
        with contextlib.suppress(EngineError):
            output = docker_engine.container_logs(container, stdout=True, stderr=True)
            text = output.decode("utf-8", errors="replace").strip()
            if text:
                return ": " + text[-2000:]
        return ""

    def sweep_orphans(self) -> list[str]:
        """Remove what killed workers left behind; returns what was removed.

        Their agent containers go (``docker_engine.sweep_orphans``), then the host
        folders whose token no container carries any more. A folder younger than the
        time a container may take to start is left alone: its container may be starting.
        """
        removed = docker_engine.sweep_orphans()
        if not self.root.is_dir():
            return removed
        in_use = {
            docker_engine.container_labels(container).get(LABEL_SANDBOX)
            for container in docker_engine.containers_labelled({LABEL_ROLE: "agent"})
        }
        started_before = time.time() - 2 * self.connect_timeout
        for folder in self.root.iterdir():
            token = folder.name.rpartition("-")[2]
            if token not in in_use and folder.lstat().st_mtime < started_before:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(str(folder))
        return removed

    def start(
        self, source: AgentSource, *, limits: SandboxLimits, label: str
    ) -> DockerAgent | ForkedAgent:
        if self.pool is None:
            return self._launch(source, limits=limits, label=label)
        key = self._key(source, limits, label)
        pool = self.pool
        agent = pool.take(key)
        if agent is not None:
            agent.warm = True
        elif self._forks(key):
            # An idle server forks one in a millisecond (a new server costs a container).
            agent = self._start_forked(key)
        else:
            agent = self._launch(source, limits=limits, label=label)
        if isinstance(agent, ForkedAgent):
            # Its next duel finds one ready: forked now by another of its servers.
            pool.want(key)
        else:
            # This agent's next duel will want one: started once this duel is over, not
            # beside it (a container's start takes the engine's CPU).
            agent.on_close = lambda: pool.want(key)
        return agent

    def _key(self, source: AgentSource, limits: SandboxLimits, label: str) -> WarmKey:
        return WarmKey.of(
            source,
            limits,
            label,
            image=source.image or self.image,
            files_copied=not self._files_in_image(source),
        )

    def _forks(self, key: WarmKey) -> bool:
        """Whether ``key``'s agents are forked by servers kept in containers: Python agents,
        with a pool, from an image whose bridge can start a server."""
        return (
            self.fork_servers is not None
            and key.source.kind is not EntryKind.EXECUTABLE
            and (key.source.image or self.image) not in self._serverless
        )

    def _start_warm(self, key: Hashable) -> DockerAgent | ForkedAgent:
        assert isinstance(key, WarmKey)
        if self._forks(key):
            return self._start_forked(key)
        agent = self._launch(key.source, limits=key.limits, label=key.label)
        # Connected is not loaded: the agent still starts its interpreter and imports
        # its module. Ready once it waits for the handshake, where its process is seen
        # from here (the engine's host); at worst the handshake waits for the rest, as
        # when fresh.
        if agent.pid is not None:
            wait_until_reading(agent.agent_pid, timeout=min(5.0, self.connect_timeout))
        return agent

    def _start_forked(self, key: WarmKey) -> DockerAgent | ForkedAgent:
        """``key``'s agent forked by one of its servers (off the CPUs duels hold), loaded
        where that can be seen; an agent in a container of its own if its image's bridge
        cannot start a server (it refuses ``--control``, as a bridge older than that)."""
        assert self.fork_servers is not None
        try:
            with away_from_duels():
                agent = self._fork(key, self.fork_servers)
        except StoppedBeforeConnecting as error:
            if error.exit_code != BRIDGE_USAGE_ERROR:
                raise
            image = key.source.image or self.image
            self._serverless.add(image)
            logger.warning(
                "arena docker sandbox: no fork server in %s (%s); its agents are started "
                "in containers of their own",
                image,
                error,
            )
            return self._launch(key.source, limits=key.limits, label=key.label)
        if agent.pid is not None:
            wait_until_reading(agent.agent_pid, timeout=5.0)
        agent.pin_to(set(PROCESS_CPUS))
        return agent

    def _fork(self, key: WarmKey, servers: ForkServers) -> ForkedAgent:
        """The agent of ``key`` forked by an idle server of it, or by a new one."""
        return servers.fork(
            key, key.limits, self._reaper, lambda control: self._launch_server(key, control)
        )

    def _files_in_image(self, source: AgentSource) -> bool:
        return source.image is not None or self.agent_files_in_image

    def _launch(self, source: AgentSource, *, limits: SandboxLimits, label: str) -> DockerAgent:
        """A new container, connected and waiting for the referee's handshake."""
        with self._container(source, limits=limits, label=label, server=False) as started:
            # The bridge's process, which becomes the agent's (it execs it).
            streams, pid = self._accept_streams(started.listener, started.container)
        return DockerAgent(
            container=started.container,
            streams=streams,
            folder=started.folder,
            token=started.token,
            limits=limits,
            reaper=self._reaper,
            pid=pid,
        )

    def _launch_server(self, key: WarmKey, control: socket.socket) -> ServerContainer:
        """A new container running ``key``'s fork server, on ``control``."""
        with self._container(
            key.source, limits=key.limits, label=key.label, server=True
        ) as started:
            _streams, pid = self._accept_streams(started.listener, started.container, control)
        container = started.container
        return ServerContainer(
            container=container,
            pid=pid,
            folder=started.folder,
            token=started.token,
            reaper=self._reaper,
            engine_log=lambda: self._engine_log(container),
        )

    @contextlib.contextmanager
    def _container(
        self, source: AgentSource, *, limits: SandboxLimits, label: str, server: bool
    ) -> Iterator[_Started]:
        """A container of ``source`` started (a fork server's with ``server``), for the
        block to connect to; removed with its folder if the block fails."""
        token = os.urandom(8).hex()
        image = source.image or self.image
        files_in_image = self._files_in_image(source)
        with contextlib.ExitStack() as cleanup:
            try:
                self._check_image(image)
                self.root.mkdir(parents=True, exist_ok=True)
                os.chmod(self.root, 0o700)
                # Named after the token on the container, so a sweep can pair them; short,
                # because a Unix socket's path inside it may not pass 107 bytes.
                folder = self.root / f"{_short_name(label)}-{token}"
                folder.mkdir(mode=0o700)
                cleanup.callback(shutil.rmtree, folder, ignore_errors=True)
                agent_dir = folder / "agent"
                agent_dir.mkdir()
                if not files_in_image:
                    source.copy_into(agent_dir)
                    _make_readable(agent_dir)
                socket_dir = folder / "run"
                socket_dir.mkdir()
                # Mounted: the container's user reaches the socket through this folder only
                # (whatever the umask of the process that runs the sandbox).
                os.chmod(socket_dir, 0o755)
                listener = cleanup.enter_context(self._listen(socket_dir))
                environment = self._environment(source, token)
                if server:
                    environment = server_environment(environment)
                container = docker_engine.container_start(
                    image=image,
                    command=server_command(source.entry) if server else self._command(source),
                    role="agent",
                    labels={**self.labels, LABEL_SANDBOX: token},
                    environment=environment,
                    name=_container_name(label, token),
                    **self._container_options(
                        limits,
                        agent_dir,
                        socket_dir,
                        files_in_image=files_in_image,
                        server=server,
                    ),
                )
                cleanup.callback(docker_engine.container_discard, container)
                yield _Started(container, listener, folder, token)
            except EngineError as error:
                raise SandboxError(f"cannot start the agent's container: {error}") from error
            except OSError as error:
                raise SandboxError(f"cannot prepare the agent's container: {error}") from error
            # Started: from here on the agent owns the container and folder, and
            # close() removes them.
            cleanup.pop_all()
        listener.close()
        (socket_dir / SOCKET_NAME).unlink(missing_ok=True)
