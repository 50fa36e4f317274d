from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_times_a_refit_against_the_online_ratings_and_writes_the_figures(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_leaderboard", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    assert "refit / online" in completed.stdout
    [row] = json.loads(figures_path.read_text())["rows"]
    assert row["agents"] == row["entries"] == 20
    assert row["matches"] == 200
    assert row["refit_seconds"] > 0 and row["online_seconds"] > 0
