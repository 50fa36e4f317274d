"""The files a command-line run with LLM players leaves behind, as users of LLM game
benchmarks expect them: ``game_results.json`` (every game), one conversation file per
game (``conversations/game_<n>.json``) and ``game_summary_<model>.json`` per LLM player.

They are made from the duel's JSON document (``referee``'s ``DuelResult.as_json``), so
nothing here depends on how the duel was played.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

from llm.records import conversation_summary


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


def _names(document: dict[str, Any]) -> dict[int, str]:
    """Each duel player's name, by its number (1 to N)."""
    return dict(enumerate(document["players"], start=1))


def _won(match: dict[str, Any], player: int) -> bool:
    """``player`` had the best score of the match, shared with nobody."""
    ranks = match["ranks"]
    return match["result"] != "ERROR" and ranks[player - 1] == 1 and ranks.count(1) == 1


def _winner(match: dict[str, Any], names: dict[int, str]) -> str | None:
    return next((name for player, name in names.items() if _won(match, player)), None)


def player_summary(document: dict[str, Any], player: int) -> dict[str, Any] | None:
    """An LLM player's record over the duel: games and results, refused answers and their
    shares, retries, forfeits, tokens and the median latency of its moves; None if the
    player kept no conversation (it is not an LLM player)."""
    conversations = [
        match["transcripts"][str(player)]
        for match in document["matches"]
        if str(player) in match.get("transcripts", {})
    ]
    if not conversations:
        return None
    first = conversations[0]
    games = document["matches"]
    totals: dict[str, Any] = {}
    latencies: list[float] = []
    for conversation in conversations:
        summary = conversation.get("summary") or conversation_summary(conversation)
        latencies += summary["latencies_ms"]
        for key, value in summary.items():
            if key != "latencies_ms":
                totals[key] = totals.get(key, 0) + value
    requests = totals.get("requests", 0)
    return {
        "player": player,
        "name": _names(document)[player],
        "model": first["model"],
        "base_url": first["base_url"],
        "sampling": first["sampling"],
        "harness_version": first["harness_version"],
        "harness_hash": first["harness_hash"],
        "environment": document["environment"],
        "games": len(games),
        "wins": sum(1 for match in games if _won(match, player)),
        "losses": sum(
            1
            for match in games
            if match["result"] not in ("ERROR", "DRAW") and not _won(match, player)
        ),
        "draws": sum(1 for match in games if match["result"] == "DRAW"),
        "forfeits": sum(
            1 for match in games if any(fault["player"] == player for fault in match["faults"])
        ),
        **totals,
        "illegal_share": round(totals.get("illegal", 0) / requests, 4) if requests else 0.0,
        "unparseable_share": (
            round((totals.get("unparseable", 0) + totals.get("too_long", 0)) / requests, 4)
            if requests
            else 0.0
        ),
        "median_latency_ms": round(statistics.median(latencies), 3) if latencies else None,
    }


def write_run_logs(document: dict[str, Any], directory: Path) -> list[Path]:
    """Write the run's files into ``directory`` (made if needed); returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "conversations").mkdir(exist_ok=True)
    names = _names(document)
    written: list[Path] = []
    games = []
    for match in document["matches"]:
        conversation_file = None
        if match.get("transcripts"):
            path = directory / "conversations" / f"game_{match['index']}.json"
            path.write_text(
                json.dumps(
                    {
                        "game": match["index"],
                        "environment": document["environment"],
                        "seed": match["seed"],
                        "players": {str(number): name for number, name in names.items()},
                        "conversations": match["transcripts"],
                    },
                    indent=2,
                    ensure_ascii=False,
                )
            )
            written.append(path)
            conversation_file = str(path.relative_to(directory))
        games.append(
            {
                "game": match["index"],
                "seed": match["seed"],
                "first_player": names[match["first_player"]],
                "result": match["result"],
                "winner": _winner(match, names),
                "scores": {name: match["scores"][number - 1] for number, name in names.items()},
                "moves": match["steps"],
                "faults": match["faults"],
                "reason": match["error_msg"],
                "conversation": conversation_file,
            }
        )
    results = directory / "game_results.json"
    results.write_text(
        json.dumps(
            {
                "environment": document["environment"],
                "seed": document["seed"],
                "players": {str(number): name for number, name in names.items()},
                "result": document["result"],
                "error": document["error_msg"],
                "scores": {name: document["scores"][number - 1] for number, name in names.items()},
                "games": games,
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    written.insert(0, results)
    for player in names:
        summary = player_summary(document, player)
        if summary is None:
            continue
        path = directory / f"game_summary_{_file_name(names[player])}.json"
        path.write_text(json.dumps(summary, indent=2, ensure_ascii=False))
        written.append(path)
    return written
