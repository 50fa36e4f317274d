"""The round-robin benchmark's smoke run: a fresh embedded site of this checkout, three
agents uploaded and validated by its own worker, a round robin launched and timed to its
end, every duel and match played."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_it_times_a_round_robin_on_a_fresh_site(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_round_robin", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert completed.returncode == 0, completed.stderr[-3000:] + completed.stdout
    assert "| duels/min |" in completed.stdout
    figures = json.loads(figures_path.read_text())
    (candidate,) = figures["checkouts"]
    assert candidate["checkout"]["role"] == "candidate"
    (played,) = candidate["rounds"]
    # Three agents: three duels of two matches, each played (the benchmark stops otherwise).
    assert (played["duels"], played["matches"]) == (3, 6)
    assert played["wall_seconds"] > 0 and played["cpu_per_duel"] > 0
