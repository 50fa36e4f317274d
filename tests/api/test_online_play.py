"""Online play end to end, as a new user meets it: a token, a model registered through
the API, the reference agent connected with ``python -m arena_sdk connect`` from another
process, matched in a ladder against hosted agents, rated, on the leaderboard, replayed.

Twice: on the production path (Redis seat bus, the ``online`` queue's Celery worker in
threads, the tournament manager and the gateway as their own processes) and on the
embedded default (one ``run_gateway --manager`` process, no Redis).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from core.models import Competitor, Duel, DuelStatus, Match, RatingChange
from core.services.accounts import api_token_create
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tests.support.gateway import GATEWAY_SETTINGS, Gateway, wait_until_up
from tests.support.redis import free_port
from tests.support.require import require
from tests.support.workers import Workers, wait_for
from tournament_manager.services.tournaments import tournament_create, tournament_launch

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]

RANDOM = PLAYERS / "connect_four" / "random_player.py"
#: Pair the online agent with hosted ones at once, one hosted duel at a time.
QUICK_LADDER = {"ARENA_ONLINE_FILL_SECONDS": "0", "ARENA_LADDER_CONCURRENT_DUELS": "1"}


def _hosted_field(owner) -> None:
    for name in ("minimax.py", "random_player.py"):
        upload(owner, "connect_four", name[:-3].replace("_", "-"), PLAYERS / "connect_four" / name)


def _register(gateway: Gateway, owner) -> str:
    """Through the API, as the README says: a user token with 'play', then the model."""
    _, user_token = api_token_create(user=owner, name="cli", scopes=["read", "play"])
    status, answer, _ = gateway.request(
        "POST",
        "/api/v1/online/models",
        token=user_token,
        body=b'{"environment": "connect_four", "name": "net-random", "public": true}',
    )
    assert status == 201, answer
    return str(answer["token"])


def _connect(gateway: Gateway, token: str, duels: int) -> subprocess.CompletedProcess[str]:
    with tempfile.NamedTemporaryFile("w", suffix=".token") as token_file:
        token_file.write(token)
        token_file.flush()
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "arena_sdk",
                "connect",
                "--server",
                gateway.url,
                "--token-file",
                token_file.name,
                "--duels",
                str(duels),
                str(RANDOM),
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )


def _assert_played_rated_and_replayed(duels: int) -> None:
    online = Competitor.objects.get(name="net-random")
    assert online.is_online
    played = Duel.objects.with_competitor(online).filter(status=DuelStatus.SUCCEEDED)
    # The client has its 'bye' a moment before the referee has stored the duel.
    wait_for(lambda: played.count() >= duels, timeout=30, what="the duels to be stored")
    for duel in played:
        assert duel.error == ""  # a well-behaved online agent is charged nothing
    # Rated by its tournament right after it is stored, in the next transaction.
    wait_for(
        lambda: RatingChange.objects.filter(rating__competitor=online).exists(),
        timeout=30,
        what="the duels to be rated",
    )
    match = Match.objects.filter(duel__in=played).first()
    assert match is not None and match.steps > 0
    browser = Client()
    page = browser.get(online.get_absolute_url())
    assert page.status_code == 200
    assert "plays online" in page.content.decode()
    replay = browser.get(reverse("match", args=[match.duel_id, match.index]))
    assert replay.status_code == 200


@dataclasses.dataclass
class Production:
    """The production path, running: workers, the tournament manager, the gateway, two
    validated hosted agents in a running ladder, and a model's token."""

    workers: Workers
    gateway: Gateway
    gateway_process: subprocess.Popen[bytes]
    port: int
    token: str
    common: dict[str, str]


@pytest.fixture
def production(celery_workers, redis_url, settings) -> Production:
    settings.ARENA_ONLINE_BUS_URL = redis_url
    owner = make_user()
    # The seats' clocks are not what these tests check: a generous allowance (added to
    # each deadline, taken off each measured time) keeps a loaded machine, or a gateway
    # restarting on one, from timing an agent out; and a grace longer than the default
    # 30 s, which a slow restart and the client's backoff (up to 10 s) could outlast.
    common = {
        "ARENA_ONLINE_BUS_URL": redis_url,
        "ARENA_ONLINE_ALLOWANCE_SECONDS": "60",
        "ARENA_ONLINE_GRACE_SECONDS": "120",
        **QUICK_LADDER,
    }
    celery_workers.start("hosted", **common)
    celery_workers.start("online", queues="online", pool="threads", concurrency=8, **common)
    celery_workers.manage("manager", "run_tournament_manager", "--interval", "0.5", **common)
    port = free_port()
    process = celery_workers.manage(
        "gateway", "run_gateway", "--port", str(port), **common, **GATEWAY_SETTINGS
    )
    gateway = wait_until_up(Gateway("127.0.0.1", port, celery_workers))
    _hosted_field(owner)
    wait_for(
        lambda: Competitor.objects.filter(revisions__validation_status="succeeded").count() == 2,
        timeout=90,
        what="the hosted agents to be validated",
    )
    token = _register(gateway, owner)
    ladder = tournament_create(
        environment=Competitor.objects.first().environment,
        name="ladder",
        revisions=[],
        format="ladder",
    )
    tournament_launch(tournament=ladder)
    return Production(celery_workers, gateway, process, port, token, common)


