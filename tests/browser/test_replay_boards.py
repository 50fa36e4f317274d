"""Replays drawn in the browser from the match's compact document, in a real browser: a
332-move chess match weighs at most 300 KB, for a visitor and for the owner of an agent
that logged at each of its moves, and is drawn from its own document at its last step
(how soon is printed, a figure for BENCHMARKS.md: a loaded machine must not fail a test by
its speed); the move list follows the step; an LLM's conversation sits beside the board
on a wide screen; and the chess drawer asks which piece a pawn promotes to."""

from __future__ import annotations

import random
import statistics
from typing import Any

import pyspiel
import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from core.models import Environment, Match, MatchLog
from core.services.environments import environment_add_openspiel
from environments.registry import make_environment
from tests.factories import (
    DuelFactory,
    LLMPlayerFactory,
    MatchConversationFactory,
    MatchFactory,
    TournamentFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)

#: The issue's long replay: 332 moves. Random legal moves from this seed end in a draw on
#: move 332 (found once by trying seeds in order).
LONG_GAME_SEED = 491
LONG_GAME_MOVES = 332
MAX_PAGE_BYTES = 300_000
#: What the owner's agent logs at each of its moves in the long replay: a search's
#: summary, as agents write them.
OWNER_LOG = "depth 3, 4812 positions, best {move}: +0.{step} <not HTML> & more"
#: The most the owner's page may weigh beyond the visitor's for each log entry, on top
#: of the text the agent wrote: in the match document, its frame, step and player's label
#: (``bot-7 v1``) with JSON's brackets, and the escapes of the log's <, > and & (about 50
#: bytes in all). A panel rendered as HTML took some 400.
MAX_BYTES_PER_LOG_ENTRY = 64
#: Loads measured. The fastest is the figure, as timeit reports: it is the page's own
#: cost, where a slower load measures the other work sharing the cores at that moment
#: (other test runs); the median is shown too.
LOADS = 7


def random_chess_game(seed: int) -> dict[str, Any]:
    """A whole chess match of random legal moves, played through the real environment."""
    environment = make_environment("openspiel:chess")
    environment.reset(0)
    choices = random.Random(seed)
    actions: list[list[Any]] = []
    while not environment.is_terminal():
        [mover] = environment.to_move()
        action = choices.choice(environment.legal_actions(mover))
        environment.step({mover: action})
        actions.append([action if seat == mover else None for seat in range(2)])
    return {"actions": actions, "scores": environment.scores()}


def chess_match(chess: Environment, played: dict[str, Any]) -> Match:
    duel = DuelFactory(tournament=TournamentFactory(environment=chess), finished=True)
    return MatchFactory(duel=duel, seed=0, played=played)


def first_draw(page: Page) -> dict[str, float]:
    """When the first board was drawn (boards.js's performance mark), in ms from the
    navigation's start and from the end of the page's response; and the server's time."""
    return page.evaluate(
        """() => {
            const [drawn] = performance.getEntriesByName("arena-board-drawn");
            const [navigation] = performance.getEntriesByType("navigation");
            return {
                total: drawn.startTime,
                server: navigation.responseStart - navigation.requestStart,
                browser: drawn.startTime - navigation.responseEnd,
            };
        }"""
    )


