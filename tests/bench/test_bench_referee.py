from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_measures_every_row_and_writes_the_figures(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_referee", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    for row in ("in-process", "pipe ping-pong", "JSON ping-pong", "referee, process sandbox"):
        assert row in completed.stdout
    figures = json.loads(figures_path.read_text())
    for key in ("in_process", "ping_pong", "json_ping_pong", "referee"):
        assert figures[f"{key}_moves_per_second"] > 0
    assert figures["duel_moves"] > 0 and figures["duel_wall_seconds"] > 0
