"""A second worker host takes duels from the same queue: its own Docker engine (a second
``dockerd`` on this machine, so no image is shared), its own engine proxy, build folder,
sandbox folder, wheel cache and no media folder, its workers in their own UTS namespace
(host name ``arena-host-2``), against the same PostgreSQL and Redis as host 1.

Revisions built and validated on host 1 are played on host 2 once host 2 has built their
images itself; every duel of the tournament is played once and counted once, by one host
or the other; and host 2 builds and validates an upload on its own.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import transaction

from core.models import (
    Duel,
    DuelStatus,
    Environment,
    RatingChange,
    Revision,
    Tournament,
    TournamentStatus,
)
from sandboxes import docker_engine
from tests.pipeline import PLAYERS, make_user, make_zip, pipeline, upload  # noqa: F401
from tests.support.agents import USES_SIX
from tests.support.docker import docker_base_image  # noqa: F401
from tests.support.engine_proxy import RunningProxy, engine_proxy_running
from tests.support.require import require
from tests.support.second_engine import Engine, second_engine_problem, second_engine_running
from tests.support.workers import Workers, wait_for
from tournament_manager.services.tournaments import tournament_create, tournament_launch

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]

MATCHES = 20


@dataclasses.dataclass
class Host:
    name: str
    folder: Path
    proxy: RunningProxy
    base_image: str

    def environment(self) -> dict[str, str]:
        """A worker's settings on this host, as docker-compose.worker.yml gives them."""
        return {
            "ARENA_SANDBOX": "docker",
            "ARENA_DOCKER_IMAGE": self.base_image,
            "DOCKER_HOST": self.proxy.docker_host,
            "ARENA_BUILD_ROOT": str(self.folder / "builds"),
            "ARENA_SANDBOX_ROOT": str(self.folder / "sandboxes"),
            "ARENA_WHEEL_CACHE": str(self.folder / "wheels"),
            "ARENA_MEDIA_ROOT": str(self.folder / "media-never-written"),
            "ARENA_REQUIREMENTS_DENY": "",
            "ARENA_REQUIREMENTS_ALLOW": "",
        }

    def start(self, workers: Workers, name: str, queues: str, concurrency: int = 1) -> None:
        workers.start(
            name,
            queues=queues,
            concurrency=concurrency,
            hostname=self.name,
            **self.environment(),
        )


@pytest.fixture
def second_engine(docker_base_image: str) -> Iterator[Engine]:  # noqa: F811
    problem = second_engine_problem()
    require(problem is None, f"{problem}, so the second-host test cannot run")
    bridge = Path("/sys/class/net/docker0")
    bridge_before = bridge.exists()
    with second_engine_running(docker_base_image) as engine:
        yield engine
    # The machine's engine keeps its bridge: a second dockerd in the machine's network
    # namespace would have deleted it, and every later container start would fail.
    assert bridge.exists() == bridge_before, "the second engine deleted the machine's docker0"


def host_folder(name: str) -> Path:
    # Below /tmp, not pytest's tmp_path: agents' users must traverse the sandbox folder.
    folder = Path(tempfile.mkdtemp(prefix=f"arena-test-{name}-"))
    folder.chmod(0o755)
    for sub in ("builds", "sandboxes", "wheels"):
        (folder / sub).mkdir()
    return folder


@pytest.fixture
def two_hosts(second_engine: Engine, docker_base_image: str) -> Iterator[tuple[Host, Host]]:  # noqa: F811
    folders = [host_folder("host-1"), host_folder("host-2")]
    try:
        with (
            engine_proxy_running([folders[0] / "sandboxes"]) as proxy_1,
            engine_proxy_running(
                [folders[1] / "sandboxes"], engine=second_engine.socket
            ) as proxy_2,
        ):
            yield (
                Host("arena-host-1", folders[0], proxy_1, docker_base_image),
                Host("arena-host-2", folders[1], proxy_2, docker_base_image),
            )
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def validated(revisions: list[Revision]) -> bool:
    for revision in revisions:
        revision.refresh_from_db()
    return all(r.is_valid or "failed" in (r.build_status, r.validation_status) for r in revisions)


def host_of(duel: Duel) -> str:
    return duel.played_by.split(":")[0]


