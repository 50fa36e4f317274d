"""The engine proxy's small validators (of query parameters, JSON values and filters), and
the lookups that tell Arena's own containers and images (``engine_proxy.policy``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from engine_proxy.policy import (
    CONTAINER_ROLES,
    IMAGE_REPOSITORIES,
    IMAGE_ROLES,
    LABEL_ROLE,
    Call,
    Lookup,
    Refused,
)


def flag(value: str) -> bool:
    """A boolean query parameter as the engine reads it (``httputils.BoolValue``)."""
    return value.strip().lower() not in {"", "0", "no", "false", "none"}


def params(
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


def boolean(value: str) -> str:
    return "1" if flag(value) else "0"


def false(name: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if flag(value):
            raise Refused(f"{name} must be false")
        return "0"

    return check


def integer(value: str) -> str:
    if not re.fullmatch(r"-?\d{1,19}", value.strip()):
        raise Refused(f"{value!r} is not an integer")
    return value.strip()


def matching(pattern: str, what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise Refused(f"{what} must match {pattern}")
        return value

    return check


def one_of(*choices: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in choices:
            raise Refused(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return check


def json_value(text: str, what: str) -> Any:
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


def role_filters(
    roles: frozenset[str], *, required: dict[str, str] | None = None, optional: tuple[str, ...] = ()
) -> Callable[[str], str]:
    """A ``filters`` parameter that selects by ``arena.role=<one of roles>``."""

    def check(text: str) -> str:
        filters = json_value(text, "filters")
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


def labels(document: Any, what: str) -> dict[str, str]:
    config = (document or {}).get("Config", {}) or {}
    found = config.get("Labels") or {}
    if not isinstance(found, dict):
        raise Refused(f"{what} has labels of the wrong type")
    return found


def repository(tag: str) -> str:
    return tag.rpartition(":")[0] if ":" in tag else tag


def inspected(lookup: Lookup, what: str) -> tuple[dict[str, Any], str | None]:
    """The engine's inspection of ``what`` and its Arena role label; any other answer than
    200 (a 404) is passed on as the engine gave it."""
    if lookup.status != 200:
        raise Answer(lookup)
    document = lookup.document()
    return document, labels(document, what).get(LABEL_ROLE)


def arena_image(lookup: Lookup, reference: str) -> dict[str, Any]:
    """The inspected image, if it is Arena's."""
    document, role = inspected(lookup, "the image")
    if role not in IMAGE_ROLES:
        raise Refused(f"image {reference} is not Arena's: no {LABEL_ROLE} of an Arena image")
    foreign = [
        tag for tag in document.get("RepoTags") or [] if repository(tag) not in IMAGE_REPOSITORIES
    ]
    if foreign:
        raise Refused(f"image {reference} is also tagged outside Arena's repositories")
    return document


def arena_container(lookup: Lookup, reference: str) -> dict[str, Any]:
    """The inspected container, if it is Arena's."""
    document, role = inspected(lookup, "the container")
    if role not in CONTAINER_ROLES:
        raise Refused(
            f"container {reference} is not Arena's: its {LABEL_ROLE} is not one of "
            + ", ".join(sorted(CONTAINER_ROLES))
        )
    if not isinstance(document.get("Id"), str) or not re.fullmatch(r"[0-9a-f]{64}", document["Id"]):
        raise Refused(f"container {reference} has no id the proxy can address")
    return document


class Answer(Exception):
    """The engine's own answer to a lookup (a 404) is the answer to the call."""

    def __init__(self, lookup: Lookup) -> None:
        super().__init__(lookup.status)
        self.lookup = lookup


def answer_of(error: Answer) -> Lookup:
    return error.lookup