def test_a_332_move_chess_replay_is_light_and_drawn_at_once(live_server, page: Page, screenshot):
    game = random_chess_game(LONG_GAME_SEED)
    assert len(game["actions"]) == LONG_GAME_MOVES
    match = chess_match(environment_add_openspiel(spec="openspiel:chess"), game)
    url = live_server.url + match.get_absolute_url()

    sizes, draws = [], []
    for _load in range(LOADS):
        response = page.goto(url)
        assert response is not None and response.ok
        sizes.append(len(response.body()))
        expect(page.locator("[data-replay-position]")).to_have_text("Step 332 of 332")
        draws.append(first_draw(page))
    best = min(draws, key=lambda draw: draw["total"])
    print(
        f"\n332-move chess replay: {sizes[0]} bytes; first board drawn {best['total']:.0f} ms "
        f"after navigation began (the server answered in {best['server']:.0f} ms, the board "
        f"was drawn {best['browser']:.0f} ms after the response); median of {LOADS} loads "
        f"{statistics.median(draw['total'] for draw in draws):.0f} ms"
    )
    assert sizes[0] <= MAX_PAGE_BYTES
    # The final position is drawn, its last move marked, from the page's own document.
    board = page.locator("[data-replay-board]")
    expect(board.locator(".chess-board td.openspiel-square")).to_have_count(64)
    expect(board.locator(".chess-last")).to_have_count(2)
    screenshot("final")

    # The move list follows the step: the current move is scrolled into the list's view.
    moves = page.locator("[data-replay-moves]")

    def current_is_in_view() -> bool:
        return page.evaluate(
            """() => {
                const list = document.querySelector("[data-replay-moves]");
                const item = list.querySelector(".move.current").getBoundingClientRect();
                const box = list.getBoundingClientRect();
                return item.top >= box.top - 1 && item.bottom <= box.bottom + 1;
            }"""
        )

    assert current_is_in_view() and moves.evaluate("list => list.scrollTop") > 0
    page.keyboard.press("Home")
    expect(page.locator(".move.current [data-step]")).to_have_attribute("data-step", "0")
    assert current_is_in_view() and moves.evaluate("list => list.scrollTop") < 10
    page.locator("[data-replay-slider]").fill("166")
    expect(page.locator(".move.current [data-step]")).to_have_attribute("data-step", "166")
    assert current_is_in_view()
    expect(page.locator("[data-replay-move]")).to_contain_text(" played ")

    # The owner of Black's agent (seat 1), which logged at each of its moves, reads the
    # logs too, and the page stays within the same weight: each log is in the match
    # document as its text, never as a rendered panel.
    black = match.seats[0]
    logs: dict[int, str] = {
        step: OWNER_LOG.format(move=actions[0]["text"], step=step)
        for step, actions in enumerate(game["actions"])
        if actions[0] is not None
    }
    MatchLog.objects.create(
        match=match, player=black, moves=[{"step": step, "log": logs[step]} for step in logs]
    )
    owner = Client()
    owner.force_login(match.duel.revisions()[black - 1].competitor.owner)
    page.context.add_cookies(
        [{"name": "sessionid", "value": owner.cookies["sessionid"].value, "url": live_server.url}]
    )
    response = page.goto(url)
    assert response is not None and response.ok
    owners_size = len(response.body())
    text_bytes = sum(len(log.encode()) for log in logs.values())
    print(
        f"The owner's page, with {len(logs)} logs of {text_bytes} bytes: {owners_size} bytes "
        f"({(owners_size - sizes[0] - text_bytes) / len(logs):.0f} bytes a log beyond its text)"
    )
    assert owners_size <= MAX_PAGE_BYTES
    assert owners_size - sizes[0] <= text_bytes + MAX_BYTES_PER_LOG_ENTRY * len(logs)
    expect(page.locator("[data-replay-position]")).to_have_text("Step 332 of 332")
    page.locator("[data-replay-slider]").fill("2")  # after Black's first move (step 1)
    panel = page.locator("[data-move-log-step]:visible")
    expect(panel).to_have_attribute("data-move-log-step", "2")
    expect(panel.locator(".move-log-text")).to_have_text(logs[1])
    page.locator("[data-replay-slider]").fill("3")  # White's move: no log of Black's
    expect(panel).to_have_count(0)
    expect(page.locator("[data-move-log-none]")).to_be_visible()


def test_it_shows_the_llm_conversation_beside_the_board_when_the_screen_is_wide(
    live_server, page: Page, screenshot
):
    llm = LLMPlayerFactory(competitor__name="llm-bot", competitor__share_logs=True).competitor
    duel = DuelFactory(
        finished=True,
        tournament__environment=llm.environment,
        revisions=[llm.revisions.get(), None],
    )
    match = MatchFactory(duel=duel)
    MatchConversationFactory(match=match, player=1)

    for width in (1280, 1400):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live_server.url + match.get_absolute_url() + "?step=1")
        stage = page.locator(".replay-stage").bounding_box()
        side = page.locator("[data-replay-side]").bounding_box()
        assert stage is not None and side is not None
        assert side["x"] >= stage["x"] + stage["width"], f"beside at {width} px"
        assert side["y"] < stage["y"] + stage["height"]
        expect(page.locator("[data-conversation-step='1']")).to_be_visible()
    screenshot("wide")

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(live_server.url + match.get_absolute_url() + "?step=1")
    stage = page.locator(".replay-stage").bounding_box()
    side = page.locator("[data-replay-side]").bounding_box()
    assert stage is not None and side is not None
    assert side["y"] >= stage["y"] + stage["height"], "below the board on a phone"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_the_chess_drawer_asks_which_piece_a_pawn_promotes_to(live_server, page: Page):
    chess = environment_add_openspiel(spec="openspiel:chess")
    match = chess_match(chess, random_chess_game(20))  # a short game: its page has the drawer
    page.goto(live_server.url + match.get_absolute_url())
    # A white pawn on a7, and the moves as the play page gets them (edge.human).
    fen = "8/P7/8/8/8/8/8/k6K w - - 0 1"
    state = pyspiel.load_game("chess").new_initial_state(fen)
    legal = [
        {"id": action, "text": state.action_to_string(action)} for action in state.legal_actions()
    ]
    environment = make_environment("openspiel:chess")
    parts = environment.choice_parts({"observation": fen}, 1, legal)
    choices = [
        {"action": action, "text": action["text"], "parts": part}
        for action, part in zip(legal, parts, strict=True)
    ]
    page.evaluate(
        """([view, choices]) => {
            const box = document.createElement("div");
            box.id = "promotion-test";
            document.body.prepend(box);
            ArenaBoards.draw(box, view, {choices, choose: (choice) => { window.chosen = choice; }});
        }""",
        [environment.observation_view({"observation": fen}, 1), choices],
    )
    box = page.locator("#promotion-test")
    box.locator('[data-square="a7"] button').click()
    expect(box.locator(".chess-target")).to_have_count(1)  # a8: the king is far away
    box.locator('[data-square="a8"] button').click()
    chooser = box.get_by_role("group", name="Promote to")
    expect(chooser.get_by_role("button")).to_have_text(["Queen", "Rook", "Bishop", "Knight"])
    assert page.evaluate("window.chosen === undefined")
    chooser.get_by_role("button", name="Knight").click()
    assert page.evaluate("window.chosen.text") == "a8=N"
