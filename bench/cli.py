"""The command line every benchmark shares: ``--quick`` for a smoke run, ``--json PATH``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Protocol, TypeVar


class _Dataclass(Protocol):
    """Any dataclass instance: what ``dataclasses.replace`` takes."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


Plan = TypeVar("Plan", bound=_Dataclass)


def run_bench(
    argv: list[str] | None,
    benchmark: ModuleType,
    *,
    quick_help: str,
    measure: Callable[..., dict[str, Any]] | None = None,
    full: object | None = None,
    quick: object | None = None,
    add_options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """Run a benchmark module (``sys.modules[__name__]``): its docstring is the command's
    help; it measures with the module's ``FULL`` plan, or its ``QUICK`` one, prints the
    module's ``table`` of the figures, and optionally writes them.

    ``measure``, ``full`` and ``quick`` stand in for the module's own where its command
    line changes them. ``add_options`` adds a benchmark's own options; ``measure`` then
    also gets them, parsed, as ``options``."""
    # Run with ``python -m``, the module is __main__; its spec keeps its own name.
    name = benchmark.__spec__.name if benchmark.__spec__ is not None else benchmark.__name__
    parser = bench_parser(
        prog=f"python -m {name}", description=benchmark.__doc__, quick_help=quick_help
    )
    if add_options is not None:
        add_options(parser)
    arguments = parser.parse_args(argv)
    extra = {"options": arguments} if add_options is not None else {}
    if arguments.quick:
        plan = benchmark.QUICK if quick is None else quick
    else:
        plan = benchmark.FULL if full is None else full
    figures = (benchmark.measure if measure is None else measure)(
        plan, report=report_progress, **extra
    )
    figures_report(figures, benchmark.table(figures), arguments.json)
    return 0


def bench_parser(*, prog: str, description: str | None, quick_help: str) -> argparse.ArgumentParser:
    """The options every benchmark has, ``--quick`` and ``--json PATH``; a benchmark that
    does more than measure one plan (``run_bench``) adds its own and reads them itself."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the figures here")
    return parser


def plan_chosen(
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
