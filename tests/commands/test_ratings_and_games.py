from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.models import (
    Competitor,
    Duel,
    Match,
    Participant,
    Rating,
    RatingChange,
    Revision,
    Tournament,
)
from core.models.ratings import DEFAULT_MU, DEFAULT_SIGMA
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    EnvironmentFactory,
    MatchFactory,
    ParticipantFactory,
    RatingFactory,
    TournamentFactory,
)

pytestmark = pytest.mark.django_db


def answer(monkeypatch: pytest.MonkeyPatch, reply: str) -> list[str]:
    questions: list[str] = []

    def ask(prompt: str = "") -> str:
        questions.append(prompt)
        return reply

    monkeypatch.setattr("builtins.input", ask)
    return questions


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def ratings() -> list[Rating]:
    tic_tac_toe = CompetitorFactory(environment=EnvironmentFactory(name="tic_tac_toe"))
    quarto = CompetitorFactory(environment=EnvironmentFactory(name="quarto"))
    return [
        RatingFactory(competitor=tic_tac_toe, mu=31.0, sigma=2.0, games=40),
        RatingFactory(competitor=quarto, mu=18.0, sigma=3.0, games=12),
    ]


def test_it_resets_nothing_when_the_answer_is_no(
    monkeypatch: pytest.MonkeyPatch, ratings: list[Rating]
) -> None:
    questions = answer(monkeypatch, "no")

    with pytest.raises(CommandError, match="aborted: nothing was changed"):
        run("reset_ratings")

    assert "Reset 2 rating(s) in every environment" in questions[0]
    assert sorted(Rating.objects.values_list("mu", flat=True)) == [18.0, 31.0]
    assert not RatingChange.objects.exists()


def test_it_resets_every_rating_and_logs_it(ratings: list[Rating]) -> None:
    out = run("reset_ratings", "--yes")

    assert "Reset 2 rating(s) in every environment." in out
    for rating in Rating.objects.all():
        assert (rating.mu, rating.sigma, rating.games) == (DEFAULT_MU, DEFAULT_SIGMA, 0)
    changes = RatingChange.objects.order_by("mu_before")
    assert [change.reason for change in changes] == ["reset", "reset"]
    assert [change.mu_before for change in changes] == [18.0, 31.0]
    assert {change.mu_after for change in changes} == {DEFAULT_MU}


def test_it_resets_one_environment_after_a_yes(
    monkeypatch: pytest.MonkeyPatch, ratings: list[Rating]
) -> None:
    answer(monkeypatch, "yes")

    out = run("reset_ratings", "--environment=quarto")

    assert "Reset 1 rating(s) in quarto." in out
    assert Rating.objects.get(pk=ratings[0].pk).mu == 31.0
    assert Rating.objects.get(pk=ratings[1].pk).mu == DEFAULT_MU
    assert RatingChange.objects.get().rating == ratings[1]


def test_it_names_the_known_environments_for_an_unknown_one(ratings: list[Rating]) -> None:
    with pytest.raises(CommandError, match=r"no environment named 'chess' \(known: "):
        run("reset_ratings", "--environment=chess", "--yes")
    assert not RatingChange.objects.exists()


@pytest.fixture
def games() -> dict[str, Any]:
    """A tic-tac-toe tournament with a played duel, a validation duel, and a quarto
    tournament."""
    tournament = TournamentFactory(environment=EnvironmentFactory(name="tic_tac_toe"))
    ParticipantFactory(tournament=tournament)
    duel = DuelFactory(tournament=tournament, finished=True)
    MatchFactory(duel=duel)
    MatchFactory(duel=duel)
    validation = DuelFactory(validation=True, finished=True, revisions=[duel.revisions()[0]] * 2)
    MatchFactory(duel=validation)
    other = TournamentFactory(environment=EnvironmentFactory(name="quarto"))
    MatchFactory(duel=DuelFactory(tournament=other, finished=True))
    return {"tournament": tournament, "validation": validation, "other": other}


def test_it_deletes_nothing_when_the_answer_is_no(
    monkeypatch: pytest.MonkeyPatch, games: dict[str, Any]
) -> None:
    questions = answer(monkeypatch, "")

    with pytest.raises(CommandError, match="aborted"):
        run("delete_games", "--all")

    assert "Delete 2 tournaments, 2 duels, 3 matches in every environment?" in questions[0]
    assert (Tournament.objects.count(), Duel.objects.count(), Match.objects.count()) == (2, 3, 4)


def test_it_deletes_one_environments_games_and_keeps_revisions(
    games: dict[str, Any],
) -> None:
    revisions, competitors = Revision.objects.count(), Competitor.objects.count()

    out = run("delete_games", "--environment=tic_tac_toe", "--yes")

    assert "Deleted 1 tournaments, 1 duels, 2 matches in tic_tac_toe." in out
    assert list(Tournament.objects.all()) == [games["other"]]
    assert set(Duel.objects.all()) == {games["validation"], games["other"].duels.get()}
    assert not Participant.objects.filter(tournament__environment__name="tic_tac_toe").exists()
    assert (Revision.objects.count(), Competitor.objects.count()) == (revisions, competitors)


def test_it_deletes_validation_duels_when_asked(games: dict[str, Any]) -> None:
    revisions = Revision.objects.count()

    out = run("delete_games", "--all", "--validation", "--yes")

    assert "Deleted 2 tournaments, 3 duels, 4 matches in every environment." in out
    assert not Tournament.objects.exists()
    assert not Duel.objects.exists()
    assert not Match.objects.exists()
    assert Revision.objects.count() == revisions


def test_it_needs_a_scope() -> None:
    with pytest.raises(CommandError, match="one of the arguments --environment --all"):
        run("delete_games", "--yes")
