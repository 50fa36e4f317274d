"""Every public page asks the database the same number of questions however long the
history behind it: its lists are paginated and read with what they show (no query per
row). Read as an anonymous visitor and as a signed-in one, with the pages' cache out of
the way (a test's open transaction reads no kept page), after 5 duels and after 50."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from core.models import Duel, TournamentFormat, TournamentStatus
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    LeaderboardEntryFactory,
    MatchFactory,
    ParticipantFactory,
    RatingChangeFactory,
    RatingFactory,
    RevisionFactory,
    TournamentFactory,
)

pytestmark = pytest.mark.django_db

#: The most queries any public page may take (today 14: the competitor's, signed in, with
#: its duels' history, a count, a slice, their seats and their matches' marks, and its
#: owner's test duel opponents).
MOST = 14


class History:
    """A public ladder whose duels, entrants, tournaments and rating changes grow."""

    def __init__(self, owner) -> None:
        self.owner = owner
        self.star = CompetitorFactory(owner=owner, is_public=True, name="star")
        self.revision = RevisionFactory(competitor=self.star, validated=True)
        self.rating = RatingFactory(competitor=self.star)
        LeaderboardEntryFactory(revision=self.revision)
        self.ladder = TournamentFactory(
            environment=self.star.environment,
            format=TournamentFormat.LADDER,
            status=TournamentStatus.RUNNING,
            is_public=True,
            matches_per_duel=1,
        )
        ParticipantFactory(tournament=self.ladder, revision=self.revision)
        self.duels: list[Duel] = []

    def grow(self, duels: int) -> None:
        for _ in range(duels):
            opponent = RevisionFactory(
                validated=True,
                competitor__environment=self.star.environment,
                competitor__is_public=True,
            )
            LeaderboardEntryFactory(revision=opponent, rank=len(self.duels) + 2)
            ParticipantFactory(tournament=self.ladder, revision=opponent)
            duel = DuelFactory(
                tournament=self.ladder,
                revisions=[self.revision, opponent],
                num_matches=1,
                finished=True,
            )
            match = MatchFactory(duel=duel)
            RatingChangeFactory(rating=self.rating, duel=duel, match=match)
            other = TournamentFactory(environment=self.star.environment, is_public=True)
            ParticipantFactory(
                tournament=other, revision=RevisionFactory(competitor=self.star, validated=True)
            )
            self.duels.append(duel)

    def pages(self) -> dict[str, str]:
        environment = self.star.environment.get_absolute_url()
        return {
            "home": "/",
            "environment": environment,
            "leaderboard": environment + "leaderboard/",
            "tournament": self.ladder.get_absolute_url(),
            "duel": self.duels[0].get_absolute_url(),
            "replay": self.duels[0].get_absolute_url() + "matches/0/",
            "competitor": self.star.get_absolute_url(),
        }


def _queries(visitor: Client, pages: dict[str, str]) -> dict[str, int]:
    counts = {}
    for name, path in pages.items():
        with CaptureQueriesContext(connection) as queries:
            response = visitor.get(path)
        assert response.status_code == 200, path
        counts[name] = len(queries)
    return counts


def test_no_public_page_asks_more_as_the_history_grows(client, alice):
    history = History(alice)
    signed_in = Client()
    signed_in.force_login(alice)

    history.grow(5)
    small = {
        who: _queries(visitor, history.pages())
        for who, visitor in (("anonymous", client), ("alice", signed_in))
    }
    history.grow(45)
    large = {
        who: _queries(visitor, history.pages())
        for who, visitor in (("anonymous", client), ("alice", signed_in))
    }

    assert large == small
    assert max(count for counts in large.values() for count in counts.values()) <= MOST, large


def test_the_long_lists_show_a_page_at_a_time(client, alice):
    history = History(alice)
    history.grow(55)
    tournament = client.get(history.ladder.get_absolute_url()).content.decode()
    # 55 duels at 50 a page: the newest first; the first duel on the second page.
    assert history.duels[-1].get_absolute_url() in tournament
    assert history.duels[0].get_absolute_url() not in tournament
    assert "?duels=2" in tournament and "Page 1 of 2" in tournament
    second = client.get(history.ladder.get_absolute_url() + "?duels=2").content.decode()
    assert history.duels[0].get_absolute_url() in second
    leaderboard = client.get(history.star.environment.get_absolute_url() + "leaderboard/?page=2")
    assert leaderboard.status_code == 200 and "Page 2 of 2" in leaderboard.content.decode()
    environment = client.get(history.star.environment.get_absolute_url()).content.decode()
    assert "The whole leaderboard: 56 competitors" in environment


def _changelists() -> list[str]:
    from django.contrib import admin
    from django.urls import get_resolver, reverse

    get_resolver().url_patterns  # noqa: B018  (the URLconf registers the admin's pages)
    return [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        for model in admin.site._registry
    ]


def test_no_admin_list_asks_more_as_the_history_grows(alice, organizer):
    """Every changelist of the admin shows a page of rows (``ArenaAdmin.list_per_page``),
    each read with what its columns show."""
    history = History(alice)
    admin = Client(raise_request_exception=False)
    admin.force_login(organizer)
    # The lists an organizer may open (Django's groups are the superusers').
    pages = {path: path for path in _changelists() if admin.get(path).status_code == 200}
    assert len(pages) > 10

    history.grow(5)
    small = _queries(admin, pages)
    history.grow(45)
    large = _queries(admin, pages)

    assert {path: count for path, count in large.items() if count != small[path]} == {}
