"""The embedded default as ``scripts/demo.sh`` serves it, with real processes: SQLite in a
private ``var/``, the embedded broker, and ``run_gateway --manager`` with the Celery worker
it starts. The organizer's Launch answers at once; the worker plays the tournament while
the pages follow it; a worker killed in the middle of a duel is reported and started
again, and the duel is played again once; nothing is left running after a Ctrl-C, and
SQLite never says "database is locked"."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.agents import SLOW_AGENT
from tests.support.embedded import (
    ORGANIZER_EMAIL,
    ORGANIZER_PASSWORD,
    EmbeddedSite,
    wait_until,
)

pytestmark = pytest.mark.slow

PLAYERS = ("ann", "bob", "cid")
SEED = f"""
import json
from core.services.accounts import user_create
from core.models import Environment, Role
from core.services.environments import environments_import
from core.services.revisions import competitor_get_or_create, revision_create

environments_import()
# The games' standing ladders off, as in tests.pipeline: the site's worker plays only the
# tournaments the tests launch, not a ladder of the three uploads beside them.
Environment.objects.update(standing_competition=False)
organizer = user_create(
    email={ORGANIZER_EMAIL!r},
    display_name="Organizer",
    role=Role.ORGANIZER,
    password={ORGANIZER_PASSWORD!r},
)
environment = Environment.objects.get(name="sum_to_10")
for name in {PLAYERS!r}:
    competitor = competitor_get_or_create(
        owner=organizer, environment=environment, name=name, is_public=True
    )
    revision = revision_create(
        competitor=competitor,
        uploaded_by=organizer,
        filename="main.py",
        content={SLOW_AGENT.encode()!r},
    )
print(json.dumps("seeded"))
"""


def draft(players: tuple[str, ...], matches: int) -> str:
    """Python that makes a draft round robin of ``players`` and prints its id."""
    return f"""
import json
from core.models import Environment, Revision
from tournament_manager.services.tournaments import tournament_create

revisions = Revision.objects.filter(
    competitor__environment__name="sum_to_10", competitor__name__in={players!r}
)
tournament = tournament_create(
    environment=Environment.objects.get(name="sum_to_10"),
    name="Round robin of {"-".join(players)}",
    revisions=revisions,
    matches_per_duel={matches},
)
print(json.dumps(tournament.pk))
"""


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, embedded_database: Path
) -> Iterator[EmbeddedSite]:
    """A served embedded site with three validated players. Short duel leases, so that a
    killed worker's duel is taken over in seconds."""
    site = EmbeddedSite(
        tmp_path_factory.mktemp("embedded"),
        database=embedded_database,
        ARENA_DUEL_LEASE_SECONDS="5",
        ARENA_EMBEDDED_WORKER_CONCURRENCY="2",
    )
    try:
        site.run(SEED)
        site.serve()

        def validated() -> bool:
            return all(
                site.get(f"/competitors/sum_to_10/{name}/revisions/1")["validation"]["status"]
                == "succeeded"
                for name in PLAYERS
            )

        wait_until(validated, timeout=90, what="the worker to validate the uploads", site=site)
        yield site
    finally:
        site.close()
    assert "database is locked" not in site.server_log() + site.worker_log()


