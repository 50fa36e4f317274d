"""Every Docker Engine API call the engine proxy lets through, and the rules each must pass.

This module is the policy, whole: ``ROUTES`` lists the calls ``sandboxes/docker_engine.py``
makes (with the Docker SDK 7), each with the check its request must pass. Anything not
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
import os
import re
from collections.abc import Callable
from typing import Any, Protocol

LABEL_ROLE = "arena.role"
LABEL_OWNER = "arena.owner"

#: The roles of the containers a worker creates: agents (``sandboxes.docker``) and the
#: builder's short probes of an image (``docker_engine.container_run``).
CREATE_ROLES = frozenset({"agent", "build"})
#: The containers a worker may inspect, list, wait for, read, attach to and remove: its
#: own, and the step containers of a revision's dependency stage, which a cancelled build
#: removes (they inherit the stage's ``LABEL arena.role=revision-deps``).
CONTAINER_ROLES = CREATE_ROLES | {"revision-deps"}
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

_NAME = r"[a-zA-Z0-9][a-zA-Z0-9_.-]*"
#: An image by tag or id, in the engine's own store: no registry host, no path.
_IMAGE = r"[a-z0-9][a-zA-Z0-9_.:-]*"
_IMAGE_ID = re.compile(r"(?:sha256:)?[0-9a-f]{12,64}")
_USER = re.compile(r"(\d+)(?::(\d+))?")
_SIZE = re.compile(r"(\d+)([kmg]?)")
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


# -- small validators ------------------------------------------------------------------


def flag(value: str) -> bool:
    """A boolean query parameter as the engine reads it (``httputils.BoolValue``)."""
    return value.strip().lower() not in {"", "0", "no", "false", "none"}


def _params(
    call: Call,
    allowed: dict[str, Callable[[str], str]],
    *,
    required: tuple[str, ...] = (),
    repeatable: tuple[str, ...] = (),
) -> dict[str, list[str]]:
    """The query parameters ``allowed`` names, each validated and normalised by its function."""
    checked: dict[str, list[str]] = {}
    for name, values in call.query.items():
        if name not in allowed:
            raise Refused(f"query parameter {name!r} is not allowed on this call")
        if len(values) > 1 and name not in repeatable:
            raise Refused(f"query parameter {name!r} given more than once")
        checked[name] = [allowed[name](value) for value in values]
    for name in required:
        if name not in checked:
            raise Refused(f"query parameter {name!r} is required on this call")
    return checked


def _boolean(value: str) -> str:
    return "1" if flag(value) else "0"


def _false(name: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if flag(value):
            raise Refused(f"{name} must be false")
        return "0"

    return check


def _integer(value: str) -> str:
    if not re.fullmatch(r"-?\d{1,19}", value.strip()):
        raise Refused(f"{value!r} is not an integer")
    return value.strip()


def _matching(pattern: str, what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise Refused(f"{what} must match {pattern}")
        return value

    return check


def _one_of(*choices: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in choices:
            raise Refused(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return check


def _json_value(text: str, what: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except ValueError:
        raise Refused(f"{what} is not valid JSON") from None


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object with each key once: the engine (Go) and Python must read the same."""
    document = dict(pairs)
    if len(document) != len(pairs):
        raise Refused("a JSON object repeats a key")
    return document


