"""The worker-hosts benchmark's smoke run: one host and two (a second Docker engine), real
PostgreSQL, Redis and Celery workers, on throwaway servers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docker import docker_base_image
from tests.support.postgres import find_bindir
from tests.support.require import require
from tests.support.second_engine import second_engine_problem

pytestmark = pytest.mark.slow

__all__ = ["docker_base_image"]

ROOT = Path(__file__).resolve().parents[2]


def test_it_measures_duels_per_minute_with_one_host_and_with_two(docker_base_image, tmp_path):
    problem = second_engine_problem()
    require(problem is None, f"{problem}, so the worker-hosts benchmark cannot run")
    require(shutil.which("redis-server"), "redis-server is not installed, so it cannot run")
    require(find_bindir(), "PostgreSQL is not installed, so the worker-hosts benchmark cannot run")
    figures_path = tmp_path / "figures.json"

    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_hosts", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "two hosts / one host:" in completed.stdout
    figures = json.loads(figures_path.read_text())
    assert figures["duels_per_minute"]["one host"] > 0
    assert figures["duels_per_minute"]["two hosts"] > 0
    [shares] = figures["two_host_shares"]
    assert sum(shares.values()) == figures["duels"]
    # Host 2 built host 1's revisions itself, once each, in its warm-up.
    assert len(figures["host_2_builds"]) == len(figures["agents"])
