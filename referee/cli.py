"""``python -m referee``: play or validate agents from the command line, no database needed.

    python -m referee run connect_four AGENT_1 AGENT_2 --matches 20
    python -m referee run lowest_unique AGENT_1 AGENT_2 AGENT_3 AGENT_4
    python -m referee validate connect_four AGENT
    python -m referee round-robin connect_four AGENT AGENT AGENT... --matches 10
    python -m referee replay DUEL.json --match 3 [--html replay.html]
    python -m referee evaluate cartpole AGENT --episodes 20 --seed 1
    python -m referee run tic_tac_toe llm:MODEL@URL example_players/tic_tac_toe/minimax.py

An agent is a ``.py`` file or a folder with ``main.py``, ``agent.py`` or an
executable named ``agent``; ``run`` takes as many as the game seats (two, or up to six in
a game of more), and any of them may be an LLM player, ``llm:MODEL@URL``
(a model behind an OpenAI-compatible server; ``--llm1``, ``--llm2``... set its sampling, and
its key is read from the environment variable ``OPENAI_API_KEY`` or the one named by
``api_key_env``). A run with an LLM player writes ``game_results.json``, one conversation
file per game and ``game_summary_<model>.json`` into ``--output`` (``runs/<time>-<game>``
by default). ``python -m duel_runner`` is the same command.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

SDK_PATH = Path(__file__).resolve().parent.parent / "sdk"
if str(SDK_PATH) not in sys.path:  # running from a checkout without installing the SDK
    sys.path.insert(0, str(SDK_PATH))

from environments.registry import (  # noqa: E402
    UnknownEnvironment,
    environment_names,
    load_info,
    make_environment,
)
from llm.config import LLMConfig  # noqa: E402
from llm.run_logs import write_run_logs  # noqa: E402
from referee.duel import run_duel  # noqa: E402
from referee.duel_settings import llm_clock  # noqa: E402
from referee.evaluation import run_evaluation, validate_evaluation  # noqa: E402
from referee.match_points import score_text  # noqa: E402
from referee.results import DuelResult  # noqa: E402
from referee.scores import episode_seeds  # noqa: E402
from referee.standings import (  # noqa: E402
    Standing,
    record_duel,
    record_group,
    shared_ranks,
    standing_key,
)
from referee.validation import validate  # noqa: E402
from sandboxes import (  # noqa: E402
    BACKENDS,
    AgentSource,
    InvalidAgent,
    SandboxBackend,
    SandboxError,
    get_backend,
)
from sandboxes.llm import LLMSandbox  # noqa: E402

_LLM_SPEC = re.compile(r"^llm:(?P<model>[^@]+?)@(?P<url>https?://\S+)$")
#: Agents a duel seats at most, so ``run``'s ``--envN`` and ``--llmN`` options.
MAX_AGENTS = 6
#: What ``--llm1``, ``--llm2``... may set, and how each is read.
_LLM_OPTIONS: dict[str, type] = {
    "temperature": float,
    "top_p": float,
    "max_tokens": int,
    "seed": int,
    "request_timeout": float,
    "provider_retries": int,
    "max_answer_chars": int,
}


def _variables(pairs: list[str]) -> dict[str, str]:
    variables = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name:
            raise argparse.ArgumentTypeError(f"--env wants NAME=VALUE, got {pair!r}")
        variables[name] = value
    return variables


def llm_config(spec: str, options: dict[str, str]) -> LLMConfig:
    """``llm:MODEL@URL`` and its ``--llmN NAME=VALUE`` options as an LLM player."""
    found = _LLM_SPEC.match(spec)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"an LLM player is llm:MODEL@URL (for example "
            f"llm:qwen2.5:7b@http://127.0.0.1:11434/v1), got {spec!r}"
        )
    settings: dict[str, object] = {}
    key_variable = options.get("api_key_env", "OPENAI_API_KEY")
    for name, value in options.items():
        if name == "api_key_env":
            continue
        kind = _LLM_OPTIONS.get(name)
        if kind is None:
            known = ", ".join([*_LLM_OPTIONS, "api_key_env"])
            raise argparse.ArgumentTypeError(f"unknown LLM option {name!r}; known: {known}")
        try:
            settings[name] = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} wants a {kind.__name__}, got {value!r}"
            ) from None
    return LLMConfig(
        base_url=found.group("url"),
        model=found.group("model"),
        # The key comes from the environment, never from the command line (where any
        # user of the machine could read it).
        api_key=os.environ.get(key_variable, ""),
        **settings,  # type: ignore[arg-type]
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m referee",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def add_common(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "environment",
            help=f"one of: {', '.join(environment_names())}, or an OpenSpiel game such as "
            "openspiel:chess or openspiel:go(board_size=9)",
        )
        command.add_argument("--seed", type=int, help="duel seed (random when omitted)")
        command.add_argument("--move-time", type=float, help="seconds per move (info.yml)")
        command.add_argument("--time-bank", type=float, help="overage seconds per match")
        command.add_argument("--startup-time", type=float, help="seconds to start (info.yml)")
        command.add_argument("--sandbox", choices=BACKENDS, default="process")
        command.add_argument(
            "--sandbox-root",
            type=Path,
            help="where agents' private folders go (default /tmp/arena-sandboxes)",
        )

    run = commands.add_parser("run", help="play a duel and print its JSON document")
    add_common(run)
    run.add_argument(
        "agents",
        nargs="+",
        metavar="AGENT",
        help="player 1, player 2, ...: as many as the game seats",
    )
    run.add_argument("--matches", type=int, help="number of matches (info.yml)")
    for number in range(1, MAX_AGENTS + 1):
        run.add_argument(
            f"--env{number}",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"environment variable for agent {number} (repeatable)",
        )
        run.add_argument(
            f"--llm{number}",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"an option of agent {number} when it is llm:MODEL@URL: "
            f"{', '.join(_LLM_OPTIONS)} or api_key_env (repeatable)",
        )
    run.add_argument(
        "--output",
        type=Path,
        help="where a run with an LLM player writes its files (runs/<time>-<game>)",
    )
    run.add_argument("--no-logs", action="store_true", help="leave the agents' logs out")
    run.add_argument(
        "--summary",
        action="store_true",
        help="print a one-screen summary instead of the JSON document",
    )

    league = commands.add_parser(
        "round-robin", help="validate agents, play every pair once and print the standings"
    )
    add_common(league)
    league.add_argument("agents", nargs="+")
    league.add_argument("--matches", type=int, help="matches per duel (info.yml)")
    league.add_argument("--output", type=Path, help="folder to write each duel's JSON into")

    show = commands.add_parser(
        "replay", help="recompute and show every state of a match from a duel's JSON"
    )
    show.add_argument(
        "duel", type=Path, help="a duel document (run, round-robin) or evaluate --json's"
    )
    show.add_argument("--match", type=int, default=0, help="match index (default 0)")
    show.add_argument("--html", type=Path, help="also write the states as one HTML page")

    evaluate = commands.add_parser(
        "evaluate",
        help="one-player games: play an agent on seeded episodes and print its mean return",
    )
    add_common(evaluate)
    evaluate.add_argument("agent")
    evaluate.add_argument(
        "--episodes", type=int, help="number of episodes (matches_per_duel in info.yml)"
    )
    evaluate.add_argument("--json", action="store_true", help="print the whole JSON document")

    check = commands.add_parser("validate", help="self-play an agent; exit 1 on failure")
    add_common(check)
    check.add_argument("agent")
    check.add_argument("--matches", type=int, help="number of matches (validation_matches)")
    return parser


def first_movers(result: DuelResult) -> list[str]:
    """Who moved first in each match of ``result``, as the game says after its reset from
    the match's seed (in chess White, OpenSpiel's second seat, so not always the duel
    player in the first seat): ``player 2``, or ``all at once``."""
    environment = make_environment(result.environment, players=len(result.players))
    movers = []
    for match in result.matches:
        seat = environment.first_to_move(match.seed)
        movers.append("all at once" if seat is None else f"player {match.seats[seat]}")
    return movers


def summary(result: DuelResult) -> str:
    document = result.as_json(include_logs=False)

    def each(values: list[Any]) -> str:
        return " / ".join(f"{value:g}" for value in values)

    lines = [
        f"{result.environment}: {' vs '.join(result.players)} — {document['result']}",
        f"score {' / '.join(score_text(score) for score in document['scores'])}   "
        f"wins {each(document['wins'])}, draws {document['draws']}, "
        f"errors {each(document['errors'])} / other {document['other_errors']}   "
        f"{document['duration']:.2f} s",
    ]
    for match, first in zip(result.matches, first_movers(result), strict=True):
        faults = "; ".join(fault.describe() for fault in match.faults)
        lines.append(
            f"  match {match.index:3d}  first: {first:11s}  "
            f"{match.result.value:13s} {len(match.actions):3d} steps  {faults}"
        )
    if result.infrastructure_error:
        lines.append(f"infrastructure error: {result.infrastructure_error}")
    return "\n".join(lines)


def round_robin(
    environment: str,
    sources: list[AgentSource],
    *,
    backend: SandboxBackend,
    seed: int | None,
    output: Path | None,
    overrides: dict[str, Any],
) -> int:
    """Validate each agent, play every pair once (in a game of N players, every group of N)
    and print the standings (``referee.standings``: 2 points a duel won, 1 a draw, a duel
    of N counting as one between each two of its players; then wins, then score)."""
    names = [source.name for source in sources]
    if len(set(names)) != len(names):
        raise InvalidAgent(f"agents must have different names, got {', '.join(names)}")
    entrants = []
    for source in sources:
        validation = validate(
            environment, source, backend=backend, seed=seed, **{**overrides, "matches": None}
        )
        status = "ok" if validation.passed else "FAILED"
        print(f"validate {source.name:24s} {status}: {validation.message.splitlines()[0]}")
        if validation.passed:
            entrants.append(source)
    table = {source.name: Standing(source.name) for source in entrants}
    faults = dict.fromkeys(table, 0)
    if output:
        output.mkdir(parents=True, exist_ok=True)
    for group in itertools.combinations(entrants, load_info(environment).players):
        result = run_duel(environment, group, backend=backend, seed=seed, **overrides)
        document = result.as_json()
        names = [source.name for source in group]
        print(
            f"duel {' vs '.join(names)}: {document['result']} "
            + "-".join(score_text(score) for score in document["scores"])
        )
        if result.infrastructure_error:
            print(f"  not scored: {result.infrastructure_error}")
            continue
        if len(group) == 2:
            record_duel(
                table[names[0]],
                table[names[1]],
                result=document["result"],
                first_score=document["scores"][0],
                second_score=document["scores"][1],
            )
        else:
            record_group([table[name] for name in names], scores=document["scores"])
        for name, errors in zip(names, document["errors"], strict=True):
            faults[name] += errors
        if output:
            path = output / f"{environment}-{'-vs-'.join(names)}.json"
            path.write_text(json.dumps(document, indent=2))
    ranking = sorted(table.values(), key=standing_key)
    print(
        f"\n{'rank':>4}  {'agent':24s} {'points':>6} {'W':>3} {'D':>3} {'L':>3} "
        f"{'match pts':>9} {'faults':>6}"
    )
    for rank, row in zip(shared_ranks(ranking, standing_key), ranking, strict=True):
        print(
            f"{rank:>4}  {row.name:24s} {row.points:>6} {row.wins:>3} {row.draws:>3} "
            f"{row.losses:>3} {score_text(row.score):>9} {faults[row.name]:>6}"
        )
    return 0 if len(entrants) == len(sources) else 1


def _episodes_as_matches(document: dict[str, Any]) -> dict[str, Any]:
    """An evaluation's document (``evaluate --json``) in the shape of a duel's: each
    episode a match of one seat, whose result is its return."""
    return {
        "environment": document["environment"],
        "players": [document["agent"]],
        "matches": [
            {**episode, "seats": [1], "result": f"return {episode['return']:g}"}
            for episode in document["episodes"]
        ],
    }


def replay_match(document: dict[str, Any], index: int, html_path: Path | None) -> str:
    """The text rendering of every state of one match (or episode), recomputed from seed
    and actions."""
    if "episodes" in document:
        document = _episodes_as_matches(document)
    matches = {match["index"]: match for match in document["matches"]}
    if index not in matches:
        raise InvalidAgent(f"no match {index} in this duel (0..{len(matches) - 1})")
    match = matches[index]
    environment = make_environment(document["environment"], players=len(match["seats"]))
    names = document["players"]
    seat_names = [names[number - 1] for number in match["seats"]]
    pages, lines = [], [f"match {index}: seats {seat_names}, seed {match['seed']}"]
    environment.reset(match["seed"])
    for step, step_actions in enumerate([None, *match["actions"]]):
        if step_actions is not None:
            environment.step({s: a for s, a in enumerate(step_actions) if a is not None})
            moved = ", ".join(
                f"{seat_names[s]} plays {a!r}" for s, a in enumerate(step_actions) if a is not None
            )
            lines.append(f"\nstep {step}: {moved}")
        lines.append(environment.render_text())
        pages.append(f"<section><h2>step {step}</h2>{environment.render_html()}</section>")
    lines.append(f"\nresult: {match['result']} {match['error_msg']}".rstrip())
    if html_path:
        info = load_info(document["environment"])
        style = "".join(path.read_text() for path in sorted(info.static_dir.glob("*.css")))
        html_path.write_text(
            f"<!doctype html><meta charset=utf-8><title>{info.title} replay</title>"
            f"<style>{style}</style><h1>{info.title}: match {index}</h1>{''.join(pages)}"
        )
    return "\n".join(lines)


def _run(arguments: argparse.Namespace, backend: SandboxBackend, overrides: dict[str, Any]) -> int:
    specs = arguments.agents
    seats = load_info(arguments.environment).players
    if not 2 <= len(specs) <= MAX_AGENTS or (seats == 2 and len(specs) != 2):
        raise InvalidAgent(
            f"{arguments.environment} seats {seats if seats == 2 else f'2 to {MAX_AGENTS}'} "
            f"players; got {len(specs)} agents"
        )
    numbers = range(1, len(specs) + 1)
    configs = [
        llm_config(spec, _variables(getattr(arguments, f"llm{number}")))
        if spec.startswith("llm:")
        else None
        for number, spec in zip(numbers, specs, strict=True)
    ]
    models = [config.model for config in configs if config]
    sources: list[AgentSource] = []
    backends: list[SandboxBackend] = []
    for number, spec, config in zip(numbers, specs, configs, strict=True):
        if config is None:
            variables = _variables(getattr(arguments, f"env{number}"))
            sources.append(AgentSource.from_path(spec, variables))
            backends.append(backend)
            continue
        # The same model on several seats (at two temperatures, say) gets a name each.
        name = f"{config.model}-{number}" if models.count(config.model) > 1 else config.model
        sources.append(AgentSource.llm(name))
        backends.append(LLMSandbox(config))
    if any(configs):
        clock = llm_clock(load_info(arguments.environment))
        overrides = {**overrides, **{k: v for k, v in clock.items() if overrides.get(k) is None}}
    result = run_duel(
        arguments.environment,
        sources,
        backend=tuple(backends),
        seed=arguments.seed,
        **overrides,
    )
    document = result.as_json(include_logs=not arguments.no_logs)
    if any(configs):
        output = arguments.output or Path(
            "runs", time.strftime("%Y%m%d-%H%M%S") + f"-{arguments.environment}"
        )
        written = write_run_logs(document, output)
        print(f"wrote {len(written)} files into {output}/", file=sys.stderr)
    if arguments.summary:
        print(summary(result))
    else:
        print(json.dumps(document, indent=2))
    return 2 if result.infrastructure_error else 0


def _evaluate(
    arguments: argparse.Namespace, backend: SandboxBackend, overrides: dict[str, Any]
) -> int:
    """An evaluation's mean return with its 95 % interval, and each episode's return."""
    info = load_info(arguments.environment)
    seed = random.SystemRandom().randrange(2**31) if arguments.seed is None else arguments.seed
    seeds = episode_seeds(seed, arguments.episodes or info.matches_per_duel)
    overrides = {key: value for key, value in overrides.items() if key != "matches"}
    evaluation = run_evaluation(
        arguments.environment,
        AgentSource.from_path(arguments.agent),
        backend=backend,
        seeds=seeds,
        **overrides,
    )
    if arguments.json:
        print(json.dumps(evaluation.as_json(), indent=2))
    else:
        summary = evaluation.summary
        interval = (
            f" (95 % interval {summary.low:.2f} .. {summary.high:.2f})"
            if summary is not None and summary.low is not None and summary.high is not None
            else ""
        )
        print(f"{evaluation.environment}: {evaluation.agent}, seed {seed}")
        if summary is not None:
            print(f"mean return {summary.mean:.2f}{interval} over {summary.episodes} episodes")
        for episode in evaluation.episodes:
            ending = episode.error_msg or ("time limit" if episode.truncated else "terminated")
            print(f"  episode {episode.index + 1}: {episode.episode_return:g} ({ending})")
    if evaluation.infrastructure_error:
        print(evaluation.infrastructure_error, file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _command(argv)
    except BrokenPipeError:
        # Whatever read the output stopped reading (``| head``): nothing more to say, and
        # nothing for Python to flush at exit into the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _command(argv: list[str] | None) -> int:
    arguments = _parser().parse_args(argv)
    overrides = {
        key: getattr(arguments, key, None)
        for key in ("matches", "move_time", "time_bank", "startup_time")
    }
    try:
        if arguments.command == "replay":
            document = json.loads(arguments.duel.read_text())
            print(replay_match(document, arguments.match, arguments.html))
            return 0
        players = load_info(arguments.environment).players
        if players == 1 and arguments.command in ("run", "round-robin"):
            raise argparse.ArgumentTypeError(
                f"{arguments.environment} is a one-player game: use evaluate"
            )
        if players > 1 and arguments.command == "evaluate":
            raise argparse.ArgumentTypeError(
                f"{arguments.environment} is a {players}-player game: use run"
            )
        backend = get_backend(arguments.sandbox, root=arguments.sandbox_root)
        if not backend.confined:
            # Your own agents, so it runs; but never without saying so.
            print(
                f"note: the agents run unconfined here: {backend.unconfined_reason}",
                file=sys.stderr,
            )
        if arguments.command == "round-robin":
            return round_robin(
                arguments.environment,
                [AgentSource.from_path(path) for path in arguments.agents],
                backend=backend,
                seed=arguments.seed,
                output=arguments.output,
                overrides=overrides,
            )
        if arguments.command == "run":
            return _run(arguments, backend, overrides)
        if arguments.command == "evaluate":
            return _evaluate(arguments, backend, overrides)
        check = validate_evaluation if players == 1 else validate
        validation = check(
            arguments.environment,
            AgentSource.from_path(arguments.agent),
            backend=backend,
            seed=arguments.seed,
            **overrides,
        )
        print(validation.message)
        return 0 if validation.passed else 1
    except (InvalidAgent, UnknownEnvironment, SandboxError, argparse.ArgumentTypeError) as error:
        print(f"duel_runner: {error}", file=sys.stderr)
        return 2
