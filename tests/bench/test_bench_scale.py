from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_it_grows_one_environment_and_measures_each_size(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_scale", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert completed.returncode == 0, completed.stderr
    assert "pairing pass" in completed.stdout
    rows = json.loads(figures_path.read_text())["rows"]
    assert [(row["agents"], row["matches"]) for row in rows] == [(30, 300), (60, 600)]
    for row in rows:
        # Every agent idle: the pass fills the ladder's hosted slots (2 by default).
        assert row["pairs"] == 2
        assert row["refit_queries"] > 0 and row["leaderboard_page_queries"] > 0
        # Every agent played: the refit read the whole history.
        assert row["leaderboard_entries"] == row["agents"]
