from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.docker import docker_base_image

__all__ = ["docker_base_image"]

ROOT = Path(__file__).resolve().parents[2]


def test_it_measures_containers_against_host_processes(docker_base_image, tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_docker", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    assert "docker / process referee" in completed.stdout
    figures = json.loads(figures_path.read_text())
    assert figures["image"] == docker_base_image
    for row in ("process_referee", "docker_referee", "socket_ping_pong", "attach_ping_pong"):
        assert figures[f"{row}_moves_per_second"] > 0