def test_it_plays_an_online_agent_through_redis_and_the_online_workers(production):
    client = _connect(production.gateway, production.token, duels=2)

    assert client.returncode == 0, client.stderr + production.workers.log("online")
    assert client.stderr.count("duel over") == 2
    _assert_played_rated_and_replayed(2)
    assert "online@" in production.workers.log("online")  # refereed by the online worker


def test_a_queued_model_is_paired_only_once_its_client_holds_its_stream(production):
    """A model in the queue whose client has no stream open (it left, or never came) is
    not paired: the hosted agents play on meanwhile; once its client connects, it plays."""
    status, queued, _ = production.gateway.request(
        "POST", "/api/v1/online/queue", token=production.token
    )
    assert status == 200 and queued["model"]["connected"] is False
    hosted = Duel.objects.filter(status=DuelStatus.SUCCEEDED, tournament__name="ladder")

    # The manager makes a pass every half second: while it pairs the hosted agents again
    # and again, it never pairs the model.
    wait_for(lambda: hosted.count() >= 3, timeout=120, what="three hosted ladder duels")
    assert not Duel.objects.filter(seats__revision__competitor__name="net-random").exists()

    client = _connect(production.gateway, production.token, duels=1)
    assert client.returncode == 0, client.stderr + production.workers.log("online")
    _assert_played_rated_and_replayed(1)


def test_it_plays_an_online_agent_on_the_embedded_default(settings, tmp_path: Path):
    """No Redis: the gateway's process referees the online duels (its bus is in memory);
    the embedded broker's worker it starts plays the hosted ones."""
    from django.db import connection

    require(
        connection.vendor == "postgresql",
        "the gateway process needs the PostgreSQL test database (SQLite's is private)",
    )
    owner = make_user()
    _hosted_field(owner)  # built and validated in this process (eagerly)
    processes = Workers("", settings, tmp_path)
    try:
        port = free_port()
        processes.manage(
            "gateway",
            "run_gateway",
            "--port",
            str(port),
            "--manager",
            "--interval",
            "0.5",
            ARENA_ONLINE_BUS_URL="",
            ARENA_VAR_DIR=str(tmp_path / "var"),
            **QUICK_LADDER,
            **GATEWAY_SETTINGS,
        )
        gateway = wait_until_up(Gateway("127.0.0.1", port, processes))
        token = _register(gateway, owner)
        ladder = tournament_create(
            environment=Competitor.objects.first().environment,
            name="ladder",
            revisions=[],
            format="ladder",
        )
        tournament_launch(tournament=ladder)

        client = _connect(gateway, token, duels=2)

        assert client.returncode == 0, client.stderr + processes.log("gateway")
        _assert_played_rated_and_replayed(2)
    finally:
        processes.stop_all()


SLOW_AGENT = """\
import time

from arena_sdk import Agent


class Thoughtful(Agent):
    def act(self, turn):
        time.sleep(0.15)
        return turn.random.choice(turn.legal_actions)
"""


def test_it_resumes_a_duel_by_itself_when_the_gateway_restarts_midway(production, tmp_path: Path):
    gateway, workers = production.gateway, production.workers
    agent_file = tmp_path / "thoughtful.py"
    agent_file.write_text(SLOW_AGENT)
    token_file = tmp_path / "model.token"
    token_file.write_text(production.token)
    client = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena_sdk",
            "connect",
            "--server",
            gateway.url,
            "--token-file",
            str(token_file),
            "--duels",
            "1",
            str(agent_file),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: Duel.objects.filter(status=DuelStatus.RUNNING).with_online_seat().exists(),
            timeout=60,
            what="the online duel to start",
        )
        time.sleep(1.0)  # some moves in
        duel = Duel.objects.filter(status=DuelStatus.RUNNING).with_online_seat().get()
        workers.kill(production.gateway_process)  # as if its machine died
        time.sleep(1.0)
        workers.manage(
            "gateway-again",
            "run_gateway",
            "--port",
            str(production.port),
            **production.common,
            **GATEWAY_SETTINGS,
        )
        _, stderr = client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()

    assert client.returncode == 0, stderr
    assert "reconnecting" in stderr
    wait_for(
        lambda: Duel.objects.filter(pk=duel.pk, status=DuelStatus.SUCCEEDED).exists(),
        timeout=30,
        what="the duel to be stored",
    )
    duel.refresh_from_db()
    assert duel.error == ""  # nobody was charged anything for Arena's restart