def _role_filters(
    roles: frozenset[str], *, required: dict[str, str] | None = None, optional: tuple[str, ...] = ()
) -> Callable[[str], str]:
    """A ``filters`` parameter that selects by ``arena.role=<one of roles>``."""

    def check(text: str) -> str:
        filters = _json_value(text, "filters")
        if not isinstance(filters, dict):
            raise Refused("filters must be a JSON object")
        normalised: dict[str, list[str]] = {}
        for key, values in filters.items():
            # The SDK sends lists; the engine also takes {"value": true} maps.
            if isinstance(values, dict) and all(value is True for value in values.values()):
                values = list(values)
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise Refused(f"filter {key!r} must be a list of strings")
            normalised[key] = values
        allowed = {"label", *(required or {}), *optional}
        for key in normalised:
            if key not in allowed:
                raise Refused(f"filter {key!r} is not allowed here")
        for key, value in (required or {}).items():
            if normalised.get(key) != [value]:
                raise Refused(f"filters must have {key}={value}")
        labelled = {
            value.partition("=")[2]
            for value in normalised.get("label", [])
            if value.partition("=")[0] == LABEL_ROLE
        }
        if not labelled or not labelled <= roles:
            raise Refused(f"filters must select {LABEL_ROLE}=<one of {', '.join(sorted(roles))}>")
        return json.dumps(normalised)

    return check


def _labels(document: Any, what: str) -> dict[str, str]:
    config = (document or {}).get("Config", {}) or {}
    found = config.get("Labels") or {}
    if not isinstance(found, dict):
        raise Refused(f"{what} has labels of the wrong type")
    return found


def _repository(tag: str) -> str:
    return tag.rpartition(":")[0] if ":" in tag else tag


def _arena_image(lookup: Lookup, reference: str) -> dict[str, Any]:
    """The inspected image, if it is Arena's; a 404 is passed on as the engine said it."""
    if lookup.status != 200:
        raise _Answer(lookup)
    document = lookup.document()
    role = _labels(document, "the image").get(LABEL_ROLE)
    if role not in IMAGE_ROLES:
        raise Refused(f"image {reference} is not Arena's: no {LABEL_ROLE} of an Arena image")
    foreign = [
        tag for tag in document.get("RepoTags") or [] if _repository(tag) not in IMAGE_REPOSITORIES
    ]
    if foreign:
        raise Refused(f"image {reference} is also tagged outside Arena's repositories")
    return document


def _arena_container(lookup: Lookup, reference: str) -> dict[str, Any]:
    if lookup.status != 200:
        raise _Answer(lookup)
    document = lookup.document()
    role = _labels(document, "the container").get(LABEL_ROLE)
    if role not in CONTAINER_ROLES:
        raise Refused(
            f"container {reference} is not Arena's: its {LABEL_ROLE} is not one of "
            + ", ".join(sorted(CONTAINER_ROLES))
        )
    if not isinstance(document.get("Id"), str) or not re.fullmatch(r"[0-9a-f]{64}", document["Id"]):
        raise Refused(f"container {reference} has no id the proxy can address")
    return document


class _Answer(Exception):
    """The engine's own answer to a lookup (a 404) is the answer to the call."""

    def __init__(self, lookup: Lookup) -> None:
        super().__init__(lookup.status)
        self.lookup = lookup


def answer_of(error: _Answer) -> Lookup:
    return error.lookup


# -- container create: the sandbox's confinement ----------------------------------------


def _size(value: str, what: str) -> int:
    match = _SIZE.fullmatch(value.strip().lower())
    if not match:
        raise Refused(f"{what} must be a size in bytes (with k, m or g)")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2)]


def _integer_field(config: dict[str, Any], key: str, *, most: int) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= most:
        raise Refused(f"HostConfig.{key} must be set, above 0 and at most {most}")
    return value


