"""The site and the REST API show and hide the same objects to the same visitor: both ask
``reads.access``. For every kind of object (competitors, revisions, tournaments, duels,
matches and their replays, LLM players, score competitions and evaluations), public and
private ones, another user's, and a poker duel still being played, each visitor
(anonymous, the owner, another user, an organizer) gets a page on the site exactly when
the API answers it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from core.models import Duel, DuelStatus, MatchLog, User
from core.services.environments import environment_add_openspiel
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    EvaluationFactory,
    LLMPlayerFactory,
    MatchFactory,
    RevisionFactory,
    ScoreCompetitionFactory,
    TournamentFactory,
)

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Shown:
    """One object: its page on the site and its document in the API."""

    what: str
    page: str
    document: str


def _competitor(competitor: Any, what: str) -> Iterator[Shown]:
    environment, name = competitor.environment.name, competitor.name
    yield Shown(what, competitor.get_absolute_url(), f"/api/v1/competitors/{environment}/{name}")
    for revision in competitor.revisions.all():
        yield Shown(
            f"{what} v{revision.version}",
            revision.get_absolute_url(),
            f"/api/v1/competitors/{environment}/{name}/revisions/{revision.version}",
        )


def _duel(duel: Duel, what: str) -> Iterator[Shown]:
    yield Shown(what, duel.get_absolute_url(), f"/api/v1/duels/{duel.pk}")
    for match in duel.matches.all():
        api = f"/api/v1/duels/{duel.pk}/matches/{match.index}"
        yield Shown(f"{what}, match {match.index}", match.get_absolute_url(), api)
        yield Shown(f"{what}, replay {match.index}", match.get_absolute_url(), f"{api}/replay")


@pytest.fixture
def world(alice, bob, alices_bot, bobs_bot, tournament, duel, validation_duel) -> list[Shown]:
    """Alice's private bot and Bob's public one, their public tournament and its duel,
    Alice's self-play, a private tournament, a running poker duel, an LLM player of
    each kind of visibility, a score competition with an evaluation of each."""
    MatchFactory(duel=validation_duel)
    hidden = TournamentFactory(is_public=False, environment=tournament.environment)
    hidden_duel = DuelFactory(tournament=hidden, finished=True)
    MatchFactory(duel=hidden_duel)
    poker = environment_add_openspiel(spec="openspiel:leduc_poker")
    poker_duel = DuelFactory(
        tournament=TournamentFactory(environment=poker, is_public=True),
        status=DuelStatus.RUNNING,
    )
    private_llm = LLMPlayerFactory(competitor__owner=alice, competitor__is_public=False)
    public_llm = LLMPlayerFactory(competitor__owner=bob, competitor__is_public=True)
    scores = ScoreCompetitionFactory(is_public=True)
    cartpole = scores.environment
    mine = RevisionFactory(
        validated=True,
        competitor=CompetitorFactory(owner=alice, environment=cartpole, is_public=False),
    )
    theirs = RevisionFactory(
        validated=True,
        competitor=CompetitorFactory(owner=bob, environment=cartpole, is_public=True),
    )
    evaluations = [
        EvaluationFactory(competition=scores, revision=revision, finished=True)
        for revision in (mine, theirs)
    ]
    private_scores = ScoreCompetitionFactory(is_public=False, environment=cartpole)
    api = "/api/v1"
    return [
        *_competitor(alices_bot, "alice's private bot"),
        *_competitor(bobs_bot, "bob's public bot"),
        *_competitor(mine.competitor, "alice's private cartpole agent"),
        *_competitor(private_llm.competitor, "alice's private LLM player"),
        *_competitor(public_llm.competitor, "bob's public LLM player"),
        *(
            Shown(what, shown.get_absolute_url(), f"{api}/tournaments/{shown.pk}")
            for what, shown in (("a public tournament", tournament), ("a private one", hidden))
        ),
        *_duel(duel, "a duel of the public tournament"),
        *_duel(validation_duel, "alice's self-play"),
        *_duel(hidden_duel, "a duel of the private tournament"),
        *_duel(poker_duel, "a poker duel being played"),
        *(
            Shown(what, shown.get_absolute_url(), f"{api}/score-competitions/{shown.pk}")
            for what, shown in (
                ("a public score competition", scores),
                ("a private score competition", private_scores),
            )
        ),
        *(
            Shown(f"evaluation of {e.revision}", e.get_absolute_url(), f"{api}/evaluations/{e.pk}")
            for e in evaluations
        ),
        *(
            Shown(
                f"LLM player {player.competitor.name}",
                player.competitor.get_absolute_url(),
                f"{api}/llm/players/{player.competitor_id}",
            )
            for player in (private_llm, public_llm)
        ),
    ]


Visit = Callable[[str], int]


def visitors(client: Client, bearer: Callable[..., dict[str, str]], users: dict[str, User]):
    """Each visitor's way to the site (a session) and to the API (a token of theirs)."""
    yield "anonymous", client.get, client.get
    for name, user in users.items():
        site, api = Client(), Client()
        site.force_login(user)
        headers = bearer(user)
        yield name, site.get, lambda path, api=api, headers=headers: api.get(path, **headers)


