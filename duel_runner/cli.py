"""``python -m duel_runner``: play or validate agents from the command line, no database needed.

    python -m duel_runner run connect_four AGENT_1 AGENT_2 --matches 20
    python -m duel_runner validate connect_four AGENT

An agent is a ``.py`` file or a folder with ``main.py``, ``agent.py`` or an
executable named ``agent``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

SDK_PATH = Path(__file__).resolve().parent.parent / "sdk"
if str(SDK_PATH) not in sys.path:  # running from a checkout without installing the SDK
    sys.path.insert(0, str(SDK_PATH))

from duel_runner.referee import run_duel, validate  # noqa: E402
from duel_runner.results import DuelResult  # noqa: E402
from duel_runner.sandbox import BACKENDS, AgentSource, InvalidAgent, SandboxError  # noqa: E402
from duel_runner.sandbox import get_backend  # noqa: E402
from environments.registry import UnknownEnvironment, environment_names  # noqa: E402


def _variables(pairs: list[str]) -> dict[str, str]:
    variables = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name:
            raise argparse.ArgumentTypeError(f"--env wants NAME=VALUE, got {pair!r}")
        variables[name] = value
    return variables


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m duel_runner", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    def add_common(command: argparse.ArgumentParser) -> None:
        command.add_argument("environment", help=f"one of: {', '.join(environment_names())}")
        command.add_argument("--seed", type=int, help="duel seed (random when omitted)")
        command.add_argument("--move-time", type=float, help="seconds per move (info.yml)")
        command.add_argument("--time-bank", type=float, help="overage seconds per match")
        command.add_argument("--startup-time", type=float, help="seconds to start (info.yml)")
        command.add_argument("--sandbox", choices=BACKENDS,
                             default=os.environ.get("ARENA_SANDBOX", "process"))

    run = commands.add_parser("run", help="play a duel and print its JSON document")
    add_common(run)
    run.add_argument("agent_1")
    run.add_argument("agent_2")
    run.add_argument("--matches", type=int, help="number of matches (info.yml)")
    run.add_argument("--env1", action="append", default=[], metavar="NAME=VALUE",
                     help="environment variable for agent 1 (repeatable)")
    run.add_argument("--env2", action="append", default=[], metavar="NAME=VALUE",
                     help="environment variable for agent 2 (repeatable)")
    run.add_argument("--no-logs", action="store_true", help="leave the agents' logs out")
    run.add_argument("--summary", action="store_true",
                     help="print a one-screen summary instead of the JSON document")

    check = commands.add_parser("validate", help="self-play an agent; exit 1 on failure")
    add_common(check)
    check.add_argument("agent")
    check.add_argument("--matches", type=int, help="number of matches (validation_matches)")
    return parser


def summary(result: DuelResult) -> str:
    document = result.as_json(include_logs=False)
    lines = [
        f"{result.environment}: {result.player_1} vs {result.player_2} — {document['result']}",
        f"score {document['player_1_score']:g} : {document['player_2_score']:g}   "
        f"wins {document['player_1_wins']} / {document['player_2_wins']}, "
        f"draws {document['draws']}, errors {document['player_1_errors']} / "
        f"{document['player_2_errors']} / other {document['other_errors']}   "
        f"{document['duration']:.2f} s",
    ]
    for match in result.matches:
        faults = "; ".join(fault.describe() for fault in match.faults)
        lines.append(
            f"  match {match.index:3d}  first: player {match.first_player}  "
            f"{match.result.value:13s} {len(match.actions):3d} steps  {faults}"
        )
    if result.infrastructure_error:
        lines.append(f"infrastructure error: {result.infrastructure_error}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    overrides = {
        "matches": arguments.matches,
        "move_time": arguments.move_time,
        "time_bank": arguments.time_bank,
        "startup_time": arguments.startup_time,
    }
    try:
        backend = get_backend(arguments.sandbox)
        if arguments.command == "run":
            sources = (
                AgentSource.from_path(arguments.agent_1, _variables(arguments.env1)),
                AgentSource.from_path(arguments.agent_2, _variables(arguments.env2)),
            )
            result = run_duel(arguments.environment, sources, backend=backend,
                              seed=arguments.seed, **overrides)
            if arguments.summary:
                print(summary(result))
            else:
                print(json.dumps(result.as_json(include_logs=not arguments.no_logs), indent=2))
            return 2 if result.infrastructure_error else 0
        validation = validate(arguments.environment, AgentSource.from_path(arguments.agent),
                              backend=backend, seed=arguments.seed, **overrides)
        print(validation.message)
        return 0 if validation.passed else 1
    except (InvalidAgent, UnknownEnvironment, SandboxError, argparse.ArgumentTypeError) as error:
        print(f"duel_runner: {error}", file=sys.stderr)
        return 2
