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
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the figures here")
    if add_options is not None:
        add_options(parser)
    arguments = parser.parse_args(argv)
    extra = {"options": arguments} if add_options is not None else {}
    figures = measure(
        quick if arguments.quick else full,
        report=lambda line: print(line, file=sys.stderr, flush=True),
        **extra,
    )
    print(table(figures))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0
