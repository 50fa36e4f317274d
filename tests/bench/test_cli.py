"""The command line every benchmark shares (``bench.cli.run_bench``): the plan's fields the
command line may set, typed as the plan's; a plan refused before anything is measured; the
exit status the figures call for."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from bench.cli import run_bench

REPOSITORY = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Plan:
    agents: int
    minutes: float
    label: str
    shared: bool = False


def benchmark(measured: list[Plan]) -> types.ModuleType:
    """A benchmark module as ``run_bench`` reads one: it records the plans it measures."""
    module = types.ModuleType("bench.bench_example", "An example benchmark.")
    module.FULL = Plan(agents=50, minutes=30.0, label="full")  # type: ignore[attr-defined]
    module.QUICK = Plan(agents=6, minutes=2.0, label="quick")  # type: ignore[attr-defined]

    def measure(plan: Plan, *, report: Any) -> dict[str, Any]:
        measured.append(plan)
        return {"agents": plan.agents, "ok": plan.agents % 2 == 0}

    module.measure = measure  # type: ignore[attr-defined]
    module.table = lambda figures: f"{figures['agents']} agents"  # type: ignore[attr-defined]
    return module


OPTIONS = {
    "agents": "agents (50)",
    "minutes": "minutes (30)",
    "label": "a label",
    "shared": "a flag",
}


def test_the_command_line_sets_the_plans_fields_each_of_its_type(tmp_path, capsys):
    measured: list[Plan] = []
    figures_path = tmp_path / "figures.json"
    argv = ["--quick", "--agents", "8", "--minutes", "0.5", "--shared", "--json", str(figures_path)]

    status = run_bench(argv, benchmark(measured), quick_help="smoke", plan_options=OPTIONS)

    assert status == 0
    assert measured == [Plan(agents=8, minutes=0.5, label="quick", shared=True)]
    assert capsys.readouterr().out == "8 agents\n"
    assert json.loads(figures_path.read_text()) == {"agents": 8, "ok": True}


def test_a_field_the_command_line_does_not_give_keeps_the_plans_value():
    measured: list[Plan] = []

    run_bench(["--label", "mine"], benchmark(measured), quick_help="smoke", plan_options=OPTIONS)

    assert measured == [Plan(agents=50, minutes=30.0, label="mine", shared=False)]


def test_an_option_of_the_wrong_type_or_a_refused_plan_fails_before_anything_is_measured(
    capsys,
):
    measured: list[Plan] = []
    with pytest.raises(SystemExit) as exit_info:
        run_bench(
            ["--agents", "many"], benchmark(measured), quick_help="smoke", plan_options=OPTIONS
        )
    assert exit_info.value.code == 2
    assert "--agents: invalid int value: 'many'" in capsys.readouterr().err

    with pytest.raises(SystemExit) as exit_info:
        run_bench(
            ["--agents", "1"],
            benchmark(measured),
            quick_help="smoke",
            plan_options=OPTIONS,
            plan_refusal=lambda plan: "needs two agents" if plan.agents < 2 else None,
        )
    assert exit_info.value.code == 2
    assert "error: needs two agents" in capsys.readouterr().err
    assert measured == []


def test_the_exit_status_is_the_one_the_figures_call_for():
    def status(figures: dict[str, Any]) -> int:
        return 0 if figures["ok"] else 1

    module = benchmark([])
    odd = run_bench(
        ["--agents", "7"], module, quick_help="smoke", plan_options=OPTIONS, status=status
    )
    even = run_bench(
        ["--agents", "8"], module, quick_help="smoke", plan_options=OPTIONS, status=status
    )

    assert (odd, even) == (1, 0)


def test_a_list_of_whole_numbers_is_given_separated_by_commas(capsys):
    @dataclasses.dataclass(frozen=True)
    class Sizes:
        sizes: tuple[int, ...]

    measured: list[Sizes] = []

    def measure(plan: Sizes, *, report: Any) -> dict[str, Any]:
        measured.append(plan)
        return {"agents": sum(plan.sizes)}

    module = benchmark([])
    module.FULL = module.QUICK = Sizes((1, 2))  # type: ignore[attr-defined]
    module.measure = measure  # type: ignore[attr-defined]
    options = {"sizes": "sizes"}

    run_bench(["--sizes", "100,1000"], module, quick_help="smoke", plan_options=options)
    assert measured == [Sizes((100, 1000))]

    with pytest.raises(SystemExit):
        run_bench(["--sizes", "100;1000"], module, quick_help="smoke", plan_options=options)
    assert "not whole numbers separated by commas: '100;1000'" in capsys.readouterr().err
    assert len(measured) == 1


def test_a_field_with_no_option_of_its_type_is_refused_when_the_benchmark_is_written():
    @dataclasses.dataclass(frozen=True)
    class Names:
        names: tuple[str, ...]

    module = benchmark([])
    module.FULL = module.QUICK = Names(("a", "b"))  # type: ignore[attr-defined]

    with pytest.raises(TypeError, match="no command-line option for a plan's names"):
        run_bench([], module, quick_help="smoke", plan_options={"names": "names"})


def test_the_benchmarks_own_options_reach_its_measure_by_name():
    received: list[dict[str, Any]] = []

    def measure(plan: Plan, *, report: Any, **options: Any) -> dict[str, Any]:
        received.append(options)
        return {"agents": plan.agents}

    def add_options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--kaggle-python", default="python3")
        parser.add_argument("--docker", action="store_true")

    module = benchmark([])
    module.measure = measure  # type: ignore[attr-defined]

    run_bench(
        ["--docker", "--agents", "3"],
        module,
        quick_help="smoke",
        plan_options={"agents": "agents"},
        add_options=add_options,
    )

    # Neither the shared options (--quick, --json) nor the plan's reach it.
    assert received == [{"kaggle_python": "python3", "docker": True}]


def test_an_optional_field_takes_the_type_it_holds():
    @dataclasses.dataclass(frozen=True)
    class Baseline:
        baseline: str | None
        rounds: int | None = None

    measured: list[Baseline] = []

    def measure(plan: Baseline, *, report: Any) -> dict[str, Any]:
        measured.append(plan)
        return {"agents": 0}

    module = benchmark([])
    module.FULL = module.QUICK = Baseline(None)  # type: ignore[attr-defined]
    module.measure = measure  # type: ignore[attr-defined]

    run_bench(
        ["--baseline", "abc123", "--rounds", "3"],
        module,
        quick_help="smoke",
        plan_options={"baseline": "a revision", "rounds": "rounds"},
    )

    assert measured == [Baseline("abc123", 3)]


#: A benchmark that sets something up, says so, then waits to be stopped.
STOPPED_BENCHMARK = """
import contextlib, dataclasses, pathlib, sys, time
from bench.cli import run_bench

@dataclasses.dataclass(frozen=True)
class Plan:
    seconds: float

FULL = QUICK = Plan(600.0)

def measure(plan, *, report):
    with contextlib.ExitStack() as stack:
        stack.callback(pathlib.Path(sys.argv[1]).write_text, "taken down")
        report("set up")
        time.sleep(plan.seconds)
    return {}

def table(figures):
    return ""

sys.exit(run_bench(sys.argv[2:], sys.modules[__name__], quick_help="a smoke run"))
"""


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_benchmark_stopped_from_outside_takes_down_what_it_set_up(tmp_path, stop):
    # As ``timeout`` or a closed terminal stops it: its exit stacks run (a temporary
    # git worktree, throwaway servers), and it exits with the shell's status for the signal.
    script = tmp_path / "stopped.py"
    script.write_text(STOPPED_BENCHMARK)
    taken_down = tmp_path / "taken-down"
    running = subprocess.Popen(
        [sys.executable, str(script), str(taken_down)],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert running.stderr is not None
        assert running.stderr.readline() == "set up\n"
        running.send_signal(stop)
        assert running.wait(timeout=60) == 128 + stop
    finally:
        running.kill()
        running.wait()
    assert taken_down.read_text() == "taken down"