def test_the_site_and_the_api_show_and_hide_the_same_objects(
    client, bearer, world, alice, bob, carol, organizer
):
    users = {"alice (owner)": alice, "bob": bob, "carol": carol, "the organizer": organizer}
    disagreements = []
    seen = {}
    for name, site, api in visitors(client, bearer, users):
        for shown in world:
            page, document = site(shown.page).status_code, api(shown.document).status_code
            assert page in (200, 404) and document in (200, 404), (name, shown, page, document)
            if page != document:
                disagreements.append(f"{name}: {shown.what}: page {page}, API {document}")
            seen[name, shown.what] = page == 200
    assert disagreements == []
    # Both hide something from someone, and the owner and organizers see what is theirs.
    assert not seen["anonymous", "alice's private bot"]
    assert seen["alice (owner)", "alice's private bot"]
    assert not seen["carol", "alice's self-play"]
    assert seen["the organizer", "a private one"]
    assert not seen["bob", "a private one"]
    assert seen["anonymous", "a poker duel being played"]


def test_a_poker_duel_being_played_shows_no_moves_on_either(client, world):
    running = Duel.objects.get(status=DuelStatus.RUNNING)

    document = client.get(f"/api/v1/duels/{running.pk}/matches").json()
    page = client.get(running.get_absolute_url()).content.decode()

    # Its matches are stored when it ends: until then neither shows a move or a card.
    assert document["items"] == []
    assert "/matches/" not in page


def test_the_site_and_the_api_show_the_same_move_logs(
    client, bearer, match, alice, bob, carol, organizer, bobs_bot
):
    """Alice's private bot and Bob's public one logged a move each: whoever reads one on the
    replay page reads it in the API's replay, before and after Bob shares his."""
    MatchLog.objects.create(match=match, player=1, moves=[{"step": 0, "log": "alice <thinks>"}])
    MatchLog.objects.create(match=match, player=2, moves=[{"step": 1, "log": "bob & his plan"}])
    users = {"alice (owner)": alice, "bob": bob, "carol": carol, "the organizer": organizer}
    api_path = f"/api/v1/duels/{match.duel_id}/matches/{match.index}/replay"
    seen = {}
    for shared in (False, True):
        bobs_bot.share_logs = shared
        bobs_bot.save()
        for name, site, api in visitors(client, bearer, users):
            page = site(match.get_absolute_url()).content.decode()
            # Every step's logs are in the page's match document, which the viewer reads.
            document = re.search(r'<script id="replay-logs"[^>]*>(.*?)</script>', page)
            on_page = {
                log
                for _frame, entries in json.loads(document[1] if document else "[]")
                for _label, _step, log in entries
            }
            in_api = {entry["log"] for entry in api(api_path).json()["move_logs"]}
            assert on_page == in_api, (name, shared)
            seen[name, shared] = in_api
    assert seen["anonymous", False] == seen["carol", False] == set()
    assert seen["alice (owner)", False] == {"alice <thinks>"}
    assert seen["bob", False] == {"bob & his plan"}
    assert seen["the organizer", False] == {"alice <thinks>", "bob & his plan"}
    assert seen["anonymous", True] == seen["carol", True] == {"bob & his plan"}
    assert seen["alice (owner)", True] == {"alice <thinks>", "bob & his plan"}