def _strings(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Refused(f"{what} must be a list of strings")
    return value


def check_bind(policy: Policy, bind: str) -> None:
    """``source:target:ro`` with ``source`` a real folder below a bind root.

    The source must be its own resolved path (no ``..``, no symbolic link anywhere on it)
    and exist: the engine follows links and creates missing sources, as root, when it
    starts the container, so it is checked again at start (``_start``).
    """
    parts = bind.split(":")
    if len(parts) != 3 or parts[2] != "ro":
        raise Refused(f"bind {bind!r} must be source:target:ro (read-only, no other option)")
    source, target, _ = parts
    if target not in BIND_TARGETS:
        raise Refused(f"bind target {target!r} is not one of {', '.join(sorted(BIND_TARGETS))}")
    if not source.startswith("/") or os.path.normpath(source) != source:
        raise Refused(f"bind source {source!r} is not a plain absolute path")
    try:
        resolved = os.path.realpath(source, strict=True)
    except OSError:
        raise Refused(f"bind source {source!r} does not exist") from None
    if resolved != source:
        raise Refused(f"bind source {source!r} goes through a symbolic link")
    if not os.path.isdir(resolved):
        raise Refused(f"bind source {source!r} is not a folder")
    if not any(resolved.startswith(root + "/") for root in policy.bind_roots):
        raise Refused(f"bind source {source!r} is not below an allowed bind root")


_TOP_LEVEL = {
    "Hostname", "User", "Tty", "OpenStdin", "StdinOnce", "AttachStdin", "AttachStdout",
    "AttachStderr", "Env", "Cmd", "Image", "Volumes", "NetworkDisabled", "WorkingDir",
    "Labels", "HostConfig",
}  # fmt: skip
_HOST_CONFIG = {
    "Memory", "MemorySwap", "NanoCpus", "PidsLimit", "ReadonlyRootfs", "NetworkMode",
    "CapDrop", "SecurityOpt", "Binds", "Ulimits", "LogConfig", "Tmpfs", "Init", "IpcMode",
    "ShmSize",
}  # fmt: skip
_BOOLEANS = {
    "Tty",
    "OpenStdin",
    "StdinOnce",
    "AttachStdin",
    "AttachStdout",
    "AttachStderr",
    "NetworkDisabled",
}


def check_container_config(policy: Policy, config: Any) -> None:
    """A container the sandbox would create: the only shape ``/containers/create`` takes.

    Every field must be one the sandbox sends, spelled as it spells it (the engine reads
    JSON field names case-insensitively, so an unknown spelling is refused, never
    ignored); ``Privileged``, ``CapAdd``, ``Devices``, namespace modes (but ``IpcMode``,
    which must be ``private``), ``Mounts``,
    ``VolumesFrom``, ``Runtime``... are not among them.
    """
    if not isinstance(config, dict):
        raise Refused("the body must be a JSON object")
    unknown = sorted(set(config) - _TOP_LEVEL)
    if unknown:
        raise Refused(f"container field {unknown[0]} is not allowed")
    for key in _BOOLEANS & set(config):
        if not isinstance(config[key], bool):
            raise Refused(f"{key} must be true or false")
    user = config.get("User")
    match = _USER.fullmatch(user) if isinstance(user, str) else None
    if not match or int(match.group(1)) == 0 or match.group(2) in {"0"}:
        raise Refused("User must be a numeric uid[:gid] other than root's")
    labels = config.get("Labels")
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise Refused("Labels must be an object of strings")
    if labels.get(LABEL_ROLE) not in CREATE_ROLES:
        raise Refused(f"{LABEL_ROLE} must be one of {', '.join(sorted(CREATE_ROLES))}")
    if not labels.get(LABEL_OWNER):
        raise Refused(f"{LABEL_OWNER} must be set")
    if not isinstance(config.get("Image"), str) or not re.fullmatch(_IMAGE, config["Image"]):
        raise Refused("Image must be the name of a local image (a tag or an id)")
    _strings(config.get("Env"), "Env")
    _strings(config.get("Cmd"), "Cmd")
    for key in ("Hostname", "WorkingDir"):
        if config.get(key) is not None and not isinstance(config[key], str):
            raise Refused(f"{key} must be a string")
    volumes = config.get("Volumes") or {}
    if not isinstance(volumes, dict) or any(
        target not in BIND_TARGETS or value != {} for target, value in volumes.items()
    ):
        raise Refused(f"Volumes may only name {', '.join(sorted(BIND_TARGETS))}")
    _check_host_config(policy, config.get("HostConfig"))


def _check_host_config(policy: Policy, host: Any) -> None:
    if not isinstance(host, dict):
        raise Refused("HostConfig must be set")
    unknown = sorted(set(host) - _HOST_CONFIG)
    if unknown:
        raise Refused(f"HostConfig.{unknown[0]} is not allowed")
    if host.get("NetworkMode") != "none":
        raise Refused("HostConfig.NetworkMode must be none")
    if host.get("ReadonlyRootfs") is not True:
        raise Refused("HostConfig.ReadonlyRootfs must be true")
    if host.get("IpcMode") != "private":
        raise Refused("HostConfig.IpcMode must be private (its own IPC and /dev/shm)")
    if _strings(host.get("CapDrop"), "HostConfig.CapDrop") != ["ALL"]:
        raise Refused("HostConfig.CapDrop must be [ALL]")
    options = _strings(host.get("SecurityOpt"), "HostConfig.SecurityOpt")
    if not options or not set(options) <= NO_NEW_PRIVILEGES:
        raise Refused("HostConfig.SecurityOpt must be no-new-privileges, and nothing else")
    memory = _integer_field(host, "Memory", most=policy.max_memory_bytes)
    # Its own /dev/shm, counted in the container's memory as its /tmp is.
    _integer_field(host, "ShmSize", most=memory)
    if host.get("MemorySwap") != memory:
        raise Refused("HostConfig.MemorySwap must equal HostConfig.Memory (no swap)")
    _integer_field(host, "NanoCpus", most=policy.max_nano_cpus)
    _integer_field(host, "PidsLimit", most=policy.max_pids)
    if host.get("Init") is not None and not isinstance(host["Init"], bool):
        raise Refused("HostConfig.Init must be true or false")
    for bind in _strings(host.get("Binds"), "HostConfig.Binds"):
        check_bind(policy, bind)
    _check_ulimits(host.get("Ulimits"))
    _check_log_config(host.get("LogConfig"))
    _check_tmpfs(host.get("Tmpfs"))


def _check_ulimits(ulimits: Any) -> None:
    for ulimit in ulimits or []:
        if not isinstance(ulimit, dict) or set(ulimit) != {"Name", "Soft", "Hard"}:
            raise Refused("HostConfig.Ulimits entries must be {Name, Soft, Hard}")
        soft, hard = ulimit["Soft"], ulimit["Hard"]
        if ulimit["Name"] not in ULIMITS:
            raise Refused(f"ulimit {ulimit['Name']!r} is not one of {', '.join(sorted(ULIMITS))}")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (soft, hard)) or not (
            0 <= soft <= hard
        ):
            raise Refused("ulimit values must be integers with 0 <= Soft <= Hard")
        if ulimit["Name"] == "nofile" and hard > MAX_OPEN_FILES:
            raise Refused(f"the nofile ulimit may be at most {MAX_OPEN_FILES}")


