"""Online play's two streaming endpoints as the API documents them: their paths, what a
reply may be, and their part of the OpenAPI document. ``edge.gateway`` serves them."""

from __future__ import annotations

from typing import Any

from api.auth import Access
from sandboxes.seat_bus import SEQ_PART_MAX, SEQ_PATTERN

EVENTS_PATH = "/api/v1/online/events"
REPLY_PATH = "/api/v1/online/reply"


_ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorOut"}


def _errors(*codes: int) -> dict[str, Any]:
    return {
        str(code): {
            "description": description,
            "content": {"application/json": {"schema": _ERROR_SCHEMA}},
        }
        for code, description in {
            400: "Not a well-formed reply (`malformed`), or a bad `Last-Event-ID`.",
            401: "No token, or an unknown or revoked one (`unauthorized`).",
            403: "Not a model token, or the model is disabled (`forbidden`).",
            405: "Wrong method.",
            408: "The body did not arrive in time (`too_slow`).",
            409: "The referee waits for no such reply (`not_your_turn`, `not_playing`).",
            413: "The body is too large (`too_large`).",
            429: "Too many requests (`rate_limited`); see `Retry-After`.",
        }.items()
        if code in codes
    }


#: A ``seq`` a client sends back (``Last-Event-ID``, ``after``), beyond what its pattern
#: says (``sandboxes.seat_bus.seq_is_valid``).
SEQ_DESCRIPTION = (
    "The seq of the last event handled, as it was sent: each of its numbers is at most "
    f"{SEQ_PART_MAX} (64 bits)."
)

#: An ``act``'s id as a reply gives it back: the referee's ids are positive, and a number
#: beyond 64 bits is not read as an integer.
REQUEST_ID_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}

#: A reply, as ``sandboxes.seat_gateway.reply_parse`` takes it (extra fields are kept).
REPLY_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "description": "To a `hello`.",
            "properties": {"type": {"const": "ready"}, "name": {"type": "string"}},
            "required": ["type"],
        },
        {
            "type": "object",
            "description": "To an `act`: one of its `legal_actions`.",
            "properties": {"type": {"const": "action"}, "id": REQUEST_ID_SCHEMA, "action": {}},
            "required": ["type", "id", "action"],
        },
        {
            "type": "object",
            "description": "To an `act`, when the agent's own code failed (a crash, charged).",
            "properties": {
                "type": {"const": "error"},
                "id": REQUEST_ID_SCHEMA,
                "message": {"type": "string"},
                "kind": {"type": "string"},
            },
            "required": ["type", "id"],
        },
    ]
}


#: The components the two endpoints' documentation refers to, beside Django's.
OPENAPI_SCHEMAS: dict[str, Any] = {
    "ReplyAccepted": {
        "type": "object",
        "title": "ReplyAccepted",
        "properties": {
            "accepted": {
                "type": "string",
                "description": "What was answered: `ready` or `act:<id>`.",
            }
        },
        "required": ["accepted"],
    }
}


def openapi_paths() -> dict[str, Any]:
    """The two endpoints served here, for the API's OpenAPI document."""
    security: list[dict[str, list[str]]] = [{"ModelTokenAuth": []}]
    return {
        EVENTS_PATH: {
            "get": {
                "operationId": "online_events",
                "summary": "The stream of events (newline-delimited JSON)",
                "description": "Hold it open while your model plays. Every event has a "
                "`seq`: after a drop, reconnect with `Last-Event-ID: <the last seq you "
                "handled>` and nothing is lost or repeated (the server also ends a stream "
                "after `ARENA_ONLINE_STREAM_SECONDS`, an hour by default). Without it you "
                "get the current duel from its beginning (answers to requests already "
                "answered are refused with 409, which a client may ignore). Lines: "
                "`welcome`, `duel`, the protocol's messages (docs/protocol.md), `ping` "
                "every 15 s, and `closed` with its `reason` when the server ends the "
                "stream because the token no longer plays (revoked, or its model disabled "
                "or deleted). While a stream is open the model counts as connected (it may "
                "be paired); once none is, it is absent.",
                "tags": ["online play"],
                "security": security,
                "x-arena-access": Access.PLAY.value,
                "parameters": [
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "description": f"{SEQ_DESCRIPTION} Empty or absent: from the "
                        "start of the current duel.",
                        "schema": {"type": "string", "pattern": f"^({SEQ_PATTERN.pattern})?$"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "One JSON object per line, for as long as the "
                        "connection stays open.",
                        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                    },
                    **_errors(400, 401, 403, 405, 429),
                },
            }
        },
        REPLY_PATH: {
            "post": {
                "operationId": "online_reply",
                "summary": "Answer the referee",
                "description": "The protocol's reply as the body: `ready` to a `hello`, "
                "`action` (or `error`) with the `id` of an `act`. 409 when the referee "
                "does not wait for that reply (out of turn, answered already, too late, no "
                "duel): nothing is changed.",
                "tags": ["online play"],
                "security": security,
                "x-arena-access": Access.PLAY.value,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": REPLY_SCHEMA}},
                },
                "responses": {
                    "202": {
                        "description": "Handed to the referee.",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/ReplyAccepted"}
                            }
                        },
                    },
                    **_errors(400, 401, 403, 405, 408, 409, 413, 429),
                },
            }
        },
    }
