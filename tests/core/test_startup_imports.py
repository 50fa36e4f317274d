"""Every Arena process starts with Django (a worker, a gateway, each ``manage.py``
command): scipy and NumPy, which only a leaderboard fit or a ladder's pairing uses,
openskill (a duel's rating), the Docker SDK with requests and urllib3 (a build or a docker
duel) and the apps' admin modules (a page of the admin) are imported then, not at start.
Together they were about half of each process's start: 1.0 s of CPU of 2.0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STARTED = """
import os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "core.settings"
import django
django.setup()
import api.v1, web.urls
HEAVY = ("scipy", "scipy.sparse", "numpy", "openskill", "docker", "tournament_manager.admin")
print(" ".join(name for name in HEAVY if name in sys.modules))
"""


def test_a_django_process_starts_without_what_only_some_of_its_work_uses():
    run = subprocess.run(
        [sys.executable, "-c", STARTED], cwd=ROOT, capture_output=True, text=True, timeout=120
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == ""


def test_a_leaderboard_fit_imports_it_when_it_runs():
    fitted = STARTED.replace(
        "import api.v1, web.urls",
        "from tournament_manager.bradley_terry import Games, fit\n"
        "fit(['a', 'b'], [Games('a', 'b', 2, 1.5)])",
    )
    run = subprocess.run(
        [sys.executable, "-c", fitted], cwd=ROOT, capture_output=True, text=True, timeout=120
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["scipy", "scipy.sparse", "numpy"]


def test_a_build_imports_the_docker_sdk_when_it_runs():
    # What the builder's receiver does when a revision's build is missing on this host.
    building = STARTED.replace(
        "import api.v1, web.urls", "from builder.services import revision_build_here"
    )
    run = subprocess.run(
        [sys.executable, "-c", building], cwd=ROOT, capture_output=True, text=True, timeout=120
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["docker"]
