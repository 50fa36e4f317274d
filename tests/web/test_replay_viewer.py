"""The replay viewer in a real browser: buttons, keys, the move list, the slider, playing."""

from __future__ import annotations

import re

import pytest

from core.models import MatchLog
from tests.factories import (
    DuelFactory,
    LLMPlayerFactory,
    MatchConversationFactory,
    MatchFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_steps_through_a_replay_with_keys_clicks_the_slider_and_play(
    live_server, page, screenshot, match
):
    last = match.steps
    page.goto(live_server.url + match.get_absolute_url())
    position = page.locator("[data-replay-position]")
    current = page.locator(".move.current [data-step]")

    assert position.inner_text() == f"Step {last} of {last}"
    assert page.locator("[data-replay-controls]").is_visible()
    assert not page.locator("[data-replay-nojs]").is_visible()

    page.keyboard.press("Home")
    assert position.inner_text() == f"Step 0 of {last}"
    assert current.get_attribute("data-step") == "0"
    assert page.locator(".tic-tac-toe-player-1").count() == 0

    page.keyboard.press("ArrowRight")
    assert position.inner_text() == f"Step 1 of {last}"
    assert page.locator(".tic-tac-toe-player-1").count() == 1
    assert "alices-bot v1 played" in page.locator("[data-replay-move]").inner_text()

    page.locator(f'.move-list [data-step="{last - 1}"]').click()
    assert position.inner_text() == f"Step {last - 1} of {last}"
    assert current.get_attribute("data-step") == str(last - 1)
    assert page.url.endswith(f"?step={last - 1}")

    page.keyboard.press("ArrowLeft")
    assert position.inner_text() == f"Step {last - 2} of {last}"

    page.locator("[data-replay-slider]").fill("2")
    assert position.inner_text() == f"Step 2 of {last}"
    screenshot("step-2")

    page.locator("[data-replay-first]").click()
    page.locator("[data-replay-speed]").select_option("4")
    page.locator("[data-replay-play]").click()
    assert page.locator("[data-replay-play]").get_attribute("aria-label") == "Pause"
    page.wait_for_function(
        f"document.querySelector('[data-replay-position]').textContent === 'Step {last} of {last}'"
    )
    page.wait_for_function(
        "document.querySelector('[data-replay-play]').getAttribute('aria-label') === 'Play'"
    )

    page.locator("[data-replay-first]").click()
    page.keyboard.press("End")
    assert position.inner_text() == f"Step {last} of {last}"
    assert re.search(r"wins|Draw", page.locator("[data-replay-board]").inner_text())


def test_it_shows_the_llm_conversation_of_the_step_it_moves_to(live_server, page):
    llm = LLMPlayerFactory(competitor__name="llm-bot", competitor__share_logs=True).competitor
    duel = DuelFactory(
        finished=True,
        tournament__environment=llm.environment,
        revisions=[llm.revisions.get(), None],
    )
    match = MatchFactory(duel=duel)  # player 1, the LLM, moves first: steps 0, 2, 4...
    MatchConversationFactory(match=match, player=1)
    page.goto(live_server.url + match.get_absolute_url() + "?step=0")
    shown = page.locator("[data-conversation-step]:visible")
    none = page.locator("[data-conversation-none]")

    assert shown.count() == 0 and none.is_visible()

    page.keyboard.press("ArrowRight")
    assert shown.count() == 1 and shown.get_attribute("data-conversation-step") == "1"
    assert "ANSWER:" in shown.locator(".conversation-answer").first.inner_text()
    shown.locator("summary").first.click()  # the prompt, folded until asked for
    assert "Your move (step 0)." in shown.inner_text()
    assert not none.is_visible()

    page.keyboard.press("ArrowRight")  # the opponent's move: no conversation
    assert shown.count() == 0 and none.is_visible()

    page.keyboard.press("ArrowRight")
    assert shown.get_attribute("data-conversation-step") == "3"
    assert "ANSWER:" in shown.locator(".conversation-answer").first.inner_text()


def test_it_shows_the_agents_log_of_the_step_it_moves_to(live_server, page, screenshot, match):
    # Bob's public bot shares its move logs: anyone reads them at its moves (steps 1, 3...).
    bobs_bot = match.duel.revisions()[1].competitor
    bobs_bot.share_logs = True
    bobs_bot.save()
    MatchLog.objects.create(
        match=match,
        player=2,
        moves=[{"step": 1, "log": "bob <b>weighs</b> the centre"}, {"step": 3, "log": "a fork"}],
    )
    page.goto(live_server.url + match.get_absolute_url() + "?step=1")
    shown = page.locator("[data-move-log-step]:visible")
    none = page.locator("[data-move-log-none]")

    assert shown.count() == 0 and none.is_visible()

    page.keyboard.press("ArrowRight")
    assert shown.count() == 1 and shown.get_attribute("data-move-log-step") == "2"
    # Written as text: the agent's markup is shown, never made into elements.
    assert shown.locator(".move-log-text").inner_text() == "bob <b>weighs</b> the centre"
    assert shown.locator("b").count() == 0
    assert "while choosing move 2" in shown.locator("h3").inner_text()
    assert not none.is_visible()
    screenshot("replay-move-logs")

    page.keyboard.press("ArrowRight")
    assert shown.count() == 0 and none.is_visible()
    page.keyboard.press("ArrowRight")
    assert shown.locator(".move-log-text").inner_text() == "a fork"
