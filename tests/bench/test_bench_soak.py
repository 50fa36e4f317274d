"""The soak benchmark's smoke run: the embedded default served by ``run_gateway
--manager`` for two minutes, a six-agent ladder played by its own worker, the worker
killed in the middle of a duel and the site restarted, and every duel counted once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_it_soaks_a_ladder_through_a_killed_worker_and_a_restart(tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_soak", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert completed.returncode == 0, completed.stderr[-3000:] + completed.stdout
    assert "every duel counted once: yes" in completed.stdout
    figures = json.loads(figures_path.read_text())
    assert [event["event"] for event in figures["events"]] == [
        "worker killed",
        "broker restarted",
    ]
    assert figures["verdict"] == {
        "no_stuck_job": True,
        "every_duel_counted_once": True,
        "worker_killed_and_broker_restarted": True,
        "memory_flat": None,
    }
    counted = figures["counted"]
    assert counted["succeeded"] > 0
    assert counted["matches"] == counted["succeeded"] * figures["matches_per_duel"]
    assert counted["rating_changes"] == 2 * counted["matches"]
    assert not any(counted["problems"].values())
    # Each sample read the site's processes; none of the agents outlived the site.
    assert all(sample["memory"]["gateway"] > 0 for sample in figures["samples"])
    assert figures["leftover_agents"] == []
