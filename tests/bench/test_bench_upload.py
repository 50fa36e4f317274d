from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docker import docker_base_image

pytestmark = pytest.mark.slow

__all__ = ["docker_base_image"]

ROOT = Path(__file__).resolve().parents[2]


def test_it_times_uploads_to_validated_in_both_sandboxes(docker_base_image, tmp_path):
    figures_path = tmp_path / "figures.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_upload", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    assert "docker sandbox, upload to validated" in completed.stdout
    figures = json.loads(figures_path.read_text())
    assert figures["image"] == docker_base_image
    assert figures["medians"]["docker"]["seconds"] > figures["medians"]["docker"]["build"] > 0
    assert figures["medians"]["process"]["seconds"] > 0
