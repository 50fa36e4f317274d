"""The production stack for real: ``docker-compose.yml`` of a fresh clone, built and
started once per test session as README "Production" says, for the tests in
``tests/deploy`` that need it (the ``compose_stack`` fixture).

The clone is ``git clone`` of this checkout at its HEAD commit, so the stack runs the
COMMITTED code: uncommitted changes are not in it (a warning says so when there are
any). Once per session: the clone, ``scripts/build_images.sh`` in it (images are tagged
by the hash of what they are made from, so an unchanged tree reuses them in seconds; the
application image is rebuilt, in about half a minute, when any file changed), its
secrets (``scripts/make_secrets.sh``), a ``.env`` from ``.env.example``, then
``docker-compose -p <project> up -d`` of ``LONG_RUNNING`` and a wait until each is
healthy. At the end: ``down -v`` of that project alone, the revision images and agent
containers its workers made, its image tag and its host folder.

Several sessions (other checkouts, other engineers) share one Docker engine: everything
the stack names is its own: the compose project, the images' tag (``ARENA_IMAGE_TAG``),
the revision images' instance label (``ARENA_INSTANCE``), the host folder the workers
share with agents (``ARENA_HOST_DATA``) and nginx's ports.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.agents import SLOW_AGENT
from tests.support.redis import free_port
from tests.support.require import require

ROOT = Path(__file__).resolve().parents[2]
#: The services the stack is started with and waited on until healthy (the one-shots
#: ``migrate`` and ``prepare`` run first, as their dependencies): every service of
#: docker-compose.yml. The site is read through nginx, as visitors reach it.
LONG_RUNNING = (
    "postgres",
    "redis",
    "engine",
    "web",
    "gateway",
    "worker-build",
    "worker-duels",
    "worker-online",
    "worker-publish",
    "beat",
    "manager",
    "watchdog",
    "nginx",
)
ONE_SHOTS = ("migrate", "prepare")
#: The name the site is reached by (ARENA_ALLOWED_HOSTS).
HOST = "arena.test"
#: Settings of the test stack besides .env.example's: a killed worker's duel is taken
#: over in seconds rather than a minute, tests read the API as often as they like,
#: fewer processes than a server would run on 2 cores, and the standing ladder (which
#: rates every upload of the tests) asks for two duels per upload rather than ten, so
#: that its duels do not hold the workers the tests' own tournaments wait for.
TEST_SETTINGS = {
    "ARENA_DUEL_LEASE_SECONDS": "10",
    "ARENA_API_ANONYMOUS_RATE": "100000/min",
    "ARENA_WEB_WORKERS": "2",
    "ARENA_ONLINE_WORKERS": "4",
    "ARENA_STANDING_LADDER_DUELS": "2",
}


class ComposeStack:
    """One deployment of ``docker-compose.yml`` in ``folder`` (a clone), as project
    ``project``."""

    def __init__(self, folder: Path, *, project: str, host_data: Path) -> None:
        self.folder = folder
        self.project = project
        self.host_data = host_data
        self.http_port = free_port()
        self.https_port = free_port()
        self.commit = git(folder, "rev-parse", "HEAD")

    @property
    def environment(self) -> dict[str, str]:
        """What docker-compose and the scripts run with: none of the test run's own
        settings, and this project."""
        return {
            **{
                key: value
                for key, value in os.environ.items()
                if not key.startswith(("ARENA_", "COMPOSE_", "PG")) and key != "DATABASE_URL"
            },
            "COMPOSE_PROJECT_NAME": self.project,
        }

    # --- set up and tear down ---------------------------------------------------------

    def configure(self) -> None:
        """Secrets, ``.env`` and nginx's host folders, as an operator makes them from the
        README."""
        self.run(["scripts/make_secrets.sh"], timeout=60)
        for folder in ("tls", "acme", "maintenance"):
            (self.folder / folder).mkdir()
        settings = {
            "ARENA_IMAGE_TAG": self.project,
            "ARENA_HOST_DATA": str(self.host_data),
            "DOCKER_GID": str(os.stat("/var/run/docker.sock").st_gid),
            "ARENA_HTTP_PORT": str(self.http_port),
            "ARENA_HTTPS_PORT": str(self.https_port),
            "ARENA_ALLOWED_HOSTS": HOST,
            "ARENA_INSTANCE": self.project,
            **TEST_SETTINGS,
        }
        lines = []
        for line in (self.folder / ".env.example").read_text().splitlines():
            name = line.split("=", 1)[0].lstrip("#")
            lines.append(f"{name}={settings.pop(name)}" if name in settings else line)
        lines += [f"{name}={value}" for name, value in settings.items()]
        (self.folder / ".env").write_text("\n".join(lines) + "\n")

    def build(self) -> None:
        """``scripts/build_images.sh``, with this test run's Python (it has Arena's
        dependencies) rather than a second virtualenv in the clone; it must leave no
        container behind. (Its first build of the dependencies' stage fails by design on
        Debian's Python 3.11.2, which needs a wheel this one does not; Docker's classic
        builder kept a failed step's container, one more at every upgrade.)"""
        before = _build_step_containers()
        self.run(
            ["scripts/build_images.sh"],
            timeout=1200,
            ARENA_BUILD_PYTHON=sys.executable,
            PYTHONPATH=f"{self.folder}:{self.folder / 'sdk'}",
        )
        left = _build_step_containers() - before
        if left:
            self.fail(
                f"scripts/build_images.sh left {len(left)} stopped containers: {sorted(left)}"
            )

    def up(self, *, wait: bool = True) -> None:
        """``up -d`` of the long-running services, then (if ``wait``) wait until they
        are healthy: each service's first healthcheck comes 5 to 15 s after it starts."""
        done = self.compose("up", "-d", *LONG_RUNNING, timeout=600, check=False)
        if done.returncode != 0:
            self.fail(
                f"docker-compose up failed ({done.returncode}):\n{done.stderr[-3000:]}",
                services=LONG_RUNNING,
            )
        if wait:
            self.wait_healthy()

    def down(self) -> None:
        """``down -v`` of this project, and what its workers made on the engine."""
        workers = {
            container_id
            for service in ("worker-build", "worker-duels", "worker-online")
            if (container_id := self.container_id(service))
        }
        self.compose("down", "-v", "--remove-orphans", timeout=300, check=False)
        # Agents a killed worker left behind (its next start would have removed them).
        for container in agents_of(workers):
            docker("rm", "-f", container, check=False)
        # Revision images and their dependency stages, by this stack's instance label.
        images = docker("images", "-aq", "--filter", f"label=arena.instance={self.project}")
        for image in sorted(set(images.split())):
            docker("rmi", "-f", image, check=False)

    def forget_images(self) -> None:
        """Untag this stack's ``:<project>`` images (their hash tags keep them cached)."""
        for name in ("arena-app", "arena-base", "arena-postgres", "arena-redis"):
            docker("rmi", f"{name}:{self.project}", check=False)

    # --- running things ---------------------------------------------------------------

    def run(
        self,
        command: list[str],
        *,
        timeout: float,
        check: bool = True,
        **settings: str,
    ) -> subprocess.CompletedProcess[str]:
        """A command in the clone, with the stack's environment; the test fails with its
        output if it fails and ``check``."""
        done = subprocess.run(
            command,
            cwd=self.folder,
            env={**self.environment, **settings},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            self.fail(
                f"{' '.join(command)} failed ({done.returncode}):\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def compose(
        self, *arguments: str, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run(["docker-compose", *arguments], timeout=timeout, check=check)

    def containers(self) -> dict[str, dict[str, Any]]:
        """The engine's view (``docker inspect``) of each service's container, by service
        (one-off containers of ``docker-compose run`` left out)."""
        found = docker(
            "ps",
            "-aq",
            "--filter",
            f"label=com.docker.compose.project={self.project}",
            "--filter",
            "label=com.docker.compose.oneoff=False",
        ).split()
        # Whatever is removed meanwhile is left out (docker inspect says so and goes on).
        details = docker("inspect", *found, check=False) if found else ""
        return {
            container["Config"]["Labels"]["com.docker.compose.service"]: container
            for container in json.loads(details or "[]")
        }

    def container_id(self, service: str) -> str:
        """The id of the service's container ("" if it has none)."""
        return str(self.containers().get(service, {}).get("Id", ""))

    def state(self, service: str) -> dict[str, Any]:
        """The engine's ``State`` of the service's container, with ``RestartCount``."""
        container = self.containers()[service]
        return {**container["State"], "RestartCount": container["RestartCount"]}

    def django(self, code: str) -> Any:
        """Python run by ``manage.py shell`` in the web container; the last line it
        prints, read as JSON."""
        done = subprocess.run(
            ["docker", "exec", self.container_id("web"), "python", "manage.py", "shell",
             "--no-imports", "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            self.fail(f"manage.py shell failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def logs(self, service: str, tail: int = 60) -> str:
        return self.compose("logs", "--no-color", f"--tail={tail}", service, check=False).stdout

    # --- the site ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The site, through nginx on its published HTTP port."""
        return f"http://127.0.0.1:{self.http_port}"

    def session(self) -> requests.Session:
        """A visitor's session, sending the site's host name."""
        session = requests.Session()
        session.headers["Host"] = HOST
        return session

    def get(self, path: str) -> Any:
        """A public API read (``/api/v1/...``), as JSON."""
        response = self.session().get(f"{self.url}/api/v1{path}", timeout=30)
        response.raise_for_status()
        return response.json()

    # --- health -----------------------------------------------------------------------

    def unhealthy(self, services: tuple[str, ...] = LONG_RUNNING) -> dict[str, str]:
        """Those of ``services`` not (yet) healthy, with what they are instead."""
        containers = self.containers()
        found = {}
        for service in services:
            if service not in containers:
                found[service] = "no container"
                continue
            state = containers[service]["State"]
            health = (state.get("Health") or {}).get("Status", "no healthcheck")
            if state["Status"] != "running" or health != "healthy":
                found[service] = f"{state['Status']}, {health}"
        return found

    def wait_healthy(
        self, services: tuple[str, ...] = LONG_RUNNING, *, timeout: float = 300
    ) -> None:
        deadline = time.monotonic() + timeout
        while unhealthy := self.unhealthy(services):
            if time.monotonic() > deadline:
                self.fail(f"not healthy after {timeout:.0f} s: {unhealthy}", services=unhealthy)
            time.sleep(2)

    def wait_answering(self, timeout: float = 120) -> None:
        """Wait until the site answers ``/healthz`` (sooner than its healthcheck says so)."""

        def answers() -> bool:
            try:
                return self.session().get(f"{self.url}/healthz", timeout=5).ok
            except requests.RequestException:
                return False

        self.wait_for(answers, timeout=timeout, what="the site to answer")

    def wait_for(self, predicate: Callable[[], object], *, timeout: float, what: str) -> None:
        """Wait until ``predicate()`` holds; fail with the workers' and the manager's logs."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.fail(
                    f"timed out after {timeout:.0f} s waiting for {what}",
                    services=("worker-build", "worker-duels", "manager", "watchdog"),
                )
            time.sleep(0.5)

    def fail(self, message: str, *, services: Iterable[str] = ()) -> None:
        """Fail the test with ``message``, ``docker-compose ps`` and the logs' tails of
        ``services``, each with its last healthcheck's output."""
        report = [message, f"--- docker-compose ps ({self.project}, commit {self.commit[:12]})"]
        report.append(self.compose("ps", check=False, timeout=60).stdout)
        for service in services:
            report.append(f"--- {service}: the last lines of its log")
            report.append(self.logs(service))
            if self.container_id(service):
                checks = (self.state(service).get("Health") or {}).get("Log") or []
                if checks:
                    report.append(f"--- {service}: its last healthcheck said")
                    report.append(str(checks[-1].get("Output", "")).strip())
        pytest.fail("\n".join(report), pytrace=False)


def git(folder: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=folder, capture_output=True, text=True, check=True
    ).stdout.strip()


def docker(*arguments: str, check: bool = True) -> str:
    done = subprocess.run(
        ["docker", *arguments], capture_output=True, text=True, timeout=120, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"docker {' '.join(arguments)}: {done.stderr.strip()}")
    return done.stdout.strip()


def agents_of(workers: set[str]) -> set[str]:
    """The agent containers (running or not) that processes of the containers
    ``workers`` (ids, or their first 12 digits: the containers' host names) started."""
    hosts = {worker[:12] for worker in workers}
    agents = docker(
        "ps", "-a", "--filter", "label=arena.role=agent", "--format",
        '{{.ID}} {{.Label "arena.owner"}}',
    )  # fmt: skip
    return {
        container
        for container, _, owner in (line.partition(" ") for line in agents.splitlines())
        if owner.split(":")[0] in hosts
    }


def kill_container(stack: ComposeStack, service: str) -> None:
    """SIGKILL the main process of the service's container (and with it every process
    in the container), as a crash or the kernel's OOM killer would.

    ``docker kill`` would not do: the engine counts it as an operator's stop, and
    ``restart: unless-stopped`` then leaves the container stopped. A process killed from
    outside is a crash, which the engine answers by starting the container again.
    Killing it takes root (the container's processes are another user's).
    """
    require(
        os.geteuid() == 0,
        "crashing a container's process takes root (its processes are another user's)",
    )
    os.kill(stack.state(service)["Pid"], signal.SIGKILL)


@pytest.fixture(scope="session")
def compose_stack_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeStack]:
    """The stack of a fresh clone of this checkout's HEAD, once per session."""
    require(
        shutil.which("docker-compose"),
        "docker-compose is not installed (apt-get install docker-compose), so the "
        "production stack cannot be started",
    )
    require(
        subprocess.run(["docker", "version"], capture_output=True, timeout=30).returncode == 0,
        "no Docker engine answers (start dockerd), so the production stack cannot be started",
    )
    if git(ROOT, "status", "--porcelain", "--untracked-files=no"):
        warnings.warn(
            "tests/deploy run the committed code (a fresh clone of HEAD): this checkout's "
            "uncommitted changes are not in the stack they test",
            stacklevel=1,
        )
    folder = tmp_path_factory.mktemp("compose") / "arena"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(folder)], check=True)
    git(folder, "checkout", "--quiet", "--detach", git(ROOT, "rev-parse", "HEAD"))
    # The workers and the agent containers bind folders of it at the same path: not
    # under pytest's private tmp_path, so the host's engine and the agents' user reach it.
    host_data = Path(tempfile.mkdtemp(prefix="arena-compose-"))
    host_data.chmod(0o755)
    stack = ComposeStack(folder, project=f"arena-test-{secrets.token_hex(4)}", host_data=host_data)
    try:
        stack.configure()
        stack.build()
        stack.up()
        yield stack
    finally:
        with contextlib.suppress(Exception):
            stack.down()
        stack.forget_images()
        shutil.rmtree(host_data, ignore_errors=True)


@pytest.fixture
def compose_stack(compose_stack_session: ComposeStack) -> ComposeStack:
    """The session's stack, healthy: a test that stopped or restarted services left it
    coming back up."""
    compose_stack_session.wait_healthy()
    return compose_stack_session


# --- stories in the stack ---------------------------------------------------------------


def players_upload(
    stack: ComposeStack, *, email: str, password: str, names: tuple[str, ...]
) -> None:
    """A user (made if new) uploads ``SLOW_AGENT`` as public sum_to_10 competitors
    ``names``, each built by worker-build through the engine proxy and validated; waits
    until they are. Each upload is unique to the stack (so are its image's tags)."""
    stack.django(f"""
import json
from core.services.accounts import user_create
from core.models import Environment, User
from core.services.environments import environments_import
from core.services.revisions import competitor_get_or_create, revision_create

environments_import()
owner = User.objects.filter(email={email!r}).first() or user_create(
    email={email!r}, display_name={email.split("@")[0]!r}, password={password!r}
)
environment = Environment.objects.get(name="sum_to_10")
for name in {names!r}:
    competitor = competitor_get_or_create(
        owner=owner, environment=environment, name=name, is_public=True
    )
    content = ({SLOW_AGENT!r} + "# " + {stack.project!r} + " " + name + "\\n").encode()
    revision_create(
        competitor=competitor, uploaded_by=owner, filename="main.py", content=content
    )
print(json.dumps("uploaded"))
""")

    def validated() -> bool:
        revisions = [stack.get(f"/competitors/sum_to_10/{name}/revisions/1") for name in names]
        for revision in revisions:
            for step in ("build", "validation"):
                if revision[step]["status"] == "failed":
                    stack.fail(f"{revision['competitor']}'s {step} failed: {revision[step]}")
        return all(revision["is_valid"] for revision in revisions)

    stack.wait_for(validated, timeout=180, what=f"{', '.join(names)} to be built and validated")


def round_robin_launch(stack: ComposeStack, *, names: tuple[str, ...], matches: int) -> int:
    """A round robin of the sum_to_10 competitors ``names``, launched; its id."""
    return int(
        stack.django(f"""
import json
from core.models import Environment, Revision
from tournament_manager.services.tournaments import tournament_create, tournament_launch

tournament = tournament_create(
    environment=Environment.objects.get(name="sum_to_10"),
    name="Round robin of " + " and ".join({names!r}),
    revisions=list(Revision.objects.filter(
        competitor__environment__name="sum_to_10", competitor__name__in={names!r}
    )),
    matches_per_duel={matches},
)
tournament_launch(tournament=tournament)
print(json.dumps(tournament.pk))
""")
    )


def tournament_completed(stack: ComposeStack, tournament_id: int, *, timeout: float) -> Any:
    """The tournament (as the API shows it), once it has completed."""
    stack.wait_for(
        lambda: stack.get(f"/tournaments/{tournament_id}")["status"] == "completed",
        timeout=timeout,
        what=f"tournament {tournament_id} to complete",
    )
    return stack.get(f"/tournaments/{tournament_id}")


def _build_step_containers() -> set[str]:
    """The stopped containers of the images' build steps: every image the script builds
    starts from the base file system, whose role label its containers inherit."""
    done = subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc", "--filter", "status=exited",
         "--filter", "label=arena.role=rootfs"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return set(done.stdout.split())
