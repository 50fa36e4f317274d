"""A competition run end to end on a moved clock: teams formed, uploads refused over the
daily limit and after the deadline, the final launched by the tournament manager at the
deadline with each team's final revisions, its standings held out, then published.

Duels are played on paper (``finish``); builds and validations are recorded as done
(``validated``): what is tested is the schedule, not the sandbox.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import AnonymousUser

from core.errors import ArenaError
from core.models import (
    Competition,
    CompetitionPhase,
    Competitor,
    Duel,
    DuelResult,
    PhasePlays,
    Revision,
    StepStatus,
    Team,
    TournamentFormat,
    TournamentStatus,
    User,
)
from core.services.competitions import final_mark
from core.services.online import running_ladders
from core.services.revisions import revision_upload
from core.services.teams import (
    invitation_accept,
    invitation_create,
    invitation_find,
    team_create,
    team_leave,
    team_of,
)
from core.services.uploads import UploadRejected
from reads.access import can_see_logs, can_see_tournament
from reads.competitions import competition_page
from tests.factories import UserFactory, example_player_source, scheduled_competition
from tests.support.clock import Clock
from tournament_manager.daemon import run_once
from tournament_manager.services.competitions import final_publish, team_disqualify

pytestmark = pytest.mark.django_db

#: The competition opens on a Monday at 09:00 UTC; its deadline is three days later.
OPENS = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
DEADLINE = OPENS + timedelta(days=3)


def competition(**fields: object) -> Competition:
    return scheduled_competition(
        opens=OPENS,
        deadline=DEADLINE,
        daily_limit=2,
        total_limit=4,
        **{
            "slug": "tic-tac-toe-cup",
            "title": "Tic-tac-toe cup",
            "team_size_limit": 2,
            "final_submissions": 1,
            **fields,
        },
    )


def upload(user: User, cup: Competition, name: str) -> Revision:
    return revision_upload(
        owner=user,
        environment=cup.environment,
        competitor_name=name,
        is_public=False,
        filename="main.py",
        content=example_player_source("tic_tac_toe"),
        competition=cup,
    )


def validated(revision: Revision) -> Revision:
    """Built and validated, as the workers would record it."""
    Revision.objects.filter(pk=revision.pk).update(
        build_status=StepStatus.SUCCEEDED, validation_status=StepStatus.SUCCEEDED
    )
    revision.refresh_from_db()
    return revision


def person(name: str) -> User:
    return UserFactory(display_name=name, email=f"{name.lower()}@example.org")


def test_a_competition_runs_from_its_opening_to_its_published_final(
    clock: Clock, sent, finish
) -> None:
    cup = competition(final_hidden=True)
    alice, bob, carol, dave = (person(name) for name in ("Alice", "Bob", "Carol", "Dave"))

    # Before it opens, nothing is taken, and the refusal says when it opens.
    clock.to(OPENS - timedelta(hours=1))
    with pytest.raises(UploadRejected, match="not open yet: uploads open at 2026-12-07 09:00 UTC"):
        upload(alice, cup, "crosses-bot")
    assert not Team.objects.exists()  # a refused upload leaves no team behind

    # Alice forms a team and invites Bob by his address; Dave's link finds it full.
    clock.to(OPENS + timedelta(hours=1))
    crosses = team_create(competition=cup, user=alice, name="Crosses")
    _, for_bob = invitation_create(team=crosses, by=alice, email="bob@example.org")
    _, by_link = invitation_create(team=crosses, by=alice)
    with pytest.raises(ArenaError, match=r"for bob@example\.org"):
        invitation_accept(invitation=invitation_find(for_bob), user=dave)
    invitation_accept(invitation=invitation_find(for_bob), user=bob)
    with pytest.raises(ArenaError, match="is full: Tic-tac-toe cup allows 2 member"):
        invitation_accept(invitation=invitation_find(by_link), user=dave)
    with pytest.raises(ArenaError, match="not valid"):
        invitation_find(for_bob)  # used

    # Carol enters alone: her first upload makes her a team of one.
    noughts = validated(upload(carol, cup, "noughts-bot"))
    assert team_of(user=carol, competition=cup).name == "Carol"
    assert noughts.competitor.team.name == "Carol"

    # The daily limit binds the team, whichever member uploads.
    first = validated(upload(alice, cup, "crosses-bot"))
    validated(upload(bob, cup, "crosses-bot"))  # Bob uploads Alice's agent's next version
    with pytest.raises(UploadRejected) as refused:
        upload(alice, cup, "crosses-bot")
    assert str(refused.value) == (
        "team Crosses has made its 2 upload(s) of today (UTC): the next upload is allowed "
        "at 2026-12-08 00:00 UTC"
    )
    assert Revision.objects.filter(competitor__team=crosses).count() == 2

    # A teammate manages the team's agent: Bob reads its logs, though Alice made it.
    assert can_see_logs(bob, first.competitor, finished=False)
    assert not can_see_logs(carol, first.competitor, finished=False)

    # Carol has submitted in her team: she may not join another, nor leave hers.
    dots = team_create(competition=cup, user=dave, name="Dots")
    _, for_carol = invitation_create(team=dots, by=dave, email="carol@example.org")
    with pytest.raises(ArenaError, match="you have submitted in team Carol"):
        invitation_accept(invitation=invitation_find(for_carol), user=carol)
    with pytest.raises(ArenaError, match="has submitted"):
        team_leave(team=crosses.competition.teams.get(name="Carol"), user=carol)

    # The next day uploads are allowed again, up to the phase's total.
    clock.to(OPENS + timedelta(days=1))
    third = validated(upload(bob, cup, "crosses-bot"))
    assert third.version == 3

    # The team marks its first version final (a team marks one here); Carol marks none.
    final_mark(revision=first, user=bob)
    with pytest.raises(ArenaError, match="marked 1 revision"):
        final_mark(revision=validated(upload(alice, cup, "crosses-second")), user=alice)

    # At the deadline uploads close, and the tournament manager launches the final.
    clock.to(DEADLINE + timedelta(seconds=1))
    with pytest.raises(UploadRejected, match=r"uploads to Tic-tac-toe cup are closed \(final\)"):
        upload(bob, cup, "crosses-bot")
    with pytest.raises(ArenaError, match="deadline of Tic-tac-toe cup has passed"):
        final_mark(revision=third, user=bob)
    run_once()
    cup.refresh_from_db()
    final = cup.final_tournament
    assert final is not None and final.status == TournamentStatus.RUNNING
    assert final.format == TournamentFormat.ROUND_ROBIN
    entries = set(final.participants.values_list("revision_id", flat=True))
    assert entries == {first.pk, noughts.pk}  # the marked one; Carol's newest by default
    assert not run_once() or Competition.objects.get(pk=cup.pk).final_tournament_id == final.pk

    # Held out: only the organizers see it, also once it has ended.
    assert not can_see_tournament(bob, final)
    for duel in Duel.objects.filter(tournament=final):
        finish(duel, DuelResult.PLAYER_1_WIN)
    run_once()
    final.refresh_from_db()
    cup.refresh_from_db()
    assert final.status == TournamentStatus.COMPLETED
    assert not final.is_public and cup.final_published_at is None

    # The organizers publish it.
    assert final_publish(competition=cup)
    final.refresh_from_db()
    assert final.is_public and cup.is_published
    assert can_see_tournament(carol, final)
    ranks = dict(final.participants.values_list("revision_id", "rank"))
    assert sorted(ranks.values()) == [1, 2]


def test_a_final_that_is_not_held_out_is_published_when_it_ends(clock: Clock, sent, finish):
    cup = competition()
    clock.to(OPENS)
    one, two = person("One"), person("Two")
    validated(upload(one, cup, "one-bot"))
    validated(upload(two, cup, "two-bot"))
    clock.to(DEADLINE)
    run_once()
    cup.refresh_from_db()
    assert cup.final_tournament.is_public
    for duel in Duel.objects.filter(tournament=cup.final_tournament):
        finish(duel, DuelResult.DRAW)
    run_once()
    cup.refresh_from_db()
    assert cup.is_published


def test_a_final_ladder_plays_its_fixed_length_and_ends(clock: Clock, sent, finish):
    cup = competition(final_format=TournamentFormat.LADDER, final_rounds=3)
    clock.to(OPENS)
    for name in ("One", "Two", "Three"):
        validated(upload(person(name), cup, f"{name.lower()}-bot"))
    # An agent outside the competition is not in its final.
    outsider = validated(upload(person("Outside"), cup, "outside-bot"))
    outsider.competitor.team = None
    outsider.competitor.save()
    clock.to(DEADLINE)
    played = 0
    for _ in range(10):
        run_once()
        for duel in Duel.objects.filter(tournament__competition=cup, status="queued"):
            finish(duel, DuelResult.PLAYER_2_WIN)
            played += 1
    cup.refresh_from_db()
    final = cup.final_tournament
    assert final.status == TournamentStatus.COMPLETED
    assert played == 3 == final.duels_done
    assert final.participants.count() == 3
    assert outsider.pk not in final.participants.values_list("revision_id", flat=True)


def test_a_disqualified_team_uploads_nothing_and_plays_no_final(clock: Clock, sent):
    cup = competition()
    clock.to(OPENS)
    cheats = person("Cheat")
    entries = [validated(upload(person(name), cup, f"{name.lower()}-bot")) for name in "ABC"]
    validated(upload(cheats, cup, "cheat-bot"))
    team_disqualify(team=cup.teams.get(name="Cheat"), reason="shared code")
    with pytest.raises(UploadRejected, match="cheat-bot is disabled by the organizers"):
        upload(cheats, cup, "cheat-bot")
    with pytest.raises(UploadRejected, match="team Cheat is disqualified"):
        upload(cheats, cup, "another-bot")
    clock.to(DEADLINE)
    run_once()
    cup.refresh_from_db()
    assert set(cup.final_tournament.participants.values_list("revision_id", flat=True)) == {
        revision.pk for revision in entries
    }


def test_a_final_with_too_few_entries_says_why_and_is_not_retried(clock: Clock, sent):
    cup = competition()
    clock.to(OPENS)
    validated(upload(person("Alone"), cup, "alone-bot"))
    clock.to(DEADLINE)
    run_once()
    cup.refresh_from_db()
    assert cup.final_tournament is None
    assert cup.final_error == (
        "The final could not start: it has 1 final revision(s), and a tournament of "
        "Tic-tac-toe needs 2."
    )
    assert not run_once()


def test_the_total_limit_of_a_phase_says_when_uploads_close(clock: Clock, sent):
    cup = competition()
    member = person("Busy")
    for day in range(2):
        clock.to(OPENS + timedelta(days=day))
        upload(member, cup, "busy-bot")
        upload(member, cup, "busy-bot")
    clock.to(OPENS + timedelta(days=2))
    with pytest.raises(UploadRejected) as refused:
        upload(member, cup, "busy-bot")
    assert str(refused.value) == (
        "team Busy has made its 4 upload(s) of the development phase, and uploads close at "
        "2026-12-10 09:00 UTC"
    )


def test_a_team_that_has_not_submitted_may_be_left_and_goes_when_empty(clock: Clock):
    cup = competition()
    clock.to(OPENS)
    solo = person("Solo")
    team = team_create(competition=cup, user=solo, name="Temporary")
    with pytest.raises(ArenaError, match="you are in team Temporary"):
        team_create(competition=cup, user=solo, name="Another")
    team_leave(team=team, user=solo)
    assert not Team.objects.filter(pk=team.pk).exists()
    assert team_create(competition=cup, user=solo, name="Another").name == "Another"


def test_nobody_joins_a_team_after_the_deadline(clock: Clock):
    cup = competition()
    clock.to(OPENS)
    founder = person("Founder")
    team = team_create(competition=cup, user=founder, name="Late")
    _, code = invitation_create(team=team, by=founder)
    clock.to(DEADLINE)
    with pytest.raises(ArenaError, match="its deadline has passed"):
        invitation_accept(invitation=invitation_find(code), user=person("Latecomer"))


def test_a_swiss_final_plays_the_rounds_the_organizer_set(clock: Clock, sent):
    cup = competition(final_format=TournamentFormat.SWISS, final_rounds=2)
    clock.to(OPENS)
    for name in ("One", "Two", "Three", "Four"):
        validated(upload(person(name), cup, f"{name.lower()}-bot"))
    clock.to(DEADLINE)
    run_once()
    cup.refresh_from_db()
    final = cup.final_tournament
    assert final.format == TournamentFormat.SWISS and final.rounds == 2
    assert Duel.objects.filter(tournament=final, round=1).count() == 2


def test_a_phase_that_plays_its_own_ladder_opens_it_for_its_teams_and_stops_it_after(
    clock: Clock, sent
):
    cup = competition()
    cup.phases.filter(name="development").update(plays=PhasePlays.OWN_LADDER)
    CompetitionPhase.objects.create(
        competition=cup,
        name="break",
        starts_at=OPENS + timedelta(days=2),
        plays=PhasePlays.NOTHING,
    )
    clock.to(OPENS + timedelta(minutes=1))
    entries = {validated(upload(person(name), cup, f"{name.lower()}-bot")) for name in "AB"}
    outsider = validated(upload(person("Outside"), cup, "outside-bot"))
    Competitor.objects.filter(pk=outsider.competitor_id).update(team=None)

    run_once()
    [ladder] = cup.ladders.all()
    assert ladder.status == TournamentStatus.RUNNING and ladder.is_ladder
    assert set(ladder.participants.filter(withdrawn=False)) == set(
        ladder.participants.filter(revision__in=entries)
    )
    assert ladder.participants.count() == 2  # the outsider is not in it
    assert running_ladders(cup.environment) == []  # not the game's: online play joins none
    assert competition_page(user=AnonymousUser(), competition=cup).ladder == ladder

    clock.to(OPENS + timedelta(days=2, minutes=1))
    run_once()
    ladder.refresh_from_db()
    assert ladder.status == TournamentStatus.COMPLETED
    run_once()
    assert cup.ladders.count() == 1  # its phase is over: not opened again
