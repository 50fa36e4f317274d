"""Admin tests play for real: revisions are uploaded through ``revision_create`` and built,
validated and played by the process sandbox, in this process, when the callbacks that
the services register with ``transaction.on_commit`` are run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.db.models import Model
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from core.models import Environment, Revision, User
from core.services.environments import environments_import
from core.services.revisions import competitor_get_or_create, revision_create

EXAMPLE_PLAYERS_DIR = Path(__file__).resolve().parents[2] / "example_players"


@pytest.fixture(autouse=True)
def arena_dirs(settings: Settings, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ARENA_BUILD_ROOT = tmp_path / "builds"


@pytest.fixture
def environments(db: None) -> dict[str, Environment]:
    return {environment.name: environment for environment in environments_import()}


@pytest.fixture
def organizer_client(client: Client, organizer: User) -> Client:
    client.force_login(organizer)
    return client


Upload = Callable[..., Revision]


@pytest.fixture
def upload(
    environments: dict[str, Environment], django_capture_on_commit_callbacks: Callable
) -> Upload:
    """``upload(owner, "tic_tac_toe/random_player.py", name="bot")``: a revision, built and
    validated (or not, for a broken file given as ``content``)."""

    def upload(
        owner: User, player: str, *, name: str | None = None, content: bytes | None = None
    ) -> Revision:
        game, filename = player.split("/")
        competitor = competitor_get_or_create(
            owner=owner,
            environment=environments[game],
            name=name or Path(filename).stem.replace("_", "-"),
        )
        if content is None:
            content = (EXAMPLE_PLAYERS_DIR / player).read_bytes()
        with django_capture_on_commit_callbacks(execute=True):
            revision = revision_create(
                competitor=competitor, uploaded_by=owner, filename=filename, content=content
            )
        revision.refresh_from_db()
        return revision

    return upload


@pytest.fixture
def run_action(organizer_client: Client) -> Callable[..., list[str]]:
    """``run_action(Model, "action_name", objects)``: post the admin action as the organizer
    and return the messages it left (the page redirects back to the list)."""

    def run_action(model: type[Model], action: str, objects: list) -> list[str]:
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        response = organizer_client.post(
            changelist,
            {"action": action, "_selected_action": [obj.pk for obj in objects]},
            follow=True,
        )
        assert response.redirect_chain == [(changelist, 302)], response.content[:2000]
        return [str(message) for message in response.context["messages"]]

    return run_action
