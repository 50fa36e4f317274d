"""The calls: every route the engine proxy forwards (``ROUTES``), each with its check, and
how a request finds its route (``route``) and is decided (``decide``); the rules they share
are ``engine_proxy.policy``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from engine_proxy.container_config import check_bind, check_container_config, strings
from engine_proxy.policy import (
    CONTAINER_ROLES,
    CREATE_ROLES,
    IMAGE,
    IMAGE_ROLES,
    LABEL_ROLE,
    Call,
    Check,
    Engine,
    Forward,
    Policy,
    Refused,
    Route,
)
from engine_proxy.validators import (
    Answer,
    answer_of,
    arena_container,
    arena_image,
    boolean,
    false,
    integer,
    json_value,
    labels,
    matching,
    one_of,
    params,
    repository,
    role_filters,
)

_NAME = r"[a-zA-Z0-9][a-zA-Z0-9_.-]*"
_IMAGE_ID = re.compile(r"(?:sha256:)?[0-9a-f]{12,64}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CPU_LIST = re.compile(r"\d{1,4}(?:,\d{1,4}){0,1023}")


def _create(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    query = params(call, {"name": matching(f"/?{_NAME}", "a container name")})
    check_container_config(policy, call.document)
    arena_image(engine.image(call.version, call.document["Image"]), call.document["Image"])
    return Forward("/containers/create", query, body=json.dumps(call.document).encode())


def _on_container(
    action: str, allowed: dict[str, Callable[[str], str]], *, upgrade: bool = False
) -> Check:
    """A call on one Arena container, sent to its full id."""

    def check(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
        query = params(call, allowed)
        reference = match.group("id")
        found = arena_container(engine.container(call.version, reference), reference)
        if upgrade and (
            call.headers.get("upgrade", "").lower() != "tcp"
            or "upgrade" not in call.headers.get("connection", "").lower()
        ):
            raise Refused("attach must ask for an upgraded connection (Upgrade: tcp)")
        return Forward(f"/containers/{found['Id']}{action}", query, upgrade=upgrade)

    return check


def _inspect_container(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    params(call, {})
    lookup = engine.container(call.version, match.group("id"))
    arena_container(lookup, match.group("id"))
    return Forward("", answer=lookup)


def _start(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    """Start a container that passed the create rules, checking its binds again: the
    engine resolves them now, and a folder may have become a link since."""
    params(call, {})
    reference = match.group("id")
    found = arena_container(engine.container(call.version, reference), reference)
    if labels(found, "the container").get(LABEL_ROLE) not in CREATE_ROLES:
        raise Refused(f"container {reference} was not created by a worker")
    host = found.get("HostConfig") or {}
    if host.get("Privileged") or host.get("NetworkMode") != "none" or host.get("CapAdd"):
        raise Refused(f"container {reference} is not confined as the create rules require")
    for bind in strings(host.get("Binds"), "HostConfig.Binds"):
        check_bind(policy, bind)
    return Forward(f"/containers/{found['Id']}/start")


def _pin(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    """An agent's container moved to its duel's CPU (``docker_engine.container_pin``): its
    cpuset and nothing else, so no limit it was created with can be lifted."""
    params(call, {})
    document = call.document
    if not isinstance(document, dict) or set(document) != {"CpusetCpus"}:
        raise Refused("an update may set CpusetCpus only")
    cpus = document["CpusetCpus"]
    if not isinstance(cpus, str) or not _CPU_LIST.fullmatch(cpus):
        raise Refused("CpusetCpus must list CPU numbers, such as 0 or 0,2")
    reference = match.group("id")
    found = arena_container(engine.container(call.version, reference), reference)
    if labels(found, "the container").get(LABEL_ROLE) != "agent":
        raise Refused(f"container {reference} is not an agent's: only agents are pinned")
    return Forward(
        f"/containers/{found['Id']}/update", body=json.dumps({"CpusetCpus": cpus}).encode()
    )


def _list_containers(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    query = params(
        call,
        {
            "all": boolean,
            "limit": integer,
            "size": boolean,
            "trunc_cmd": boolean,
            "filters": role_filters(CONTAINER_ROLES),
        },
        required=("filters",),
    )
    return Forward("/containers/json", query)


def _inspect_image(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    params(call, {})
    lookup = engine.image(call.version, match.group("name"))
    arena_image(lookup, match.group("name"))
    return Forward("", answer=lookup)


def _list_images(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    query = params(
        call,
        {"only_ids": boolean, "all": boolean, "filters": role_filters(IMAGE_ROLES)},
        required=("filters",),
    )
    return Forward("/images/json", query)


def _remove_image(policy: Policy, engine: Engine, call: Call, match: re.Match[str]) -> Forward:
    query = params(call, {"force": false("force"), "noprune": boolean})
    reference = match.group("name")
    found = arena_image(engine.image(call.version, reference), reference)
    role = labels(found, "the image").get(LABEL_ROLE)
    tags = found.get("RepoTags") or []
    if role not in policy.writable_roles() or any(
        repository(tag) not in policy.writable() for tag in tags
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
    filters = role_filters(
        frozenset({"revision-deps"}), required={"dangling": "true"}, optional=("until",)
    )
    query = params(call, {"filters": filters}, required=("filters",))
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
    query = params(
        call,
        {
            "fromSrc": one_of("-"),
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
    labels = json_value(text, "labels")
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise Refused("labels must be an object of strings")
    return json.dumps(labels)


def _build_arguments(text: str) -> str:
    # With no network in the build, arguments only reach the Dockerfile's own ARG lines;
    # they are bounded and plain so they cannot smuggle lines into it.
    arguments = json_value(text, "buildargs")
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
    query = params(
        call,
        {
            "t": lambda value: value,
            "q": boolean,
            "nocache": boolean,
            "rm": boolean,
            "forcerm": boolean,
            "pull": false("pull"),
            "dockerfile": one_of("Dockerfile"),
            "labels": _build_labels,
            "buildargs": _build_arguments,
            "networkmode": one_of("none"),
            "memory": integer,
            "memswap": integer,
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
        return Forward(path, params(call, {}))

    return check


_ID = rf"(?P<id>{_NAME})"

#: Every call the proxy forwards; the SDK function of ``docker_engine`` or ``docker_images``
#: that makes it.
ROUTES = [
    Route("GET", re.compile(r"/_ping"), "none", _system("/_ping")),  # ping
    Route("HEAD", re.compile(r"/_ping"), "none", _system("/_ping")),
    Route("GET", re.compile(r"/version"), "none", _system("/version")),  # API negotiation
    Route("POST", re.compile(r"/containers/create"), "json", _create),  # containers.create
    Route("POST", re.compile(rf"/containers/{_ID}/start"), "none", _start),
    Route("GET", re.compile(rf"/containers/{_ID}/json"), "none", _inspect_container),
    Route("POST", re.compile(rf"/containers/{_ID}/update"), "json", _pin),  # container_pin
    # container_stop: SIGKILL alone, no more than the forced removal below does.
    Route(
        "POST",
        re.compile(rf"/containers/{_ID}/kill"),
        "none",
        _on_container("/kill", {"signal": one_of("KILL", "SIGKILL", "9")}),
    ),
    Route(
        "POST",
        re.compile(rf"/containers/{_ID}/wait"),
        "none",
        _on_container("/wait", {"condition": one_of("not-running", "next-exit", "removed")}),
    ),
    Route(
        "GET",
        re.compile(rf"/containers/{_ID}/logs"),
        "none",
        _on_container(
            "/logs",
            {
                "stdout": boolean,
                "stderr": boolean,
                "timestamps": boolean,
                "follow": boolean,
                "tail": matching(r"all|\d+", "tail"),
                "since": integer,
                "until": integer,
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
                "stdin": boolean,
                "stdout": boolean,
                "stderr": boolean,
                "stream": boolean,
                "logs": boolean,
            },
            upgrade=True,
        ),
    ),
    Route(
        "DELETE",
        re.compile(rf"/containers/{_ID}"),
        "none",
        _on_container("", {"v": boolean, "force": boolean, "link": false("link")}),
    ),
    Route("GET", re.compile(r"/containers/json"), "none", _list_containers),
    Route("GET", re.compile(rf"/images/(?P<name>{IMAGE})/json"), "none", _inspect_image),
    Route("GET", re.compile(r"/images/json"), "none", _list_images),
    Route("DELETE", re.compile(rf"/images/(?P<name>{IMAGE})"), "none", _remove_image),
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
    except Answer as answer:
        return Forward("", answer=answer_of(answer))
