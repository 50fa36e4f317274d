from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_it_times_the_round_robin_and_writes_the_figures(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_tournament", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    assert "process, 1 at a time" in completed.stdout
    assert "process, 2 at a time" in completed.stdout
    figures = json.loads(figures_path.read_text())
    agents = len(figures["agents"])
    rows = figures["rows"]
    assert {(row["backend"], row["workers"]) for row in rows} >= {("process", 1), ("process", 2)}
    # Docker is measured exactly when it is not skipped.
    assert any(row["backend"].startswith("docker") for row in rows) == (
        figures["docker_skipped"] is None
    )
    for row in rows:
        assert row["duels"] == agents * (agents - 1) // 2
        assert row["matches"] == row["duels"] * figures["matches_per_duel"]
        assert row["moves"] > 0 and row["wall_seconds"] > 0
    assert all(met is None for met in figures["target_met"].values())
