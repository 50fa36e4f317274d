"""The online-play benchmark's smoke run: a real gateway, real Redis, SDK clients in other
processes, on a throwaway database."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.require import require

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_it_measures_a_network_seat_load_and_idle_streams(tmp_path):
    require(shutil.which("redis-server"), "redis-server is not installed, so it cannot run")
    figures_path = tmp_path / "figures.json"

    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_online", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "identical replays" in completed.stdout
    figures = json.loads(figures_path.read_text())
    for path in ("embedded", "redis"):
        assert figures["latency"][path]["online_ms"] > 0
        assert figures["latency"][path]["same_replays"]
    assert figures["load"]["faults"] == 0
    assert figures["load"]["clients_ok"] == figures["load"]["players"]
    assert figures["idle"]["welcomed"] == figures["idle"]["connections"]
