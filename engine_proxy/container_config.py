"""Container create: the sandbox's confinement, the only shape of a container the engine
proxy lets a worker create (``engine_proxy.policy``)."""

from __future__ import annotations

import os
import re
from typing import Any

from engine_proxy.policy import (
    BIND_TARGETS,
    CREATE_ROLES,
    IMAGE,
    LABEL_OWNER,
    LABEL_ROLE,
    MAX_CONTAINER_LOG_BYTES,
    MAX_OPEN_FILES,
    NO_NEW_PRIVILEGES,
    ULIMITS,
    Policy,
    Refused,
)

_USER = re.compile(r"(\d+)(?::(\d+))?")
_SIZE = re.compile(r"(\d+)([kmg]?)")
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


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


def strings(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Refused(f"{what} must be a list of strings")
    return value


def check_bind(policy: Policy, bind: str) -> None:
    """``source:target:ro`` with ``source`` a real folder below a bind root.

    The source must be its own resolved path (no ``..``, no symbolic link anywhere on it)
    and exist: the engine follows links and creates missing sources, as root, when it
    starts the container, so it is checked again at start (``routes._start``).
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
    if not isinstance(config.get("Image"), str) or not re.fullmatch(IMAGE, config["Image"]):
        raise Refused("Image must be the name of a local image (a tag or an id)")
    strings(config.get("Env"), "Env")
    strings(config.get("Cmd"), "Cmd")
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
    if strings(host.get("CapDrop"), "HostConfig.CapDrop") != ["ALL"]:
        raise Refused("HostConfig.CapDrop must be [ALL]")
    options = strings(host.get("SecurityOpt"), "HostConfig.SecurityOpt")
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
    for bind in strings(host.get("Binds"), "HostConfig.Binds"):
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
