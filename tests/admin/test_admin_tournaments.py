from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from core.models import (
    Duel,
    DuelResult,
    DuelStatus,
    Environment,
    Job,
    LeaderboardEntry,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
    User,
)
from tests.factories import DuelFactory, ParticipantFactory, TournamentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def players(upload: Callable[..., Revision], alice: User, bob: User) -> list[Revision]:
    """Two validated sum-to-10 revisions, built for real so they can play."""
    return [
        upload(alice, "sum_to_10/optimal.py", name="alices-optimal"),
        upload(bob, "sum_to_10/random_player.py", name="bobs-random"),
    ]


def create_tournament(client: Client, environment: Environment, **fields: object) -> Any:
    data = {"environment": environment.pk, "name": "Spring cup", "matches_per_duel": 2}
    data.update(fields)
    return client.post(reverse("admin:core_tournament_add"), data)


def test_it_creates_a_draft_from_the_chosen_validated_revisions(
    organizer_client: Client, players: list[Revision], organizer: User
) -> None:
    environment = players[0].competitor.environment
    response = create_tournament(
        organizer_client, environment, participants=[revision.pk for revision in players]
    )

    assert response.status_code == 302
    tournament = Tournament.objects.get()
    assert tournament.status == TournamentStatus.DRAFT
    assert tournament.name == "Spring cup"
    assert tournament.matches_per_duel == 2
    assert tournament.created_by == organizer
    entered = {participant.revision for participant in tournament.participants.all()}
    assert entered == set(players)


def test_it_enters_every_competitors_latest_validated_revision_by_default(
    organizer_client: Client,
    upload: Callable[..., Revision],
    players: list[Revision],
    alice: User,
) -> None:
    newer = upload(alice, "sum_to_10/optimal.py", name="alices-optimal")
    broken = upload(alice, "sum_to_10/broken.py", name="alices-broken", content=b"(")
    environment = players[0].competitor.environment

    response = create_tournament(organizer_client, environment, matches_per_duel="")

    assert response.status_code == 302
    tournament = Tournament.objects.get()
    assert tournament.matches_per_duel == environment.matches_per_duel
    entered = {participant.revision for participant in tournament.participants.all()}
    assert entered == {newer, players[1]}
    assert broken not in entered


def test_it_refuses_two_revisions_of_one_competitor(
    organizer_client: Client, upload: Callable[..., Revision], players: list[Revision]
) -> None:
    newer = upload(players[0].competitor.owner, "sum_to_10/optimal.py", name="alices-optimal")
    response = create_tournament(
        organizer_client,
        players[0].competitor.environment,
        participants=[players[0].pk, newer.pk, players[1].pk],
    )

    assert response.status_code == 200
    assert "Choose one revision per competitor." in response.content.decode()
    assert not Tournament.objects.exists()


def test_it_refuses_a_tournament_of_one(organizer_client: Client, players: list[Revision]) -> None:
    response = create_tournament(
        organizer_client, players[0].competitor.environment, participants=[players[0].pk]
    )

    assert response.status_code == 200
    assert "A tournament needs two validated revisions" in response.content.decode()
    assert not Tournament.objects.exists()


def launched(
    players: list[Revision],
    run_action: Callable[..., list[str]],
    capture: Callable,
) -> Tournament:
    tournament = TournamentFactory(
        environment=players[0].competitor.environment, matches_per_duel=2
    )
    for revision in players:
        ParticipantFactory(tournament=tournament, revision=revision)
    with capture(execute=True):
        notes = run_action(Tournament, "launch", [tournament])
    assert notes[-1] == "Launched: 1"
    tournament.refresh_from_db()
    return tournament


