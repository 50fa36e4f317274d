"""The command line every benchmark shares: ``--quick`` for a smoke run, ``--json PATH``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_bench(
    argv: list[str] | None,
    *,
    prog: str,
    description: str | None,
    quick_help: str,
    measure: Callable[..., dict[str, Any]],
    full: object,
    quick: object,
    table: Callable[[dict[str, Any]], str],
    add_options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """Measure with the full or quick plan, print the table, optionally write the figures.

    ``add_options`` adds a benchmark's own options; ``measure`` then also gets them, parsed,
    as ``options``."""
    parser = bench_parser(prog=prog, description=description, quick_help=quick_help)
    if add_options is not None:
        add_options(parser)
    arguments = parser.parse_args(argv)
    extra = {"options": arguments} if add_options is not None else {}
    figures = measure(
        quick if arguments.quick else full,
        report=lambda line: print(line, file=sys.stderr, flush=True),
        **extra,
    )
    figures_report(figures, table(figures), arguments.json)
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


def figures_report(figures: dict[str, Any], table: str, json_path: Path | None) -> None:
    """The table on standard output, and the figures in ``json_path`` when it was asked for."""
    print(table)
    if json_path is not None:
        json_path.write_text(json.dumps(figures, indent=2) + "\n")
