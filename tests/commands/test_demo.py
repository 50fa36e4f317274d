from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django.fixtures import Settings

from core.models import (
    ApiToken,
    DuelStatus,
    Environment,
    InviteCode,
    Revision,
    Role,
    ScoreCompetition,
    Tournament,
    TournamentFormat,
    TournamentStatus,
    User,
)
from core.models.accounts import hash_token
from core.services.environments import environments_import
from tests.support.embedded import EmbeddedSite
from tournament_manager.demo import EXAMPLE_PLAYERS_DIR, reference_players, zip_folder
from tournament_manager.management.commands.demo import Command

# The demo relies on work starting when each transaction commits, as in production.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")


def demo(*args: str) -> str:
    out = io.StringIO()
    call_command("demo", "--games=sum_to_10", "--matches=2", *args, stdout=out)
    return out.getvalue()


def test_it_validates_the_reference_players_and_plays_a_round_robin() -> None:
    out = demo()

    revisions = Revision.objects.filter(competitor__environment__name="sum_to_10")
    names = {revision.competitor.name for revision in revisions}
    assert {"optimal", "random_player"} <= names
    # A two-player game's reference players are entered once each.
    assert len(revisions) == len(reference_players("sum_to_10"))
    validated = [revision for revision in revisions if revision.is_valid]
    assert len(validated) >= 2
    assert all(revision.competitor.is_public for revision in revisions)
    tournament = Tournament.objects.get()
    assert tournament.status == TournamentStatus.COMPLETED
    assert tournament.matches_per_duel == 2
    assert (
        tournament.duels_done
        == tournament.duels_total
        == len(validated) * (len(validated) - 1) // 2
    )
    participants = list(tournament.participants.order_by("rank"))
    assert len(participants) == len(validated)
    assert participants[0].rank == 1
    assert all(participant.rank for participant in participants)
    organizer = User.objects.get(email="demo-organizer@example.com")
    assert organizer.role == Role.ORGANIZER and organizer.is_staff
    password = out.split(f"{organizer.email}  password: ")[1].split()[0]
    assert organizer.check_password(password)
    assert InviteCode.objects.get(code="welcome").is_usable()
    assert "optimal v1 (optimal.py) validated" in out
    assert "completed" in out
    assert "/admin/" in out


def test_it_runs_again_without_uploading_or_playing_again() -> None:
    demo()
    revisions = set(Revision.objects.values_list("pk", flat=True))

    out = demo()

    assert set(Revision.objects.values_list("pk", flat=True)) == revisions
    assert Tournament.objects.count() == 1
    assert "already uploaded" in out
    assert "Already played" in out
    assert User.objects.filter(email__startswith="demo-").count() == 2


def test_it_rebuilds_players_whose_build_folder_is_gone(settings: Settings) -> None:
    demo()
    shutil.rmtree(settings.ARENA_BUILD_ROOT)

    out = demo("--fresh")

    assert "built and validated again" in out
    assert Tournament.objects.filter(status=TournamentStatus.COMPLETED).count() == 2


@needs_node
def test_it_uploads_folder_players_as_zips_with_their_executable_bit() -> None:
    content = zip_folder(EXAMPLE_PLAYERS_DIR / "sum_to_10" / "node_agent")
    assert content == zip_folder(EXAMPLE_PLAYERS_DIR / "sum_to_10" / "node_agent")
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        assert (archive.getinfo("agent").external_attr >> 16) & 0o111

    demo()

    node_agent = Revision.objects.get(competitor__name="node_agent")
    assert node_agent.filename == "node_agent.zip"
    assert node_agent.is_valid


def test_it_names_the_games_for_an_unknown_one() -> None:
    with pytest.raises(CommandError, match="unknown game"):
        call_command("demo", "--games=chess", stdout=io.StringIO())
    assert not Revision.objects.exists()


def test_it_plays_through_a_worker_of_its_own_on_the_embedded_broker(
    tmp_path: Path, embedded_database: Path
) -> None:
    # As scripts/demo.sh runs it: its own process, SQLite in var/, ARENA_BROKER_URL unset.
    site = EmbeddedSite(tmp_path, database=embedded_database)
    try:
        out = site.manage("demo", "--games=sum_to_10", "--matches=2", timeout=300)
        left_running = site.processes()
    finally:
        site.close()

    assert "Started a Celery worker" in out
    assert "optimal v1 (optimal.py) validated" in out
    assert "Demo round robin #1: Sum to 10: completed" in out
    standings = out.split("leaderboard (Elo ± sd, rank range)\n", 1)[1].splitlines()
    assert "optimal v1" in "\n".join(standings[:4])
    assert left_running == []  # the worker stopped with the command
    log = site.worker_log()
    assert "validate_revision" in log and "play_duel" in log
    assert "database is locked" not in log


def test_it_evaluates_a_one_player_games_players_in_a_score_competition() -> None:
    out = io.StringIO()
    call_command("demo", "--games=cartpole", stdout=out)

    competition = ScoreCompetition.objects.get()
    evaluations = competition.evaluations.order_by("-mean_return")
    assert [evaluation.status for evaluation in evaluations] == [DuelStatus.SUCCEEDED] * 3
    # The balancer holds the pole for the whole episode; the others do not.
    assert evaluations[0].revision.competitor.name == "balancer"
    assert evaluations[0].mean_return == 500.0
    assert "mean return" in out.getvalue()
    assert competition.get_absolute_url() in out.getvalue()


def test_it_enters_enough_players_for_a_round_robin_of_a_game_of_four() -> None:
    out = io.StringIO()
    call_command("demo", "--games=lowest_unique", "--matches=4", stdout=out)

    tournament = Tournament.objects.get()
    assert tournament.status == TournamentStatus.COMPLETED
    # Two reference players, entered again under new names up to five: C(5, 4) groups.
    assert tournament.participants.count() == 5
    assert tournament.duels.count() == 5


def test_its_online_setup_opens_one_ladder_and_gives_the_model_a_fresh_token_each_run(
    settings: Settings, tmp_path: Path, alice: User
) -> None:
    settings.VAR_DIR = tmp_path
    environments_import()
    environment = Environment.objects.get(name="connect_four")
    out = io.StringIO()
    command = Command(stdout=out)

    first = command.online_setup(environment, owner=alice)
    first_secret = first.read_text().strip()
    second = command.online_setup(environment, owner=alice)

    ladder = Tournament.objects.get()
    assert (ladder.format, ladder.status) == (TournamentFormat.LADDER, TournamentStatus.RUNNING)
    assert out.getvalue().count("Launched Demo online ladder") == 1
    assert out.getvalue().count("Registered the online model 'demo-online'") == 1
    assert second == tmp_path / "online" / "connect_four.token"
    assert second.stat().st_mode & 0o777 == 0o600
    tokens = ApiToken.objects.filter(competitor__name="demo-online")
    assert tokens.count() == 2
    assert tokens.get(token_hash=hash_token(first_secret)).revoked_at is not None
    assert tokens.get(token_hash=hash_token(second.read_text().strip())).revoked_at is None
