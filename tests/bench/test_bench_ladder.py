"""The ladder benchmark's smoke run: uploads, builds, validations, the tournament manager,
a ladder and round robins, all for real on a throwaway database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_it_compares_the_ladder_with_round_robins_and_writes_the_figures(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_ladder", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert completed.returncode == 0, completed.stderr
    assert "ladder tau >= 0.9 at 50 %" in completed.stdout
    figures = json.loads(figures_path.read_text())
    assert figures["agents"][-1] == "random"
    assert len(figures["repetitions"]) == 2
    for repetition in figures["repetitions"]:
        for budget in figures["budgets"]:
            assert -1 <= repetition["ladder"][str(budget)] <= 1
            robin = repetition["round_robin"][str(budget)]
            assert robin["matches"] <= budget
            assert -1 <= robin["tau"] <= 1
            over = repetition["round_robin"].get(f"{budget}+")
            if over is not None:
                assert over["matches"] > budget and -1 <= over["tau"] <= 1