def _check_log_config(log_config: Any) -> None:
    # Another logging driver would have the engine send output elsewhere (syslog,
    # fluentd, a cloud's API with the host's credentials...).
    if not isinstance(log_config, dict) or log_config.get("Type") != "json-file":
        raise Refused("HostConfig.LogConfig must use the json-file driver")
    options = log_config.get("Config")
    if set(log_config) - {"Type", "Config"} or not isinstance(options, dict):
        raise Refused("HostConfig.LogConfig must be {Type, Config}")
    if set(options) - {"max-size", "max-file"} or "max-size" not in options:
        raise Refused("HostConfig.LogConfig.Config takes max-size (required) and max-file")
    size = _size(str(options["max-size"]), "log max-size")
    files = str(options.get("max-file", "1"))
    if not files.isdigit() or not 0 < size * int(files) <= MAX_CONTAINER_LOG_BYTES:
        raise Refused(f"a container's log may keep at most {MAX_CONTAINER_LOG_BYTES} bytes")


def _check_tmpfs(tmpfs: Any) -> None:
    if tmpfs is None:
        return
    if not isinstance(tmpfs, dict) or set(tmpfs) - {"/tmp"}:
        raise Refused("HostConfig.Tmpfs may only mount /tmp")
    for options in tmpfs.values():
        if not isinstance(options, str):
            raise Refused("tmpfs options must be a string")
        for option in options.split(","):
            name, _, value = option.partition("=")
            if name == "size":
                _size(value, "tmpfs size")  # counted in the container's memory
            elif not (name == "mode" and re.fullmatch(r"[0-7]{3,4}", value)):
                raise Refused(f"tmpfs option {option!r} is not allowed (size and mode only)")


