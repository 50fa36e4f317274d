"""docker-compose.yml for real: a fresh clone's stack (``tests.support.compose_stack``)
comes up healthy and serves the site through nginx from an image that holds its
virtualenv once, and a worker container killed in the middle of a duel costs the duel one
more attempt, never a second result."""

from __future__ import annotations

import re

from tests.support.compose_stack import (
    LONG_RUNNING,
    ONE_SHOTS,
    ComposeStack,
    agents_of,
    docker,
    kill_container,
    players_upload,
    round_robin_launch,
    tournament_completed,
)

PASSWORD = "a player's long password"


def test_a_fresh_clone_comes_up_healthy(compose_stack: ComposeStack):
    containers = compose_stack.containers()
    for service in LONG_RUNNING:
        state = containers[service]["State"]
        assert (state["Status"], state["Health"]["Status"]) == ("running", "healthy"), service
        image = containers[service]["Config"]["Image"]
        assert image.endswith(f":{compose_stack.project}"), (service, image)
    for service in ONE_SHOTS:
        state = containers[service]["State"]
        assert (state["Status"], state["ExitCode"]) == ("exited", 0), service
    # The site, through nginx on its published port: pages from gunicorn, static files
    # from nginx's disk.
    session = compose_stack.session()
    assert session.get(f"{compose_stack.url}/healthz", timeout=30).ok
    home = session.get(f"{compose_stack.url}/", timeout=30)
    assert home.status_code == 200 and "<html" in home.text.lower()
    stylesheet = re.search(r"/static/[^\"']+\.css", home.text)
    assert stylesheet, home.text[:2000]
    css = session.get(f"{compose_stack.url}{stylesheet.group(0)}", timeout=30)
    assert css.ok and "max-age" in css.headers["Cache-Control"]
    # Only the host name the deployment serves.
    elsewhere = session.get(compose_stack.url, headers={"Host": "elsewhere.test"}, timeout=30)
    assert elsewhere.status_code == 400


def test_the_application_image_holds_its_virtualenv_once(compose_stack: ComposeStack):
    # A later step that touches every file of the virtualenv (a chmod -R over /opt/arena
    # did) writes all of it into a layer again: half a gigabyte more for every host.
    history = docker(
        "history",
        "--no-trunc",
        "--human=false",
        "--format",
        "{{.Size}}\t{{.CreatedBy}}",
        f"arena-app:{compose_stack.project}",
    )
    # Newest first: the layers above the virtualenv's copy come before it.
    # (The first layer, the root file system, was created by no command.)
    rows = [line.partition("\t") for line in history.splitlines()]
    layers = [(int(size), created) for size, _tab, created in rows]
    [copy] = [
        i
        for i, (_size, created) in enumerate(layers)
        if "COPY" in created and created.rstrip().endswith("in /opt/arena/venv")
    ]
    virtualenv = layers[copy][0]
    assert virtualenv > 100_000_000
    assert all(size < virtualenv // 5 for size, _created in layers[:copy]), layers[:copy]


def test_a_worker_container_killed_midway_plays_the_duel_again_once(
    compose_stack: ComposeStack,
):
    names = ("kill-ann", "kill-bob")
    players_upload(compose_stack, email="killer@example.org", password=PASSWORD, names=names)
    tournament_id = round_robin_launch(compose_stack, names=names, matches=60)
    [duel] = compose_stack.get(f"/duels?tournament={tournament_id}")["items"]
    compose_stack.wait_for(
        lambda: compose_stack.get(f"/duels/{duel['id']}")["status"] == "running",
        timeout=60,
        what="worker-duels to start the duel",
    )
    worker = compose_stack.container_id("worker-duels")
    # The duel's two agents run in containers of their own.
    compose_stack.wait_for(
        lambda: len(agents_of({worker})) >= 2, timeout=30, what="the duel's agents to start"
    )
    agents = agents_of({worker})
    restarts = compose_stack.state("worker-duels")["RestartCount"]

    kill_container(compose_stack, "worker-duels")

    # Started again by its restart policy.
    def started_again() -> bool:
        state = compose_stack.state("worker-duels")
        return state["Status"] == "running" and state["RestartCount"] == restarts + 1

    compose_stack.wait_for(started_again, timeout=60, what="worker-duels to be started again")
    assert compose_stack.container_id("worker-duels") == worker
    tournament = tournament_completed(compose_stack, tournament_id, timeout=180)
    duel = compose_stack.get(f"/duels/{duel['id']}")
    assert (duel["status"], duel["attempts"], duel["num_matches"]) == ("succeeded", 2, 60)
    assert compose_stack.get(f"/duels/{duel['id']}/matches?limit=1")["count"] == 60
    assert (tournament["duels_done"], tournament["duels_failed"]) == (1, 0)
    # Counted once: one duel's points and result in the standings, and each player rated
    # once per match of it.
    standings = tournament["standings"]
    assert sum(row["points"] for row in standings) == 2
    assert sum(row["wins"] + row["draws"] + row["losses"] for row in standings) == 2
    rated = {}
    for name in names:
        # This duel's changes (the game's standing ladder rates the uploads too): one per
        # distinct match, never two for one match. (Sum to 10 has nine openings, so a
        # 60-match duel of random agents repeats some matches, which count once.)
        ratings = compose_stack.get(
            f"/competitors/sum_to_10/{name}/ratings?duel={duel['id']}&limit=100"
        )
        indexes = [change["match_index"] for change in ratings["items"]]
        assert len(indexes) == len(set(indexes)) == ratings["count"], name
        assert 0 < ratings["count"] <= 60, name
        rated[name] = set(indexes)
    assert rated[names[0]] == rated[names[1]]
    # The killed worker's agents did not outlive it: the restarted worker removed them.
    compose_stack.wait_for(
        lambda: not agents & agents_of({worker}),
        timeout=30,
        what="the killed worker's agent containers to be removed",
    )
