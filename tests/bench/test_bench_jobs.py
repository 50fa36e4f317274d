"""The jobs benchmark's smoke run: two checkouts of the code (this one, and its own HEAD
in a temporary worktree) side by side, each uploading, validating and playing a round
robin on a throwaway SQLite database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_it_compares_two_checkouts_side_by_side_and_writes_the_figures(tmp_path):
    figures_path = tmp_path / "figures.json"
    command = [sys.executable, "-m", "bench.bench_jobs", "--quick", "--baseline", "HEAD"]
    completed = subprocess.run(
        [*command, "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "round robin, launch to finished" in completed.stdout
    figures = json.loads(figures_path.read_text())
    assert figures["checkouts"]["baseline"]["temporary"]
    assert figures["checkouts"]["candidate"]["path"] == str(ROOT)
    assert figures["same_games"]
    for role in ("baseline", "candidate"):
        [measured] = figures["samples"][role]
        assert measured["round_robin"]["duels"] == figures["duels"] == 6
        assert len(measured["uploads"]) == figures["uploads_per_round"]
    assert figures["summary"]["round_robin"]["ratio"] > 0
    assert figures["target_met"] == {"round_robin": None, "upload": None}
    # The temporary worktree is gone.
    worktrees = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True, check=True
    )
    assert "arena-bench-jobs-" not in worktrees.stdout
