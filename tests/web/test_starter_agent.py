"""An environment's page offers a starter agent and the commands to try it locally: the
file downloads, and the commands the page prints validate and play it."""

from __future__ import annotations

import html
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from core.models import Environment
from environments.registry import environment_names
from tests.factories import EnvironmentFactory
from web.views.environments import starter_path

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def test_the_starter_downloads_and_the_printed_commands_validate_and_play_it(client, tmp_path):
    environment = EnvironmentFactory(name="tic_tac_toe")
    page = client.get(environment.get_absolute_url()).content.decode()
    assert "Download a starter agent" in page

    response = client.get(f"/environments/{environment.name}/starter-agent/")
    assert response.status_code == 200
    assert 'filename="tic_tac_toe_agent.py"' in response["Content-Disposition"]
    (tmp_path / "tic_tac_toe_agent.py").write_bytes(b"".join(response.streaming_content))

    block = re.search(r"<pre[^>]*data-starter-commands><code>(.*?)</code></pre>", page, re.S)
    assert block is not None
    commands = html.unescape(block.group(1)).splitlines()
    assert len(commands) == 2
    for command in commands:
        words = shlex.split(command)
        assert words[0] == ".venv/bin/python"
        completed = subprocess.run(
            [sys.executable, *words[1:]],
            cwd=tmp_path,
            env={"PYTHONPATH": f"{ROOT}:{ROOT / 'sdk'}", "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert completed.returncode == 0, command + "\n" + completed.stderr[-2000:]


def test_every_game_has_a_starter_and_openspiel_games_share_one():
    for name in environment_names():
        assert starter_path(Environment(name=name)) is not None, name
    chess = Environment(name="chess", spec="openspiel:chess")
    assert starter_path(chess) == ROOT / "example_players" / "openspiel" / "random_player.py"
