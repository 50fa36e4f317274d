"""The compose files (``docker-compose.yml`` and its companions) as docker-compose resolves
them, without starting anything (the stack for real: ``compose_stack``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.require import require

ROOT = Path(__file__).resolve().parents[2]


def compose_config(*files: str, environment: dict[str, str] | None = None) -> dict[str, Any]:
    """The configuration docker-compose resolves from ``files`` (anchors, merges and
    variables applied), with the example settings and throwaway secrets."""
    require(
        shutil.which("docker-compose"),
        "docker-compose is not installed (apt-get install docker-compose), so the compose "
        "files cannot be checked",
    )
    arguments = ["docker-compose", "--env-file", str(ROOT / ".env.example")]
    for name in files:
        arguments += ["-f", str(ROOT / name)]
    answer = subprocess.run(
        [*arguments, "config"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "ARENA_ENV_FILE": str(ROOT / ".env.example"),
            **(environment or {}),
        },
        check=False,
    )
    assert answer.returncode == 0, answer.stderr
    return yaml.safe_load(answer.stdout)
