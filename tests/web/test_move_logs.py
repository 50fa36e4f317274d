"""What agents logged at each move, beside the replay: their owner's and the organizers';
everyone's once the duel is over, if the competitor is public and its owner shares them."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from core.models import Competitor, DuelStatus, MatchLog
from reads.access import can_see_logs
from tests.factories import DuelFactory

pytestmark = pytest.mark.django_db

ALICE_SAYS = "alice: column <script>alert('x')</script> & more"
BOB_SAYS = "bob: I'll take the centre\n  then a corner"


@pytest.fixture
def logged(match):
    """Alice (player 1, private) logged on her first move, Bob (player 2, public) on his."""
    MatchLog.objects.create(match=match, player=1, moves=[{"step": 0, "log": ALICE_SAYS}])
    MatchLog.objects.create(match=match, player=2, moves=[{"step": 1, "log": BOB_SAYS}])
    return match


def panels(client: Client, match) -> dict[int, list[str]]:
    """The replay page's move-log panels: frame -> the logs shown there, unescaped."""
    response = client.get(match.get_absolute_url())
    assert response.status_code == 200
    page = response.content.decode()
    found: dict[int, list[str]] = {}
    for step, body in re.findall(r'data-move-log-step="(\d+)"(.*?)</section>', page, re.S):
        found[int(step)] = [
            html.unescape(text) for text in re.findall(r"<pre[^>]*>(.*?)</pre>", body, re.S)
        ]
    return found


def share(competitor: Competitor, *, public: bool | None = None) -> None:
    competitor.share_logs = True
    if public is not None:
        competitor.is_public = public
    competitor.save()


def test_the_owner_reads_their_agents_log_at_the_frame_of_its_move(alice_client, logged):
    # Step 0's move leads to frame 1; Bob's log is his, though his bot is public.
    assert panels(alice_client, logged) == {1: [ALICE_SAYS]}


def test_it_escapes_what_the_agent_wrote(alice_client, logged):
    page = alice_client.get(logged.get_absolute_url()).content.decode()

    assert "<script>alert('x')</script>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more" in page


def test_no_one_else_reads_a_log_its_owner_does_not_share(client, bob, carol, logged):
    assert panels(client, logged) == {}
    client.force_login(carol)
    assert panels(client, logged) == {}
    assert "data-move-logs" not in client.get(logged.get_absolute_url()).content.decode()


def test_the_organizers_read_every_log(client, organizer, logged):
    client.force_login(organizer)

    assert panels(client, logged) == {1: [ALICE_SAYS], 2: [BOB_SAYS]}


def test_everyone_reads_a_public_competitors_shared_log_once_the_duel_is_over(
    client, alice, bobs_bot, logged
):
    share(bobs_bot)

    assert panels(client, logged) == {2: [BOB_SAYS]}
    client.force_login(alice)
    assert panels(client, logged) == {1: [ALICE_SAYS], 2: [BOB_SAYS]}


def test_a_private_competitors_log_stays_private_though_shared(client, carol, alices_bot, logged):
    share(alices_bot)

    client.force_login(carol)
    assert panels(client, logged) == {}
    share(alices_bot, public=True)
    assert panels(client, logged) == {1: [ALICE_SAYS]}


def test_a_shared_log_is_its_owners_until_the_duel_is_over(alice, bob, carol, bobs_bot):
    share(bobs_bot)
    running = DuelFactory(status=DuelStatus.RUNNING)
    finished = DuelFactory(finished=True)

    assert not can_see_logs(carol, bobs_bot, finished=running.is_finished)
    assert can_see_logs(bob, bobs_bot, finished=running.is_finished)
    assert can_see_logs(carol, bobs_bot, finished=finished.is_finished)


def test_a_move_the_match_ended_on_shows_its_log_with_the_final_state(alice_client, match):
    # A refused move (a fault) has no state after it: the final frame tells of it.
    MatchLog.objects.create(
        match=match, player=1, moves=[{"step": match.steps, "log": "about to crash"}]
    )

    assert panels(alice_client, match) == {match.steps: ["about to crash"]}


def test_the_owner_shares_the_logs_on_the_competitor_page(alice_client, alices_bot):
    url = f"{alices_bot.get_absolute_url()}move-logs/"
    page = alice_client.get(alices_bot.get_absolute_url()).content.decode()
    assert f'action="{url}"' in page and 'name="logs-share_logs"' in page

    response = alice_client.post(url, {"logs-share_logs": "on"})

    assert response.status_code == 302
    alices_bot.refresh_from_db()
    assert alices_bot.share_logs
    alice_client.post(url, {})
    alices_bot.refresh_from_db()
    assert not alices_bot.share_logs


def test_no_one_but_the_owner_changes_the_setting(client, bob, carol, alices_bot, bobs_bot):
    url = f"{bobs_bot.get_absolute_url()}move-logs/"
    response = client.post(url, {"logs-share_logs": "on"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(carol)
    assert client.post(url, {"logs-share_logs": "on"}).status_code == 404
    assert 'name="logs-share_logs"' not in client.get(bobs_bot.get_absolute_url()).content.decode()
    client.force_login(bob)
    assert client.post(f"{alices_bot.get_absolute_url()}move-logs/", {}).status_code == 404
    assert client.get(url).status_code == 405
    bobs_bot.refresh_from_db()
    assert not bobs_bot.share_logs
