"""What agents logged at each move, beside the replay: their owner's and the organizers';
everyone's once the duel is over, if the competitor is public and its owner shares them."""

from __future__ import annotations

import html
import json
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
    """The replay page's move logs: frame -> the logs the viewer shows there, from the
    page's match document (``replay-logs``)."""
    response = client.get(match.get_absolute_url())
    assert response.status_code == 200
    found = re.search(
        r'<script id="replay-logs" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    if found is None:
        return {}
    document = json.loads(found[1])  # [[frame, [[label, step, log]]]]
    return {frame: [log for _label, _step, log in entries] for frame, entries in document}


def rendered_panels(client: Client, url: str) -> dict[int, list[tuple[str, str]]]:
    """The move-log panels the server rendered (for a browser without JavaScript): frame
    -> (heading, log) of each entry, unescaped."""
    page = client.get(url).content.decode()
    found: dict[int, list[tuple[str, str]]] = {}
    for step, body in re.findall(r'data-move-log-step="(\d+)"(.*?)</section>', page, re.S):
        found[int(step)] = [
            (" ".join(re.sub(r"<[^>]+>", "", html.unescape(heading)).split()), html.unescape(log))
            for heading, log in re.findall(r"<h3>(.*?)</h3>\s*<pre[^>]*>(.*?)</pre>", body, re.S)
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
    for step in (1, 2):  # in the panel of its step, and in the document only
        page = alice_client.get(f"{logged.get_absolute_url()}?step={step}").content.decode()

        assert "<script>alert" not in page
        assert "\\u003Cscript\\u003Ealert('x')\\u003C/script\\u003E \\u0026 more" in page
    panel = alice_client.get(f"{logged.get_absolute_url()}?step=1").content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more" in panel


def test_the_server_renders_the_shown_steps_panel_only(client, organizer, logged):
    # The document carries every step's logs (the viewer writes them); a browser without
    # JavaScript reads those of the step it shows.
    client.force_login(organizer)
    url = logged.get_absolute_url()

    assert rendered_panels(client, f"{url}?step=1") == {
        1: [("alices-bot v1 while choosing move 1", ALICE_SAYS)]
    }
    assert rendered_panels(client, f"{url}?step=2") == {
        2: [("bobs-bot v1 while choosing move 2", BOB_SAYS)]
    }
    at_the_end = client.get(url).content.decode()
    assert rendered_panels(client, url) == {}
    assert re.search(r"<p [^>]*data-move-log-none>", at_the_end)  # "no agent log", shown


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
