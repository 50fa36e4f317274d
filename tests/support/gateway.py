"""A real network gateway (``manage.py run_gateway``, uvicorn) on a loopback port, on the
test's PostgreSQL database and a real Redis seat bus, for tests that talk to it the way
online agents do: over HTTP, as well behaved or as hostile as they like; the test process
stands in for the referee on the same bus (``bus``), asking online models (registered
with ``online_model_registered``) for moves.

A gateway's start costs about 3 s of CPU (Django, the API's schemas, uvicorn), more than
most tests that talk to it: ``shared_gateways`` starts one for each set of settings once in
a test process and hands it to each test that asks (its database rows, its pages' cache
and its request rates are each test's own, as with a gateway of its own). A test that
stops, kills or restarts its gateway starts its own with ``gateway_started``."""

from __future__ import annotations

import dataclasses
import http.client
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.rates import rates_reset
from core.models import Competitor
from core.services.online import online_model_register
from sandboxes.redis_seat_bus import RedisSeatBus
from tests.factories import EnvironmentFactory, UserFactory
from tests.support.redis import free_port
from tests.support.workers import Workers

#: Settings the gateway gets in these tests: a short body deadline (slow senders), a rate
#: a flood passes quickly.
GATEWAY_SETTINGS = {
    "ARENA_REQUEST_BODY_SECONDS": "2",
    "ARENA_ONLINE_RATE": "40/s",
}
#: A referee's request for a move (``ACT % request_id``), as it reaches a client.
ACT = b'{"type":"act","id":%d,"match":0,"step":0,"observation":{},"legal_actions":[0,1,2]}'


@dataclasses.dataclass
class Gateway:
    host: str
    port: int
    #: The test's workers (a test may start more beside the gateway).
    workers: Workers
    #: A shared gateway's log; otherwise the log is the workers' "gateway".
    log_file: Path | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """One request on a new connection: status, JSON body, headers."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if body is not None:
            sent.setdefault("Content-Type", "application/json")
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            data = response.read()
            return (
                response.status,
                json.loads(data) if data else {},
                {key.lower(): value for key, value in response.getheaders()},
            )
        finally:
            connection.close()

    def log(self) -> str:
        if self.log_file is not None:
            return self.log_file.read_text(errors="replace")
        return self.workers.log("gateway")


class SharedGateways:
    """The gateways a test process's tests share, one for each set of settings, started
    by the first test that asks and stopped at the end of the run (or started again if
    one has died)."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.workers: Workers | None = None
        self.started: dict[tuple[tuple[str, str], ...], tuple[subprocess.Popen[bytes], int]] = {}

    def get(self, workers: Workers, redis_url: str, settings: Any, **environment: str) -> Gateway:
        settings.ARENA_ONLINE_BUS_URL = settings.ARENA_RATES_URL = redis_url
        if self.workers is None:
            from django.conf import settings as process_settings

            # The folders and database of the whole test process: the same for each test.
            self.workers = Workers(redis_url, process_settings, self.log_dir)
        key = tuple(sorted(environment.items()))
        found = self.started.get(key)
        if found is None or found[0].poll() is not None:
            port = free_port()
            process = self.workers.manage(
                f"gateway-{port}",
                "run_gateway",
                "--port",
                str(port),
                ARENA_ONLINE_BUS_URL=redis_url,
                **environment,
            )
            found = self.started[key] = (process, port)
        process, port = found
        log_file = self.log_dir / f"gateway-{port}.log"
        gateway = Gateway("127.0.0.1", port, workers, log_file)
        wait_until_up(gateway, process=process)
        rates_reset()
        return gateway

    def stop(self) -> None:
        if self.workers is not None:
            self.workers.stop_all()


@pytest.fixture(scope="session")
def shared_gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedGateways]:
    shared = SharedGateways(tmp_path_factory.mktemp("gateways"))
    yield shared
    shared.stop()


@pytest.fixture
def gateway(
    celery_workers: Workers, redis_url: str, settings: Any, shared_gateways: SharedGateways
) -> Gateway:
    """The gateway, with the test process's seat bus on the same Redis."""
    return shared_gateways.get(celery_workers, redis_url, settings, **GATEWAY_SETTINGS)


@pytest.fixture
def bus(redis_url: str) -> RedisSeatBus:
    """The seat bus on the gateway's Redis: the test process stands in for the referee."""
    return RedisSeatBus(redis_url)


def online_model_registered(name: str) -> tuple[Competitor, str]:
    """A new user's online model of Connect Four, and its token."""
    environment = EnvironmentFactory(name="connect_four")
    return online_model_register(owner=UserFactory(), environment=environment, name=name)


def gateway_started(workers: Workers, redis_url: str, settings: Any, **environment: str) -> Gateway:
    """A gateway on a free port with these settings (its seat bus and request rates, and
    the test process's, on ``redis_url``), once it answers; the rates count from zero."""
    settings.ARENA_ONLINE_BUS_URL = settings.ARENA_RATES_URL = redis_url
    port = free_port()
    process = workers.manage(
        "gateway",
        "run_gateway",
        "--port",
        str(port),
        ARENA_ONLINE_BUS_URL=redis_url,
        **environment,
    )
    gateway = wait_until_up(Gateway("127.0.0.1", port, workers), process=process)
    rates_reset()
    return gateway


def wait_until_up(
    gateway: Gateway, timeout: float = 180, process: subprocess.Popen[bytes] | None = None
) -> Gateway:
    """The gateway, once it answers; the test fails with its log if its process ends
    first, or if it has not answered after ``timeout`` seconds: a deadline only a gateway
    that cannot start reaches, not a slow start on a busy machine."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if gateway.request("GET", "/api/v1/environments")[0] == 200:
                return gateway
        except OSError:
            pass
        if process is not None and process.poll() is not None:
            pytest.fail(
                f"the gateway exited ({process.returncode}) before answering:\n{gateway.log()}",
                pytrace=False,
            )
        if time.monotonic() > deadline:
            pytest.fail(f"the gateway did not start:\n{gateway.log()}", pytrace=False)
        time.sleep(0.2)