# -- the calls ---------------------------------------------------------------------------


def _create(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    query = _params(call, {"name": _matching(f"/?{_NAME}", "a container name")})
    check_container_config(policy, call.document)
    _arena_image(engine.image(call.version, call.document["Image"]), call.document["Image"])
    return Forward("/containers/create", query, body=json.dumps(call.document).encode())


def _on_container(
    action: str, allowed: dict[str, Callable[[str], str]], *, upgrade: bool = False
) -> Check:
    """A call on one Arena container, sent to its full id."""

    def check(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
        query = _params(call, allowed)
        reference = match.group("id")
        found = _arena_container(engine.container(call.version, reference), reference)
        if upgrade and (
            call.headers.get("upgrade", "").lower() != "tcp"
            or "upgrade" not in call.headers.get("connection", "").lower()
        ):
            raise Refused("attach must ask for an upgraded connection (Upgrade: tcp)")
        return Forward(f"/containers/{found['Id']}{action}", query, upgrade=upgrade)

    return check


def _inspect_container(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    _params(call, {})
    lookup = engine.container(call.version, match.group("id"))
    _arena_container(lookup, match.group("id"))
    return Forward("", answer=lookup)


def _start(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    """Start a container that passed the create rules, checking its binds again: the
    engine resolves them now, and a folder may have become a link since."""
    _params(call, {})
    reference = match.group("id")
    found = _arena_container(engine.container(call.version, reference), reference)
    if _labels(found, "the container").get(LABEL_ROLE) not in CREATE_ROLES:
        raise Refused(f"container {reference} was not created by a worker")
    host = found.get("HostConfig") or {}
    if host.get("Privileged") or host.get("NetworkMode") != "none" or host.get("CapAdd"):
        raise Refused(f"container {reference} is not confined as the create rules require")
    for bind in _strings(host.get("Binds"), "HostConfig.Binds"):
        check_bind(policy, bind)
    return Forward(f"/containers/{found['Id']}/start")


def _list_containers(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    query = _params(
        call,
        {
            "all": _boolean,
            "limit": _integer,
            "size": _boolean,
            "trunc_cmd": _boolean,
            "filters": _role_filters(CONTAINER_ROLES),
        },
        required=("filters",),
    )
    return Forward("/containers/json", query)


def _inspect_image(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    _params(call, {})
    lookup = engine.image(call.version, match.group("name"))
    _arena_image(lookup, match.group("name"))
    return Forward("", answer=lookup)


def _list_images(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    query = _params(
        call,
        {"only_ids": _boolean, "all": _boolean, "filters": _role_filters(IMAGE_ROLES)},
        required=("filters",),
    )
    return Forward("/images/json", query)


def _remove_image(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    query = _params(call, {"force": _false("force"), "noprune": _boolean})
    reference = match.group("name")
    found = _arena_image(engine.image(call.version, reference), reference)
    role = _labels(found, "the image").get(LABEL_ROLE)
    tags = found.get("RepoTags") or []
    if role not in policy.writable_roles() or any(
        _repository(tag) not in policy.writable() for tag in tags
    ):
        raise Refused(f"image {reference} is not one workers may remove")
    if _IMAGE_ID.fullmatch(reference):
        return Forward(f"/images/{found['Id']}", query)
    # By tag: the tag goes (and the image with its last tag).
    if reference not in tags:
        raise Refused(f"image {reference} must be named by a tag it has, or by its id")
    return Forward(f"/images/{reference}", query)


def _prune_images(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    """Untagged images of the dependency stages' cache: what the builder's clean-up prunes."""
    filters = _role_filters(
        frozenset({"revision-deps"}), required={"dangling": "true"}, optional=("until",)
    )
    query = _params(call, {"filters": filters}, required=("filters",))
    return Forward("/images/prune", query)


def _writable_tag(policy: Policy, repository: str, tag: str, role: str | None) -> None:
    """``repository:tag`` is one workers may write, for an image labelled ``role``."""
    writable = policy.writable()
    if repository not in writable:
        raise Refused(
            f"workers may only write images in {', '.join(sorted(writable))}"
            + ("" if policy.base_images else " (the base image is the operator's)")
        )
    wanted, form = writable[repository]
    if not re.fullmatch(form, tag):
        raise Refused(f"a tag of {repository} must match {form}")
    if role != wanted:
        raise Refused(f"an image of {repository} must be labelled {LABEL_ROLE}={wanted}")


def _import_change(value: str) -> str:
    instruction = value.split(None, 1)[0].upper() if value.strip() else ""
    if instruction not in {"LABEL", "ENV"} or "\n" in value or "\r" in value:
        raise Refused("an import's changes may only be LABEL and ENV lines")
    return value


def _import(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    """``docker import`` of the root file system in the request's body, never a URL or a pull."""
    query = _params(
        call,
        {
            "fromSrc": _one_of("-"),
            "repo": lambda value: value,
            "tag": lambda value: value,
            "changes": _import_change,
            "message": lambda value: value,
        },
        required=("fromSrc", "repo", "tag"),
        repeatable=("changes",),
    )
    roles = [
        change.split("=", 1)[1]
        for change in query.get("changes", [])
        if change.startswith(f"LABEL {LABEL_ROLE}=")
    ]
    role = roles[0] if len(roles) == 1 else None
    _writable_tag(policy, query["repo"][0], query["tag"][0], role)
    return Forward("/images/create", query, stream=True)


def _build_labels(text: str) -> str:
    labels = _json_value(text, "labels")
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise Refused("labels must be an object of strings")
    return json.dumps(labels)


def _build_arguments(text: str) -> str:
    # With no network in the build, arguments only reach the Dockerfile's own ARG lines;
    # they are bounded and plain so they cannot smuggle lines into it.
    arguments = _json_value(text, "buildargs")
    if not isinstance(arguments, dict) or not all(
        _ENV_NAME.fullmatch(name) and isinstance(value, str) and value.isprintable()
        for name, value in arguments.items()
    ):
        raise Refused("buildargs must map plain names to printable strings")
    return json.dumps(arguments)


def _build(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    """A classic build of the tar archive in the body, with no network, no pull, Arena's
    tag and labels, and a memory limit on its steps."""
    limit = str(policy.max_memory_bytes)
    query = _params(
        call,
        {
            "t": lambda value: value,
            "q": _boolean,
            "nocache": _boolean,
            "rm": _boolean,
            "forcerm": _boolean,
            "pull": _false("pull"),
            "dockerfile": _one_of("Dockerfile"),
            "labels": _build_labels,
            "buildargs": _build_arguments,
            "networkmode": _one_of("none"),
            "memory": _integer,
            "memswap": _integer,
        },
        required=("t", "labels", "networkmode", "memory", "memswap"),
    )
    repository, _, tag = query["t"][0].partition(":")
    _writable_tag(policy, repository, tag, json.loads(query["labels"][0]).get(LABEL_ROLE))
    memory = int(query["memory"][0])
    if not 0 < memory <= policy.max_memory_bytes:
        raise Refused(f"a build's memory must be above 0 and at most {limit}")
    if query["memswap"] != query["memory"]:
        raise Refused("a build's memswap must equal its memory (no swap)")
    if call.headers.get("content-encoding"):
        raise Refused("a build context must be a plain tar archive")
    return Forward("/build", query, stream=True)


def _system(path: str) -> Check:
    def check(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
        return Forward(path, _params(call, {}))

    return check


_ID = rf"(?P<id>{_NAME})"

#: Every call the proxy forwards; the SDK function of ``docker_engine`` that makes it.
ROUTES = [
    Route("GET", re.compile(r"/_ping"), "none", _system("/_ping")),  # ping
    Route("HEAD", re.compile(r"/_ping"), "none", _system("/_ping")),
    Route("GET", re.compile(r"/version"), "none", _system("/version")),  # API negotiation
    Route("POST", re.compile(r"/containers/create"), "json", _create),  # containers.create
    Route("POST", re.compile(rf"/containers/{_ID}/start"), "none", _start),
    Route("GET", re.compile(rf"/containers/{_ID}/json"), "none", _inspect_container),
    Route(
        "POST",
        re.compile(rf"/containers/{_ID}/wait"),
        "none",
        _on_container("/wait", {"condition": _one_of("not-running", "next-exit", "removed")}),
    ),
    Route(
        "GET",
        re.compile(rf"/containers/{_ID}/logs"),
        "none",
        _on_container(
            "/logs",
            {
                "stdout": _boolean,
                "stderr": _boolean,
                "timestamps": _boolean,
                "follow": _boolean,
                "tail": _matching(r"all|\d+", "tail"),
                "since": _integer,
                "until": _integer,
            },
        ),
    ),
    Route(
        "POST",
        re.compile(rf"/containers/{_ID}/attach"),
        "none",
        _on_container(
            "/attach",
            {
                "stdin": _boolean,
                "stdout": _boolean,
                "stderr": _boolean,
                "stream": _boolean,
                "logs": _boolean,
            },
            upgrade=True,
        ),
    ),
    Route(
        "DELETE",
        re.compile(rf"/containers/{_ID}"),
        "none",
        _on_container("", {"v": _boolean, "force": _boolean, "link": _false("link")}),
    ),
    Route("GET", re.compile(r"/containers/json"), "none", _list_containers),
    Route("GET", re.compile(rf"/images/(?P<name>{_IMAGE})/json"), "none", _inspect_image),
    Route("GET", re.compile(r"/images/json"), "none", _list_images),
    Route("DELETE", re.compile(rf"/images/(?P<name>{_IMAGE})"), "none", _remove_image),
    Route("POST", re.compile(r"/images/prune"), "none", _prune_images),
    Route("POST", re.compile(r"/images/create"), "stream", _import),  # import_image_from_file
    Route("POST", re.compile(r"/build"), "stream", _build),
]

_VERSION = re.compile(r"(/v\d{1,2}\.\d{1,3})?(/.*)")


def route(method: str, path: str) -> tuple[Route, str, str, re.Match[str]]:
    """The route of a call, its API version prefix, its path after it and the match."""
    split = _VERSION.fullmatch(path)
    if split is None or "//" in path or "/." in path:
        raise Refused(f"{path!r} is not a path the proxy forwards")
    version, rest = split.group(1) or "", split.group(2)
    for candidate in ROUTES:
        found = candidate.pattern.fullmatch(rest)
        if found and candidate.method == method:
            return candidate, version, rest, found
    raise Refused(f"{method} {rest} is not a call Arena makes")


def decide(
    policy: Policy, engine: Engine, chosen: Route, call: Call, found: re.Match[str]
) -> Forward:
    """What the route's check makes of ``call``; an inspection that found nothing
    (the engine's 404) is the answer."""
    try:
        return chosen.check(policy, engine, call, found)
    except _Answer as answer:
        return Forward("", answer=answer_of(answer))