def test_it_launches_and_plays_a_tournament_to_the_end(
    organizer_client: Client,
    players: list[Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    tournament = launched(players, run_action, django_capture_on_commit_callbacks)

    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.duels_done, tournament.duels_total, tournament.duels_failed) == (1, 1, 0)
    duel = tournament.duels.get()
    assert duel.status == DuelStatus.SUCCEEDED
    assert duel.matches.count() == 2
    standings = list(tournament.participants.order_by("rank"))
    assert [participant.rank for participant in standings] in ([1, 2], [1, 1])
    assert sum(participant.points for participant in standings) == 2
    page = organizer_client.get(reverse("admin:core_tournament_change", args=[tournament.pk]))
    assert page.status_code == 200
    assert "1 / 1" in page.content.decode()


def test_the_organizer_refits_the_leaderboard_and_the_public_page_shows_it(
    organizer_client: Client,
    client: Client,
    players: list[Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    tournament = launched(players, run_action, django_capture_on_commit_callbacks)
    environment = tournament.environment

    notes = run_action(Environment, "refit_leaderboards", [environment])

    assert notes == ["Leaderboard refitted: sum_to_10."]
    entries = LeaderboardEntry.objects.filter(environment=environment)
    assert sorted(entry.competitor.name for entry in entries) == ["alices-optimal", "bobs-random"]
    # Two matches each: too few to be ranked yet.
    assert {(entry.matches, entry.rank) for entry in entries} == {(2, None)}
    listing = organizer_client.get(reverse("admin:core_leaderboardentry_changelist"))
    assert listing.content.decode().count(">provisional<") == 2
    public = client.get(reverse("environment", args=["sum_to_10"])).content.decode()
    assert "alices-optimal" in public and "bobs-random" in public
    assert public.count('title="Fewer than 6 rated matches: not ranked yet">provisional<') == 2


def test_it_shows_buchholz_in_the_standings_of_a_swiss_tournament_only(
    organizer_client: Client, organizer: User
) -> None:
    swiss = TournamentFactory(created_by=organizer, format=TournamentFormat.SWISS, rounds=3)
    ParticipantFactory(tournament=swiss, points=4, buchholz=7.5, rank=1)
    round_robin = TournamentFactory(created_by=organizer)
    ParticipantFactory(tournament=round_robin, points=4, rank=1)

    def page(tournament: Tournament) -> str:
        url = reverse("admin:core_tournament_change", args=[tournament.pk])
        return organizer_client.get(url).content.decode()

    assert "Buchholz" in page(swiss) and "7.5" in page(swiss)
    assert "Buchholz" not in page(round_robin)


def test_it_reports_a_launch_refused_by_the_service(
    players: list[Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    tournament = launched(players, run_action, django_capture_on_commit_callbacks)

    notes = run_action(Tournament, "launch", [tournament])

    assert notes == [f"{tournament}: {tournament} is completed, not a draft"]
    assert Duel.objects.filter(tournament=tournament).count() == 1


def test_it_cancels_a_draft(run_action: Callable[..., list[str]], organizer: User) -> None:
    tournament = TournamentFactory(created_by=organizer)

    notes = run_action(Tournament, "cancel", [tournament])

    tournament.refresh_from_db()
    assert notes == ["Cancelled: 1"]
    assert tournament.status == TournamentStatus.CANCELLED


def fail(duel: Duel) -> None:
    """What an infrastructure failure leaves: the duel failed, its tournament failed."""
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.FAILED, result="", error="lost")
    Job.objects.filter(duel=duel).update(status=DuelStatus.FAILED, error="lost")
    duel.matches.all().delete()
    assert duel.tournament_id is not None
    Tournament.objects.filter(pk=duel.tournament_id).update(
        status=TournamentStatus.FAILED,
        duels_done=F("duels_done") - 1,
        duels_failed=F("duels_failed") + 1,
    )


@pytest.mark.parametrize(("model", "action"), [(Tournament, "rerun_failed_duels"), (Duel, "rerun")])
def test_it_reruns_failed_duels(
    players: list[Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
    model: type,
    action: str,
) -> None:
    tournament = launched(players, run_action, django_capture_on_commit_callbacks)
    duel = tournament.duels.get()
    fail(duel)
    selected = tournament if model is Tournament else duel

    with django_capture_on_commit_callbacks(execute=True):
        run_action(model, action, [selected])

    duel.refresh_from_db()
    tournament.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED
    assert duel.job.attempts == 1  # an organizer's re-run has fresh attempts
    assert duel.matches.count() == 2
    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.duels_done, tournament.duels_failed) == (1, 0)


def test_it_reruns_only_failed_duels(
    players: list[Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    tournament = launched(players, run_action, django_capture_on_commit_callbacks)

    notes = run_action(Duel, "rerun", list(tournament.duels.all()))

    assert notes == ["1 duel(s) skipped: only failed duels are re-run."]
    assert tournament.duels.get().job.attempts == 1


def test_it_creates_a_swiss_draft_with_its_rounds(
    organizer_client: Client, players: list[Revision]
) -> None:
    response = create_tournament(
        organizer_client,
        players[0].competitor.environment,
        participants=[revision.pk for revision in players],
        format=TournamentFormat.SWISS,
        rounds=3,
    )

    assert response.status_code == 302
    tournament = Tournament.objects.get()
    assert (tournament.format, tournament.rounds) == (TournamentFormat.SWISS, 3)


def test_it_refuses_a_swiss_tournament_without_rounds(
    organizer_client: Client, players: list[Revision]
) -> None:
    response = create_tournament(
        organizer_client, players[0].competitor.environment, format=TournamentFormat.SWISS
    )

    assert response.status_code == 200
    assert "A Swiss tournament needs its number of rounds." in response.content.decode()
    assert not Tournament.objects.exists()


def test_it_opens_a_ladder_with_a_single_entrant(
    organizer_client: Client, players: list[Revision]
) -> None:
    response = create_tournament(
        organizer_client,
        players[0].competitor.environment,
        participants=[players[0].pk],
        format=TournamentFormat.LADDER,
    )

    assert response.status_code == 302
    assert Tournament.objects.get().format == TournamentFormat.LADDER


def test_it_schedules_the_launch_from_the_add_form(
    organizer_client: Client, players: list[Revision]
) -> None:
    response = create_tournament(
        organizer_client,
        players[0].competitor.environment,
        participants=[revision.pk for revision in players],
        starts_at_0="2031-05-01",
        starts_at_1="18:30:00",
    )

    assert response.status_code == 302
    tournament = Tournament.objects.get()
    assert tournament.status == TournamentStatus.DRAFT
    assert tournament.starts_at.isoformat() == "2031-05-01T18:30:00+00:00"
    page = organizer_client.get(response["Location"]).content.decode()
    assert "the tournament manager launches it at 2031-05-01 18:30 UTC" in page


def test_it_shows_live_progress_and_the_time_left(
    organizer_client: Client, organizer: User
) -> None:
    tournament = TournamentFactory(created_by=organizer, matches_per_duel=1)
    for _ in range(4):
        ParticipantFactory(tournament=tournament)
    Tournament.objects.filter(pk=tournament.pk).update(status=TournamentStatus.RUNNING)
    revisions = [p.revision for p in tournament.participants.all()]
    statuses = [DuelStatus.SUCCEEDED] * 2 + [DuelStatus.RUNNING] + [DuelStatus.QUEUED] * 3
    now = timezone.now()
    for (one, two), status in zip(itertools.combinations(revisions, 2), statuses, strict=True):
        played = status == DuelStatus.SUCCEEDED
        DuelFactory(
            tournament=tournament,
            revisions=[one, two],
            status=status,
            result=DuelResult.DRAW if played else "",
            started_at=None if status == DuelStatus.QUEUED else now - timedelta(minutes=2),
            ended_at=now if played else None,
        )
    Tournament.objects.filter(pk=tournament.pk).update(duels_total=6, duels_done=2)

    page = organizer_client.get(reverse("admin:core_tournament_changelist")).content.decode()

    # Two minutes a duel, four left, one running at a time.
    assert "2 done, 1 running, 3 queued; about 8 min left" in page


def test_it_stops_a_ladder(
    run_action: Callable[..., list[str]], organizer: User, players: list[Revision]
) -> None:
    ladder = TournamentFactory(
        created_by=organizer,
        format=TournamentFormat.LADDER,
        status=TournamentStatus.RUNNING,
        environment=players[0].competitor.environment,
    )
    round_robin = TournamentFactory(created_by=organizer, status=TournamentStatus.RUNNING)

    notes = run_action(Tournament, "stop", [ladder, round_robin])

    ladder.refresh_from_db()
    assert ladder.status == TournamentStatus.COMPLETED
    assert notes == [
        f"{round_robin}: only a ladder is stopped; cancel a round robin or Swiss tournament",
        "Stopped: 1",
    ]


# --- games of more than two players ---------------------------------------------------


@pytest.fixture
def four_players(upload: Callable[..., Revision], alice: User, bob: User) -> list[Revision]:
    """Four validated lowest-unique-number revisions, built for real so they can play."""
    return [
        upload(owner, f"lowest_unique/{file}", name=f"{owner.display_name}-{file[:3]}")
        for owner, file in itertools.product((alice, bob), ("random_player.py", "low_bidder.py"))
    ]


def test_it_refuses_a_swiss_tournament_of_a_game_of_four(
    organizer_client: Client, four_players: list[Revision]
) -> None:
    response = create_tournament(
        organizer_client,
        four_players[0].competitor.environment,
        participants=[revision.pk for revision in four_players],
        format=TournamentFormat.SWISS,
        rounds=2,
    )

    assert response.status_code == 200
    assert "Swiss pairs two players" in response.content.decode()
    assert not Tournament.objects.exists()


def test_it_refuses_fewer_entrants_than_the_game_has_seats(
    organizer_client: Client, four_players: list[Revision]
) -> None:
    response = create_tournament(
        organizer_client,
        four_players[0].competitor.environment,
        participants=[revision.pk for revision in four_players[:3]],
    )

    assert response.status_code == 200
    assert "A tournament needs 4 validated revisions" in response.content.decode()


def test_it_plays_a_four_player_tournament_and_shows_every_player_of_its_duel(
    organizer_client: Client,
    four_players: list[Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    tournament = launched(four_players, run_action, django_capture_on_commit_callbacks)

    assert tournament.status == TournamentStatus.COMPLETED
    duel = tournament.duels.get()
    assert duel.num_players == 4
    page = organizer_client.get(reverse("admin:core_duel_change", args=[duel.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    for revision in four_players:
        assert str(revision) in html
    assert 'name="seats-TOTAL_FORMS" value="4"' in html  # every player, seat 1 first
    assert organizer_client.get(reverse("admin:core_duel_changelist")).status_code == 200
    match = duel.matches.get(index=0)
    assert (
        organizer_client.get(reverse("admin:core_match_change", args=[match.pk])).status_code == 200
    )


def test_its_progress_counts_failed_duels_apart_and_gives_a_ladder_no_total(
    organizer_client: Client, organizer: User
) -> None:
    round_robin = TournamentFactory(created_by=organizer, name="Spring round robin")
    ladder = TournamentFactory(
        created_by=organizer, name="Standing ladder", format=TournamentFormat.LADDER
    )
    Tournament.objects.filter(pk=round_robin.pk).update(
        duels_total=4, duels_done=1, duels_failed=1, status=TournamentStatus.COMPLETED
    )
    Tournament.objects.filter(pk=ladder.pk).update(
        duels_total=12, duels_done=11, duels_failed=1, status=TournamentStatus.COMPLETED
    )

    page = organizer_client.get(reverse("admin:core_tournament_changelist")).content.decode()
    environment = organizer_client.get(round_robin.environment.get_absolute_url()).content
    ladder_page = organizer_client.get(ladder.environment.get_absolute_url()).content.decode()

    # One of four played: 25 %, the failed one apart (not 50 %).
    assert "1 / 4 · 25%" in page and "(1 failed)" in page
    assert "11 played" in page and "11 / 12" not in page
    assert "1 / 4" in environment.decode()
    assert "11 played" in ladder_page and "11 / 12" not in ladder_page
