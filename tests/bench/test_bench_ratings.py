from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_ranks_the_agents_and_writes_the_figures(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_ratings", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    assert "round robin" in completed.stdout and "ladder" in completed.stdout
    figures = json.loads(figures_path.read_text())
    for part in ("round_robin", "ladder"):
        assert figures[part]["matches"] > 0
        assert -1 <= figures[part]["tau_conservative"] <= 1
        assert -1 <= figures[part]["tau_points"] <= 1
        assert figures[part]["wall_seconds"] > 0
    assert figures["ladder"]["matches"] <= figures["round_robin"]["matches"] / 2
    assert sorted(figures["round_robin"]["ranking"]) == sorted(figures["true_order"])
    assert figures["targets"]["met"] is None  # a quick run does not judge the target


def test_kendall_tau_handles_order_reversal_and_ties():
    sys.path.insert(0, str(ROOT))
    from bench.ranking import kendall_tau

    assert kendall_tau([3, 2, 1], [30, 20, 10]) == 1
    assert kendall_tau([3, 2, 1], [10, 20, 30]) == -1
    assert kendall_tau([3, 2, 1], [5, 5, 5]) == 0
    assert 0 < kendall_tau([4, 3, 2, 1], [4, 2, 3, 1]) < 1