def launch_from_the_admin(site: EmbeddedSite, tournament_id: int) -> None:
    """The organizer's Launch action on the tournament."""
    session = site.organizer_session()
    changelist = f"{site.url}/admin/core/tournament/"
    session.get(changelist, timeout=30).raise_for_status()
    response = session.post(
        changelist,
        data={
            "action": "launch",
            "select_across": "0",
            "index": "0",
            "_selected_action": str(tournament_id),
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        headers={"Referer": changelist},
        allow_redirects=False,
        timeout=60,
    )
    assert response.status_code == 302, response.text[-2000:]


def played_by(tournament_id: int) -> str:
    """Python that prints the worker (host:pid) that played each of a tournament's duels."""
    return f"""
import json
from core.models import Duel

duels = Duel.objects.filter(tournament={tournament_id})
print(json.dumps(list(duels.values_list("played_by", flat=True))))
"""


def completed(site: EmbeddedSite, tournament_id: int, *, what: str) -> dict[str, Any]:
    """The tournament, once it has completed (as its API shows it)."""
    wait_until(
        lambda: site.get(f"/tournaments/{tournament_id}")["status"] == "completed",
        timeout=120,
        what=what,
        site=site,
    )
    return site.get(f"/tournaments/{tournament_id}")


def test_the_admins_launch_answers_at_once_and_the_worker_plays_the_tournament(site):
    tournament_id = site.run(draft(PLAYERS, matches=6))

    launch_from_the_admin(site, tournament_id)

    page = site.page(f"/tournaments/{tournament_id}/")
    tournament = completed(site, tournament_id, what="the worker to play the tournament")
    # Eagerly, the request would have played the three duels before answering: the
    # worker's processes played them, never the site's.
    players = site.run(played_by(tournament_id))
    assert len(players) == 3 and all(players), players
    assert site.server is not None
    assert all(int(worker.rpartition(":")[2]) != site.server.pid for worker in players)
    if tournament["duels_done"] < 3:
        assert 'http-equiv="refresh"' in page  # it follows the tournament as it is played
    assert (tournament["duels_done"], tournament["duels_failed"]) == (3, 0)
    standings = tournament["standings"]
    assert sorted(row["competitor"] for row in standings) == sorted(PLAYERS)
    assert all(row["rank"] for row in standings)
    assert sum(row["points"] for row in standings) == 2 * 3
    assert sum(row["wins"] + row["draws"] + row["losses"] for row in standings) == 2 * 3
    page = site.page(f"/tournaments/{tournament_id}/")
    assert "3 of 3 duels played" in page
    assert all(name in page for name in PLAYERS)
    assert 'http-equiv="refresh"' not in page
    assert "embedded-" in site.worker_log() and "play_duel" in site.worker_log()
    # Neither the server nor the tournament manager's passes had anything to warn about.
    assert [line for line in site.server_log().splitlines() if "WARNING" in line] == []


def test_a_killed_workers_duel_is_played_again_once_by_the_next_worker(site):
    # 40 matches of about 0.25 s: ten seconds in which to kill the worker.
    tournament_id = site.run(draft(("ann", "bob"), matches=40))
    launch_from_the_admin(site, tournament_id)
    [duel] = site.get(f"/duels?tournament={tournament_id}")["items"]
    wait_until(
        lambda: site.get(f"/duels/{duel['id']}")["status"] == "running",
        timeout=30,
        what="the worker to start the duel",
        site=site,
    )
    time.sleep(1)

    # The worker and its pool, playing the duel, at once: as if the machine lost them.
    os.killpg(site.worker_pid(), signal.SIGKILL)

    tournament = completed(
        site, tournament_id, what="the duel to be played again and the tournament to finish"
    )
    duel = site.get(f"/duels/{duel['id']}")
    assert (duel["status"], duel["attempts"]) == ("succeeded", 2)
    matches = site.get(f"/duels/{duel['id']}/matches?limit=1")
    assert matches["count"] == 40
    assert (tournament["duels_done"], tournament["duels_failed"]) == (1, 0)
    # Counted once: one duel's points and matches in the standings.
    standings = tournament["standings"]
    assert sum(row["points"] for row in standings) == 2
    assert sum(row["wins"] + row["draws"] + row["losses"] for row in standings) == 2
    assert "The Celery worker stopped by itself (killed by SIGKILL)" in site.server_log()
    assert site.worker_log().count(" started\n") >= 2


# SIGTERM is what `kill`, systemd and `docker stop` send. uvicorn shuts down in order and
# then raises the signal again: without a handler of the command's own, SIGTERM's default
# action ended the process there, leaving its worker to a cold shutdown (found by
# bench/bench_soak.py).
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_ctrl_c_or_a_sigterm_stops_the_server_and_its_worker_in_order(
    tmp_path: Path, embedded_database: Path, number: signal.Signals
):
    site = EmbeddedSite(tmp_path, database=embedded_database)
    try:
        site.serve()
        worker = site.worker_pid()
        assert worker in site.processes()

        code = site.stop(number)

        assert code == 0, site.server_log()
        assert site.processes() == []
        assert "Stopping the Celery worker" in site.server_log()
        assert "Warm shutdown" in site.worker_log()
        assert "Cold shutdown" not in site.worker_log()
        assert site.server_log().rstrip().endswith("Stopped.")
    finally:
        site.close()


def test_a_killed_server_takes_its_worker_with_it(tmp_path: Path, embedded_database: Path):
    site = EmbeddedSite(tmp_path, database=embedded_database)
    try:
        site.serve()
        assert site.worker_pid() in site.processes()

        site.stop(signal.SIGKILL)

        wait_until(lambda: site.processes() == [], timeout=30, what="the worker to go", site=site)
        assert "Cold shutdown" in site.worker_log()
    finally:
        site.close()
