"""Every Arena process starts with Django (a worker, a gateway, each ``manage.py``
command): scipy and NumPy, which only a leaderboard fit or a ladder's pairing uses,
openskill (a duel's rating), the Docker SDK with requests and urllib3 (a build or a docker
duel) and the apps' admin modules (a page of the admin) are imported then, not at start.
Together they were about half of each process's start: 1.0 s of CPU of 2.0. A worker
starts without Django's system checks, whose URL checks import the site, and without
django-ninja and pydantic, which only the API uses (0.15 to 0.2 s more)."""

from __future__ import annotations

from tests.support.imports import imported_after

STARTED = """
import os
os.environ["DJANGO_SETTINGS_MODULE"] = "core.settings"
import django
django.setup()
"""
HEAVY = ("scipy", "scipy.sparse", "numpy", "openskill", "docker", "tournament_manager.admin")


def test_a_django_process_starts_without_what_only_some_of_its_work_uses():
    assert imported_after(STARTED + "import api.v1, web.urls", HEAVY) == []


def test_a_leaderboard_fit_imports_it_when_it_runs():
    fitted = (
        STARTED + "from tournament_manager.bradley_terry import Games, fit\n"
        "fit(['a', 'b'], [Games('a', 'b', 2, 1.5)])"
    )

    assert imported_after(fitted, HEAVY) == ["scipy", "scipy.sparse", "numpy"]


def test_a_build_imports_the_docker_sdk_when_it_runs():
    # What the builder's receiver does when a revision's build is missing on this host.
    building = STARTED + "from builder.services import revision_build_here"

    assert imported_after(building, HEAVY) == ["docker"]


def test_a_worker_starts_without_the_site_the_admin_or_the_fits():
    # What a Celery worker does at start: the app, then the tasks' modules, which Celery's
    # Django fix-up follows with Django's system checks unless told not to; the URL checks
    # import the site, the API and the admin (1.2 s of CPU of a start's 2.7). The
    # variable is dropped first: the test process may have it from core.celery.
    starting = (
        "import os\nos.environ.pop('CELERY_SKIP_CHECKS', None)\n"
        + STARTED
        + "from core.celery import app\napp.loader.import_default_modules()"
    )

    site = ("core.urls", "api.v1", "tournament_manager.admin", "ninja", "pydantic")
    assert imported_after(starting, (*site, "scipy", "numpy", "openskill")) == []
