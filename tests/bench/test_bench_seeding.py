"""The Swiss seeding benchmark's smoke run, and its Swiss against Arena's pairing rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def test_it_compares_the_seedings_over_the_same_tournaments_and_writes_the_figures(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_seeding", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    figures = json.loads(figures_path.read_text())
    assert {cell["seeding"] for cell in figures["cells"]} == {"openskill", "leaderboard", "random"}
    for cell in figures["cells"]:
        least, most = cell["tau_range"]
        assert -1 <= least <= cell["median_tau"] <= most <= 1
        assert 0 <= cell["strongest_first"] <= 1
        low, mean, high = cell["tau_minus_leaderboard"]
        assert low <= mean <= high
        if cell["seeding"] == "leaderboard":
            assert (low, mean, high) == (0, 0, 0)
    assert "| leaderboard |" in completed.stdout


def test_a_swiss_of_a_clear_field_ranks_it_and_pairs_no_rematch():
    sys.path.insert(0, str(ROOT))
    from bench.bench_seeding import swiss

    # Gaps so wide that the stronger always wins: eight agents, three rounds.
    truth = -np.arange(8) * 50.0
    order = swiss(truth, seeds=list(range(8)), rounds=3, rng=np.random.default_rng(1))
    assert order[0] == 0 and sorted(order) == list(range(8))