def test_a_second_host_takes_duels_from_the_same_queue(two_hosts, second_engine, celery_workers):
    # In this order, so that the workers stop before the engines and proxies they use.
    host_1, host_2 = two_hosts
    host_1.start(celery_workers, "host-1", "build,duels")
    owner = make_user()
    revisions = [
        upload(owner, "connect_four", "minimax", PLAYERS / "connect_four" / "minimax.py"),
        upload(owner, "connect_four", "rando", PLAYERS / "connect_four" / "random_player.py"),
        upload(owner, "connect_four", "rando-2", PLAYERS / "connect_four" / "random_player.py"),
        upload(owner, "connect_four", "kaggle", PLAYERS / "connect_four" / "kaggle_style.py"),
        upload(
            owner,
            "connect_four",
            "six-user",
            make_zip({"main.py": USES_SIX, "requirements.txt": b"six==1.16.0\n"}),
            filename="bot.zip",
        ),
    ]
    wait_for(lambda: validated(revisions), timeout=180, what="host 1 to build and validate")
    assert all(r.is_valid for r in revisions), celery_workers.log("host-1")[-3000:]
    assert second_engine.images("arena-revision") == set()  # host 2 has none of them

    # Two duel processes on each host, as docker-compose runs them (ARENA_DUEL_WORKERS).
    host_1.start(celery_workers, "host-1-duels", "duels", concurrency=2)
    host_2.start(celery_workers, "host-2", "duels", concurrency=2)
    with transaction.atomic():
        tournament = tournament_create(
            environment=Environment.objects.get(name="connect_four"),
            name="Two hosts",
            revisions=revisions,
            matches_per_duel=MATCHES,
        )
        tournament_launch(tournament=tournament)
    wait_for(
        lambda: Tournament.objects.filter(
            pk=tournament.pk, status__in=[TournamentStatus.COMPLETED, TournamentStatus.FAILED]
        ).exists(),
        timeout=240,
        what="both hosts to play the tournament",
    )

    tournament.refresh_from_db()
    duels = list(tournament.duels.with_seats())
    logs = {name: celery_workers.log(name) for name in ("host-1", "host-1-duels", "host-2")}
    assert tournament.status == TournamentStatus.COMPLETED, [d.error for d in duels]
    assert len(duels) == 10 and (tournament.duels_done, tournament.duels_failed) == (10, 0)
    by_host = {host_of(duel) for duel in duels}
    assert by_host == {"arena-host-1", "arena-host-2"}, [d.played_by for d in duels]
    for duel in duels:  # each played once, and counted once
        assert duel.status == DuelStatus.SUCCEEDED and duel.job.attempts == 1
        assert duel.matches.count() == MATCHES
        assert RatingChange.objects.filter(duel=duel).count() == 2 * MATCHES
    standings = tournament.participants.all()
    assert sum(p.points for p in standings) == 2 * len(duels)  # 2 points handed out a duel
    assert sum(p.wins + p.losses + p.draws for p in standings) == 2 * len(duels)
    on_host_2 = {r for d in duels if host_of(d) == "arena-host-2" for r in d.revisions()}
    # Host 2 built each image it played, itself, before playing it.
    assert {r.image for r in on_host_2} <= second_engine.images("arena-revision")
    built_here = re.findall(r"built (\S+ v\d+) on this host in [0-9.]+ s", logs["host-2"])
    # Once each, though two processes of host 2 may want one at the same moment.
    assert sorted(built_here) == sorted(str(r) for r in on_host_2), logs["host-2"][-3000:]
    assert "on this host in" not in logs["host-1"] + logs["host-1-duels"]  # built there
    if any(r.competitor.name == "six-user" for r in on_host_2):
        assert list((host_2.folder / "wheels" / "sets").glob("*/wheels/six-1.16.0-*.whl"))
    assert not (host_2.folder / "media-never-written").exists()

    # Host 2 alone builds and validates a new upload: its bytes come from PostgreSQL.
    celery_workers.stop_all()
    host_2.start(celery_workers, "host-2-again", "build,duels")
    late = upload(owner, "connect_four", "late", PLAYERS / "connect_four" / "kaggle_style.py")
    wait_for(lambda: validated([late]), timeout=120, what="host 2 to build and validate")
    assert late.is_valid, late.job("build").error or late.job("validation").error
    assert late.image in second_engine.images("arena-revision")
    assert "on this host in" not in celery_workers.log("host-2-again")  # its own build

    # Stopped workers leave no container on either engine (their warm pools included).
    celery_workers.stop_all()
    ours = [
        docker_engine.container_name(container)
        for container in docker_engine.containers_labelled({docker_engine.LABEL_ROLE: "agent"})
        if docker_engine.container_labels(container)
        .get(docker_engine.LABEL_OWNER, "")
        .startswith("arena-host-")
    ]
    assert ours == []
    assert second_engine.docker("ps", "-aq").stdout.split() == []
    # Everything went through each host's engine proxy, and it refused nothing.
    assert host_1.proxy.refusals() == host_2.proxy.refusals() == []
