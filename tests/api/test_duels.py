"""Duels, matches and replays through the API."""

from __future__ import annotations

import pytest

from core.models import DuelStatus
from environments.registry import make_environment
from tests.factories import DuelFactory, MatchFactory, TournamentFactory
from tests.support.responses import ok

pytestmark = pytest.mark.django_db


def ids(response) -> list[int]:
    return [duel["id"] for duel in ok(response)["items"]]


def test_it_lists_the_duels_of_public_tournaments_and_the_self_play_one_may_see(
    client, alice, carol, bearer, duel, validation_duel
):
    assert ids(client.get("/api/v1/duels")) == [duel.pk]
    assert ids(client.get("/api/v1/duels", **bearer(carol))) == [duel.pk]
    assert ids(client.get("/api/v1/duels", **bearer(alice))) == [validation_duel.pk, duel.pk]


def test_it_filters_duels_by_tournament_competitor_status_and_kind(
    client, alice, bearer, duel, validation_duel
):
    other = DuelFactory(tournament=TournamentFactory(), status=DuelStatus.QUEUED)
    headers = bearer(alice)

    def listed(query: str) -> list[int]:
        return ids(client.get(f"/api/v1/duels?{query}", **headers))

    assert listed(f"tournament={duel.tournament_id}") == [duel.pk]
    assert listed("competitor=bobs-bot") == [duel.pk]
    assert listed("competitor=alices-bot") == [validation_duel.pk, duel.pk]
    assert listed("status=queued") == [other.pk]
    assert listed("is_validation=true") == [validation_duel.pk]
    assert listed("environment=connect_four") == []


def test_it_gives_a_duel_with_the_logs_of_the_agents_one_may_see(
    client, alice, carol, bearer, duel, bobs_bot
):
    anonymous = ok(client.get(f"/api/v1/duels/{duel.pk}"))
    owner = ok(client.get(f"/api/v1/duels/{duel.pk}", **bearer(alice)))

    assert anonymous["result"] == "PLAYER_1_WIN"
    assert anonymous["tournament"] == duel.tournament_id
    first, second = anonymous["players"]
    assert (first["competitor"], first["revision"], first["wins"]) == ("alices-bot", 1, 1)
    assert first["log"] is None  # alice's bot is private
    assert second["log"] is None  # bob's is public, but its logs are not shared
    bobs_bot.share_logs = True
    bobs_bot.save()
    shared = ok(client.get(f"/api/v1/duels/{duel.pk}"))["players"][1]
    assert shared["log"] == "bob's public musings"
    assert owner["players"][0]["log"] == "alice's private thoughts"
    listed = ok(client.get("/api/v1/duels"))["items"][0]
    assert "log" not in listed["players"][0]


def test_a_self_play_duel_of_a_private_competitor_is_a_404_to_others(
    client, alice, carol, bearer, validation_duel
):
    url = f"/api/v1/duels/{validation_duel.pk}"

    assert client.get(url).status_code == 404
    assert client.get(url, **bearer(carol)).status_code == 404
    assert client.get(f"{url}/matches/0/replay", **bearer(carol)).status_code == 404
    assert ok(client.get(url, **bearer(alice)))["is_validation"] is True


def test_it_lists_a_duels_matches_with_their_faults(client, alice, bearer, validation_duel):
    MatchFactory(duel=validation_duel)
    url = f"/api/v1/duels/{validation_duel.pk}/matches"

    matches = ok(client.get(url, **bearer(alice)))["items"]
    faulty = ok(client.get(f"{url}?fault_player=2", **bearer(alice)))["items"]

    assert [match["index"] for match in matches] == [0, 1]
    assert matches[0]["fault_kind"] == "illegal_action"
    [fault] = matches[0]["faults"]
    assert fault["player"] == 2 and fault["step"] == 1
    assert fault["explanation"] == "played an action that is not among the legal actions"
    assert [match["index"] for match in faulty] == [0]
    one = ok(client.get(f"{url}/1", **bearer(alice)))
    assert one["index"] == 1 and one["faults"] == []


def test_it_replays_a_match_with_every_state_recomputed(client, match):
    replay = ok(client.get(f"/api/v1/duels/{match.duel_id}/matches/0/replay"))

    environment = make_environment("tic_tac_toe")
    environment.reset(match.seed)
    assert replay["seed"] == match.seed
    assert replay["actions"] == match.actions
    assert replay["timings"] == match.timings
    assert replay["seats"] == [1, 2]
    assert replay["environment"] == "tic_tac_toe"
    assert len(replay["states"]) == len(match.actions) + 1
    assert replay["states"][0] == environment.state()
    assert replay["replay_error"] == ""


def test_a_replay_says_where_the_stored_actions_stop_replaying(client, match):
    match.actions = [[4, None], [None, 4]]  # the second move takes a taken cell
    match.save()

    replay = ok(client.get(f"/api/v1/duels/{match.duel_id}/matches/0/replay"))

    assert len(replay["states"]) == 2
    assert replay["replay_error"].startswith("step 2 no longer replays")


def test_an_unknown_match_or_duel_is_a_404(client, duel):
    assert client.get(f"/api/v1/duels/{duel.pk}/matches/5").status_code == 404
    assert client.get(f"/api/v1/duels/{duel.pk + 1000}").status_code == 404


def test_a_page_of_duels_takes_as_many_queries_for_one_duel_as_for_many(
    client, duel, django_assert_max_num_queries
):
    with django_assert_max_num_queries(3) as one:
        ok(client.get("/api/v1/duels"))
    for _ in range(10):
        DuelFactory(tournament=duel.tournament)

    with django_assert_max_num_queries(len(one.captured_queries)):
        assert ok(client.get("/api/v1/duels"))["count"] == 11


def test_a_match_keeps_the_old_score_fields_for_one_release_marked_deprecated(
    client, alice, bearer, validation_duel
):
    url = f"/api/v1/duels/{validation_duel.pk}/matches"

    [match] = ok(client.get(url, **bearer(alice)))["items"]
    document = ok(client.get("/api/v1/openapi.json"))

    assert match["scores"] == [1.0, 0.0]
    assert (match["player_1_score"], match["player_2_score"]) == (1.0, 0.0)
    fields = document["components"]["schemas"]["MatchOut"]["properties"]
    assert fields["player_1_score"]["deprecated"] is True
    assert fields["player_2_score"]["deprecated"] is True
    assert "deprecated" not in fields["scores"]
    # The duel's players are a list of seats, with nothing deprecated.
    duel = ok(client.get(f"/api/v1/duels/{validation_duel.pk}", **bearer(alice)))
    assert [player["number"] for player in duel["players"]] == [1, 2]
    players = document["components"]["schemas"]["DuelDetailOut"]["properties"]
    assert not any("deprecated" in field for field in players.values())
