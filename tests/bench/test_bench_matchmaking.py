from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_compares_the_policies_over_seeded_ladders_and_writes_the_figures(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_matchmaking", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    figures = json.loads(figures_path.read_text())
    assert {cell["policy"] for cell in figures["cells"]} == {"leaderboard", "openskill", "random"}
    for cell in figures["cells"]:
        assert cell["ladders"] == figures["ladders_per_cell"] > 0
        for budget in ("25 %", "50 %"):
            point = cell[budget]
            low, high = point["share_interval"]
            assert 0 <= low <= point["share_at_target"] <= high <= 1
            least, most = point["tau_range"]
            assert -1 <= least <= point["median_tau"] <= most <= 1
            assert 0 <= point["chance_9_of_10"] <= 1
    assert "| leaderboard |" in completed.stdout


def test_the_same_seed_plays_the_same_ladder():
    sys.path.insert(0, str(ROOT))
    from bench import bench_matchmaking as bench

    truth = bench.strengths((23.5, 22, 23, 19, 27), 1.0)
    for policy in bench.POLICIES.values():
        first = bench.run_ladder(truth, policy, 7, [20, 40])
        assert bench.run_ladder(truth, policy, 7, [20, 40]) == first


def test_the_chance_of_9_of_10_is_binomial():
    sys.path.insert(0, str(ROOT))
    from bench.bench_matchmaking import at_least_9_of_10

    assert at_least_9_of_10(1.0) == 1.0
    assert at_least_9_of_10(0.0) == 0.0
    assert abs(at_least_9_of_10(0.9) - 0.7361) < 1e-4
