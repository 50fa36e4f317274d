"""Every Docker Engine API call the engine proxy lets through, and the rules each must pass.

These modules are the policy, whole: ``engine_proxy.routes.ROUTES`` lists the calls
``sandboxes/docker_engine.py`` and ``sandboxes/docker_images.py`` make (with the Docker
SDK 7), each with the check its request must pass (small checks in
``engine_proxy.validators``, the container the sandbox creates in
``engine_proxy.container_config``); this one holds what they share. Anything not
listed is refused. A check either refuses (``Refused``, said to the client as 403 with
the rule's text) or returns what to forward (``Forward``): the query string rebuilt from
the parameters it validated, and for JSON bodies the document it validated, serialised
again, so the engine never reads anything the proxy did not.

The calls on an existing container or image first look it up on the engine (``Engine``)
and go on only for Arena's own: a container labelled with one of ``CONTAINER_ROLES``, an
image labelled with one of ``IMAGE_ROLES`` whose every tag is in ``IMAGE_REPOSITORIES``.
A container is then addressed by the full id the lookup found, so a name cannot be given
to another container between the check and the call.

Nothing here touches a socket; ``engine_proxy.server`` does the HTTP.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any, Protocol

LABEL_ROLE = "arena.role"
LABEL_OWNER = "arena.owner"

#: The roles of the containers a worker creates: agents (``sandboxes.docker``) and the
#: builder's short probes of an image (``docker_engine.container_run``).
CREATE_ROLES = frozenset({"agent", "build"})
#: The containers a worker may inspect, list, wait for, read, attach to and remove: its
#: own, and the step containers of a revision's build, which a cancelled build removes
#: (they inherit their stage's ``LABEL arena.role=revision-deps``, or ``revision`` in the
#: last stage; a revision's agents are created ``agent``).
CONTAINER_ROLES = CREATE_ROLES | {"revision-deps", "revision"}
#: Images: the imported Debian root file system, the base image, revisions' images and
#: the cache of their dependency stage.
IMAGE_ROLES = frozenset({"rootfs", "base", "revision", "revision-deps"})
#: The repositories Arena's images are tagged in. An image with a tag elsewhere (the
#: application's own image, built from the root file system, inherits its label) is not
#: Arena's to the proxy.
IMAGE_REPOSITORIES = frozenset({"arena-rootfs", "arena-base", "arena-revision"})
#: What workers write (build, tag, remove): revisions' images, with their tags' form and
#: the role their label must give. The base image and its root file system are the
#: operator's (``Policy.base_images``): an image built on them (the application's own)
#: would otherwise take whatever a worker put under their tags.
REVISION_IMAGES = {"arena-revision": ("revision", r"\d{1,18}-[0-9a-f]{12}")}
BASE_IMAGES = {"arena-base": ("base", r"[0-9a-f]{16}"), "arena-rootfs": ("rootfs", r"[0-9a-f]{16}")}
#: Where a bind may appear inside a container: the agent's files and its socket folder
#: (``sandboxes.docker.AGENT_DIR`` and ``SOCKET_DIR``).
BIND_TARGETS = frozenset({"/agent", "/run/arena"})

MAX_JSON_BYTES = 1024 * 1024
#: What the engine may keep of one container's output on disk.
MAX_CONTAINER_LOG_BYTES = 16 * 1024 * 1024
MAX_OPEN_FILES = 65536
ULIMITS = frozenset({"cpu", "nofile", "fsize", "core"})
NO_NEW_PRIVILEGES = frozenset({"no-new-privileges", "no-new-privileges:true"})

#: An image by tag or id, in the engine's own store: no registry host, no path.
IMAGE = r"[a-z0-9][a-zA-Z0-9_.:-]*"


class Refused(Exception):
    """A request the policy does not let through; ``rule`` says which rule refused it."""

    def __init__(self, rule: str, status: int = 403) -> None:
        super().__init__(rule)
        self.rule = rule
        self.status = status


@dataclasses.dataclass(frozen=True)
class Policy:
    """The limits an operator sets (``python -m engine_proxy --help``)."""

    #: Host folders (resolved, without a trailing slash) that binds must lie below.
    bind_roots: tuple[str, ...]
    max_memory_bytes: int
    max_nano_cpus: int
    max_pids: int
    #: A build context or an imported root file system, streamed.
    max_stream_bytes: int = 4 * 1024**3
    #: Workers may also import and build the base image (``BASE_IMAGES``).
    base_images: bool = False

    def writable(self) -> dict[str, tuple[str, str]]:
        """The repositories workers may write: the role of each one's images, its tags' form."""
        return {**REVISION_IMAGES, **(BASE_IMAGES if self.base_images else {})}

    def writable_roles(self) -> frozenset[str]:
        return frozenset({"revision-deps", *(role for role, _ in self.writable().values())})


@dataclasses.dataclass(frozen=True)
class Lookup:
    """The engine's answer to an inspection of a container or an image."""

    status: int
    body: bytes

    def document(self) -> dict[str, Any]:
        parsed = json.loads(self.body)
        return parsed if isinstance(parsed, dict) else {}


class Engine(Protocol):
    """Inspects what a call names, on the real engine, with the client's API version."""

    def container(self, version: str, reference: str) -> Lookup: ...

    def image(self, version: str, reference: str) -> Lookup: ...


@dataclasses.dataclass(frozen=True)
class Call:
    method: str
    #: The API version prefix the client used (``/v1.41``), or "".
    version: str
    #: The path after it.
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    #: The parsed body, for the calls whose body is JSON.
    document: Any = None


@dataclasses.dataclass(frozen=True)
class Forward:
    """What to send the engine (``path`` without the version), or ``answer`` the client
    with (an inspection already made by the check)."""

    path: str
    query: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    #: Serialised again from the validated document, for JSON calls.
    body: bytes | None = None
    #: The client's streamed body (a build context, a root file system) follows.
    stream: bool = False
    #: The connection becomes a raw byte pipe after the engine's 101 (attach).
    upgrade: bool = False
    answer: Lookup | None = None


Check = Callable[[Policy, Engine, Call, re.Match[str]], Forward]


@dataclasses.dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    #: What the request carries: "none", "json" (bounded, parsed) or "stream".
    body: str
    check: Check
