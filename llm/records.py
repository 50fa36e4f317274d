"""An LLM player's conversation for one match, as recorded (the JSON documented in
``docs/llm.md``), and the counts its statistics are made of."""

from __future__ import annotations

import copy
from typing import Any

#: A turn's outcome: what became of the move.
LEGAL = "legal"
ILLEGAL = "illegal"
UNPARSEABLE = "unparseable"
TIMEOUT = "timeout"
PROVIDER_FAILURE = "provider_failure"
#: Still being asked when the match ended (its clock ran out, or the match ended early).
UNANSWERED = "unanswered"
PENDING = "pending"


def conversation_summary(conversation: dict[str, Any]) -> dict[str, Any]:
    """Counts over a conversation's turns: moves asked, requests made, refused answers by
    kind, retries (of refused answers, and of the provider's failures), tokens and each
    move's latency (milliseconds)."""
    summary: dict[str, Any] = {
        "moves": 0,
        "requests": 0,
        "illegal": 0,
        "unparseable": 0,
        "too_long": 0,
        "retries": 0,
        "provider_retries": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "latencies_ms": [],
    }
    for turn in conversation.get("turns", []):
        summary["moves"] += 1
        attempts = turn.get("attempts", [])
        summary["requests"] += len(attempts)
        summary["retries"] += sum(1 for attempt in attempts if attempt.get("kind") == "retry")
        for attempt in attempts:
            verdict = attempt.get("verdict")
            if verdict in ("illegal", "unparseable", "too_long"):
                summary[verdict] += 1
            summary["provider_retries"] += len(attempt.get("provider_errors", []))
            summary["prompt_tokens"] += attempt.get("prompt_tokens") or 0
            summary["completion_tokens"] += attempt.get("completion_tokens") or 0
        if turn.get("outcome") == LEGAL and turn.get("latency_ms") is not None:
            summary["latencies_ms"].append(turn["latency_ms"])
    return summary


def finished(conversation: dict[str, Any]) -> dict[str, Any]:
    """A copy of a match's conversation as it stands when the match is over: a turn still
    being asked is marked unanswered, and the summary is added."""
    document = copy.deepcopy(conversation)
    for turn in document.get("turns", []):
        if turn.get("outcome") == PENDING:
            turn["outcome"] = UNANSWERED
    document["summary"] = conversation_summary(document)
    return document
