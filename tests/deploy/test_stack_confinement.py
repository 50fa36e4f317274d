"""The production stack against an uploaded agent that searches the host: it finds nothing of
the platform (the services' folders, volumes, secrets, the host data folder, the Docker
socket) or of another competitor's private upload, and plays; the stack's data is
owner-only."""

from __future__ import annotations

import secrets
import subprocess

from tests.support.compose_stack import ComposeStack, tournament_completed
from tests.support.sandboxes import AGENTS

GAME = "tic_tac_toe"


def test_an_uploaded_agent_that_searches_the_stack_finds_nothing_and_plays(
    compose_stack: ComposeStack,
):
    secret = secrets.token_hex(12)
    guesses = [
        "/srv/arena/media",
        "/srv/arena/var",
        "/opt/arena/app",
        "/run/secrets",
        "/run/arena-engine",
        "/var/lib/postgresql/data",
        str(compose_stack.host_data),
        str(compose_stack.folder),
    ]
    told = {"HUNT_SECRET": secret, "HUNT_PATHS": ":".join(guesses), "HUNT_PORTS": "5432:6379"}
    searcher = (
        f"import os\nos.environ.update({told!r})\n" + (AGENTS / "searches_the_host.py").read_text()
    )
    victim = (AGENTS / "random_agent.py").read_text() + f"\n# canary {secret}\n"
    names = (f"searcher-{compose_stack.project}", f"private-{compose_stack.project}")
    compose_stack.django(f"""
import json
from core.services.accounts import user_create
from core.models import Environment
from core.services.environments import environments_import
from core.services.revisions import competitor_get_or_create, revision_create

environments_import()
environment = Environment.objects.get(name={GAME!r})
for email, name, content in (
    ("searcher@example.org", {names[0]!r}, {searcher!r}),
    ("victim@example.org", {names[1]!r}, {victim!r}),
):
    owner = user_create(email=email, display_name=email.split("@")[0], password="a long password")
    competitor = competitor_get_or_create(
        owner=owner, environment=environment, name=name, is_public=False
    )
    revision_create(
        competitor=competitor, uploaded_by=owner, filename="main.py", content=content.encode()
    )
print(json.dumps("uploaded"))
""")

    def validated() -> bool:
        steps = compose_stack.django(f"""
import json
from core.models import Revision
print(json.dumps([
    [r.build_status, r.validation_status, (r.job("validation") or r.job("build")).error]
    for r in Revision.objects.filter(competitor__name__in={names!r})
]))
""")
        if any("failed" in step[:2] for step in steps):
            compose_stack.fail(f"a build or validation failed: {steps}")
        return len(steps) == 2 and all(step[1] == "succeeded" for step in steps)

    compose_stack.wait_for(validated, timeout=300, what="both uploads to be validated")
    tournament_id = compose_stack.django(f"""
import json
from core.models import Environment, Revision
from tournament_manager.services.tournaments import tournament_create, tournament_launch

tournament = tournament_create(
    environment=Environment.objects.get(name={GAME!r}),
    name="A search of the stack",
    revisions=list(Revision.objects.filter(competitor__name__in={names!r})),
    matches_per_duel=2,
)
tournament_launch(tournament=tournament)
print(json.dumps(tournament.pk))
""")
    tournament = tournament_completed(compose_stack, tournament_id, timeout=300)

    logs = compose_stack.django(f"""
import json
from core.models import Duel
logs = {{}}
for duel in Duel.objects.filter(tournament_id={tournament_id}):
    for seat in duel.players():
        logs[seat.revision.competitor.name] = seat.log
print(json.dumps(logs))
""")
    assert (tournament["duels_done"], tournament["duels_failed"]) == (1, 0)
    assert "search done" in logs[names[0]], logs[names[0]]
    assert "FOUND" not in logs[names[0]], logs[names[0]]
    # The stack's own data is owner-only: nothing in its volumes that others may open.
    web = compose_stack.container_id("web")
    opened = subprocess.run(
        ["docker", "exec", web, "find", "/srv/arena/media", "/srv/arena/var", "-perm", "/077"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert opened.stdout.split() == []
    for folder in ("builds", "sandboxes", "wheels", "cpus"):
        assert (compose_stack.host_data / folder).stat().st_mode & 0o077 == 0, folder
