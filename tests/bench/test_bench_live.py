from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_measures_the_duel_with_and_without_the_live_feed(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_live", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    figures = json.loads(figures_path.read_text())
    assert set(figures["moves_per_second"]) == {"off", "feed, no sink", "feed, SQLite"}
    assert all(rate > 0 for rate in figures["moves_per_second"].values())
    assert "feed, SQLite" in completed.stdout
