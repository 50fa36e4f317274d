"""The command line every benchmark shares: ``--quick`` for a smoke run, ``--json PATH``."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import signal
import sys
import threading
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar


class _Dataclass(Protocol):
    """Any dataclass instance: what ``dataclasses.replace`` takes."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


Plan = TypeVar("Plan", bound=_Dataclass)

#: What stops a benchmark from outside and is turned into an exit that cleans up.
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def run_bench(
    argv: list[str] | None,
    benchmark: types.ModuleType,
    *,
    quick_help: str,
    plan_options: Mapping[str, str] | None = None,
    plan_refusal: Callable[[Any], str | None] | None = None,
    add_options: Callable[[argparse.ArgumentParser], None] | None = None,
    status: Callable[[dict[str, Any]], int] | None = None,
) -> int:
    """Run a benchmark module (``sys.modules[__name__]``): its docstring is the command's
    help; it measures with the module's ``FULL`` plan, or its ``QUICK`` one, prints the
    module's ``table`` of the figures, and optionally writes them.

    ``plan_options`` names the plan's fields the command line may set, with their help:
    each is an option of the field's name (``sample_seconds``: ``--sample-seconds``) and of
    its type (a bool is a flag), in place of the chosen plan's value; ``plan_refusal`` says
    what is wrong with the plan so chosen, if anything (the command then fails with it).
    ``add_options`` adds a benchmark's own options; its ``measure`` then also gets each,
    parsed, as a keyword argument of its name (``--kaggle-python``: ``kaggle_python``).
    ``status``: the exit status the figures call for (0 without it)."""
    # Run with ``python -m``, the module is __main__; its spec keeps its own name.
    name = benchmark.__spec__.name if benchmark.__spec__ is not None else benchmark.__name__
    parser = _parser(prog=f"python -m {name}", description=benchmark.__doc__, quick_help=quick_help)
    if plan_options:
        kinds = typing.get_type_hints(type(benchmark.FULL))
        for field, help_text in plan_options.items():
            _plan_option(parser, field, kinds[field], help_text)
    shared = set(vars(parser.parse_args([])))
    if add_options is not None:
        add_options(parser)
    arguments = parser.parse_args(argv)
    extra = {name: value for name, value in vars(arguments).items() if name not in shared}
    plan = _plan_chosen(
        arguments, full=benchmark.FULL, quick=benchmark.QUICK, fields=plan_options or ()
    )
    refusal = plan_refusal(plan) if plan_refusal is not None else None
    if refusal:
        parser.error(refusal)
    with _cleaned_up_on_termination():
        figures = benchmark.measure(plan, report=report_progress, **extra)
    figures_report(figures, benchmark.table(figures), arguments.json)
    return 0 if status is None else status(figures)


@contextlib.contextmanager
def _cleaned_up_on_termination() -> Iterator[None]:
    """A benchmark stopped by SIGTERM or SIGHUP (``timeout``, a closed terminal) unwinds
    as from Ctrl-C, so that what it set up is taken down (its ``finally`` blocks and exit
    stacks: a temporary git worktree, throwaway servers), where the signal's default would
    end the process on the spot and leave them. Exits with the shell's status for the
    signal (128 + its number)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # (only the main thread may set a signal's handler)
        return

    def stop(number: int, frame: object) -> None:
        raise SystemExit(128 + number)

    previous = {number: signal.signal(number, stop) for number in TERMINATING_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _plan_option(parser: argparse.ArgumentParser, field: str, kind: Any, help_text: str) -> None:
    """The option that sets the plan's ``field``, unset (None) unless given."""
    option = "--" + field.replace("_", "-")
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        # ``str | None``: the option gives a str.
        kind = next(each for each in typing.get_args(kind) if each is not type(None))
    if typing.get_origin(kind) is tuple and typing.get_args(kind) == (int, ...):
        parser.add_argument(option, dest=field, type=_whole_numbers, help=help_text)
    elif kind is bool:
        parser.add_argument(option, dest=field, action="store_true", default=None, help=help_text)
    elif kind in (int, float, str):
        parser.add_argument(option, dest=field, type=kind, help=help_text)
    else:
        raise TypeError(f"no command-line option for a plan's {field}: {kind}")


def _whole_numbers(text: str) -> tuple[int, ...]:
    """``100,1000``: (100, 1000)."""
    try:
        return tuple(int(number) for number in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not whole numbers separated by commas: {text!r}"
        ) from None


def _parser(*, prog: str, description: str | None, quick_help: str) -> argparse.ArgumentParser:
    """The options every benchmark has, ``--quick`` and ``--json PATH``."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the figures here")
    return parser


def _plan_chosen(
    options: argparse.Namespace, *, full: Plan, quick: Plan, fields: Iterable[str]
) -> Plan:
    """The ``--quick`` plan or the full one, with each of ``fields`` that the command line
    gave (an option of the field's name) in place of the plan's."""
    plan = quick if options.quick else full
    given = {name: value for name in fields if (value := getattr(options, name)) is not None}
    return dataclasses.replace(plan, **given)


def report_progress(line: str) -> None:
    """A benchmark's progress, on standard error: standard output is for its table."""
    print(line, file=sys.stderr, flush=True)


def figures_report(figures: dict[str, Any], table: str, json_path: Path | None) -> None:
    """The table on standard output, and the figures in ``json_path`` when it was asked for."""
    print(table)
    if json_path is not None:
        json_path.write_text(json.dumps(figures, indent=2) + "\n")
