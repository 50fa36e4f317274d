"""The people of our test stories and the Django settings of a test run (a pytest plugin,
loaded by the root ``conftest.py`` when Django is installed).

- alice: an attendee; owns ``alices-bot``, a private tic-tac-toe competitor with one
  validated revision.
- bob: an attendee, her opponent; owns ``bobs-bot``, public, with a validated revision.
- carol: an attendee with nothing of her own and no access to alice's things.
- organizer: runs tournaments from the admin (role organizer, staff).
- invite: the active invite code ``welcome-2026``.

And a small played world: ``tournament``, a finished round robin between alice's private
bot and bob's public one, its ``duel`` and ``match``; ``ratings``; the published
``leaderboard``; alice's ``validation_duel``.

Every user's password is ``tests.factories.PASSWORD``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from core.models import (
    Competitor,
    Duel,
    DuelResult,
    Environment,
    InviteCode,
    LeaderboardEntry,
    Match,
    Rating,
    Revision,
    Tournament,
    TournamentStatus,
    User,
)
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    InviteCodeFactory,
    MatchFactory,
    OrganizerFactory,
    ParticipantFactory,
    RevisionFactory,
    TournamentFactory,
    UserFactory,
)

_media_root: Path | None = None


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    global _media_root
    # Django's start made this process's umask owner-only, as in every Arena process
    # (core.private_data; tests/core/test_private_data.py runs the real thing in a process
    # of its own). The test process also plays the operator and the other users (nginx's
    # configuration and certificates, files for agents of other user ids), as their own
    # tools would with the usual umask.
    os.umask(0o022)
    # Hashing with the production hasher costs a quarter of a second per user.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Uploads, builds and published files made by tests go to folders of this process,
    # never to var/ (where the demo keeps its own), nor to another test process's (two
    # test databases each have a revision 1).
    _media_root = Path(tempfile.mkdtemp(prefix="arena-test-data-"))
    settings.MEDIA_ROOT = _media_root / "media"
    settings.ARENA_BUILD_ROOT = _media_root / "builds"
    settings.ARENA_PUBLISH_WORKDIR = _media_root / "publisher"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _media_root is not None:
        shutil.rmtree(_media_root, ignore_errors=True)


@pytest.fixture
def alice(db: None) -> User:
    alice = UserFactory(email="alice@example.com", display_name="Alice")
    bot = CompetitorFactory(owner=alice, name="alices-bot", is_public=False)
    RevisionFactory(competitor=bot, validated=True)
    return alice


@pytest.fixture
def alices_bot(alice: User) -> Competitor:
    return alice.competitors.get(name="alices-bot")


@pytest.fixture
def bob(db: None) -> User:
    bob = UserFactory(email="bob@example.com", display_name="Bob")
    bot = CompetitorFactory(owner=bob, name="bobs-bot", is_public=True)
    RevisionFactory(competitor=bot, validated=True)
    return bob


@pytest.fixture
def bobs_bot(bob: User) -> Competitor:
    return bob.competitors.get(name="bobs-bot")


@pytest.fixture
def carol(db: None) -> User:
    return UserFactory(email="carol@example.com", display_name="Carol")


@pytest.fixture
def organizer(db: None) -> User:
    return OrganizerFactory(email="olga@example.com", display_name="Olga")


@pytest.fixture
def invite(db: None) -> InviteCode:
    return InviteCodeFactory(code="welcome-2026", is_active=True, created_by=None)


@pytest.fixture
def alices_revision(alices_bot: Competitor) -> Revision:
    return alices_bot.revisions.get(version=1)


@pytest.fixture
def bobs_revision(bobs_bot: Competitor) -> Revision:
    return bobs_bot.revisions.get(version=1)


@pytest.fixture
def tournament(alices_revision: Revision, bobs_revision: Revision, organizer: User) -> Tournament:
    now = timezone.now()
    tournament = TournamentFactory(
        environment=alices_revision.competitor.environment,
        name="Autumn cup",
        status=TournamentStatus.COMPLETED,
        matches_per_duel=1,
        created_by=organizer,
        started_at=now - timedelta(minutes=5),
        ended_at=now,
        duels_total=1,
        duels_done=1,
    )
    ParticipantFactory(
        tournament=tournament, revision=alices_revision, points=2, wins=1, score=1, rank=1
    )
    ParticipantFactory(tournament=tournament, revision=bobs_revision, losses=1, rank=2)
    return tournament


@pytest.fixture
def duel(tournament: Tournament, alices_revision: Revision, bobs_revision: Revision) -> Duel:
    duel = DuelFactory(
        tournament=tournament,
        revisions=[alices_revision, bobs_revision],
        num_matches=1,
        finished=True,
        result=DuelResult.PLAYER_1_WIN,
        seat_values=[
            {"wins": 1, "score": 1, "rank": 1, "log": "alice's private thoughts"},
            {"rank": 2, "log": "bob's public musings"},
        ],
    )
    MatchFactory(duel=duel)
    return duel


@pytest.fixture
def match(duel: Duel) -> Match:
    return duel.matches.get(index=0)


@pytest.fixture
def ratings(alices_bot: Competitor, bobs_bot: Competitor) -> list[Rating]:
    return [
        Rating.objects.create(competitor=alices_bot, mu=30.0, sigma=5.0, games=10),
        Rating.objects.create(competitor=bobs_bot, mu=20.0, sigma=4.0, games=10),
    ]


@pytest.fixture
def leaderboard(alices_revision: Revision, bobs_revision: Revision) -> list[LeaderboardEntry]:
    """The published leaderboard: alice first, bob second, carol's newcomer provisional."""
    environment = alices_revision.competitor.environment
    now = timezone.now()
    newcomer = RevisionFactory(
        competitor__environment=environment, competitor__name="carols-bot", validated=True
    )
    rows = [
        (alices_revision, 1, (1, 2), 1634.4, 81.2, (12, 9, 1, 2)),
        (bobs_revision, 2, (1, 2), 1512.6, 77.0, (12, 2, 1, 9)),
        (newcomer, None, (1, 3), 1580.2, 240.4, (2, 2, 0, 0)),
    ]
    Environment.objects.filter(pk=environment.pk).update(
        leaderboard_fitted_at=now, first_move_advantage=41.7
    )
    return [
        LeaderboardEntry.objects.create(
            environment=environment,
            competitor=revision.competitor,
            revision=revision,
            rank=rank,
            rank_best=best,
            rank_worst=worst,
            score=score,
            score_sd=sd,
            matches=matches,
            wins=wins,
            draws=draws,
            losses=losses,
            fitted_at=now,
        )
        for revision, rank, (best, worst), score, sd, (matches, wins, draws, losses) in rows
    ]


@pytest.fixture
def validation_duel(alices_revision: Revision) -> Duel:
    """Alice's self-play, whose first match she lost by an illegal action."""
    duel = DuelFactory(
        validation=True,
        revisions=[alices_revision, alices_revision],
        finished=True,
        result=DuelResult.PLAYER_1_WIN,
        seat_values=[{"log": "first copy's log"}, {"log": "second copy's log"}],
    )
    # Tic-tac-toe: X takes the centre, then O answers 4 again, which is taken.
    MatchFactory(
        duel=duel,
        index=0,
        first_player=1,
        actions=[[4, None]],
        timings=[[0.012, None]],
        steps=1,
        result=DuelResult.PLAYER_1_WIN,
        scores=[1, 0],
        faults=[
            {
                "player": 2,
                "kind": "illegal_action",
                "message": "4 is illegal: cell 4 is already taken by player 1 (X)",
                "step": 1,
            }
        ],
        fault_player=2,
        fault_kind="illegal_action",
    )
    return duel
