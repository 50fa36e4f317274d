"""A person plays a whole game on the board, by clicking, in a real browser: a cell in
tic-tac-toe, a column's cell in Connect Four, a square then a piece in Quarto, a piece then
a highlighted target in chess (on a phone's width), labelled buttons in leduc poker.

The site is served by the network gateway (``run_gateway``, with a Redis seat bus, as in
production behind nginx) and each game refereed meanwhile by a worker thread running
``duel_play`` (``tests/browser/test_human_play.py``). The agents are deterministic, so each
game takes the same course; the test waits on the page's state, never on time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from django.test import Client
from playwright.sync_api import Locator, Page, expect

from core.models import Duel, DuelStatus
from core.services.environments import environment_add_openspiel
from tests.factories import UserFactory
from tests.pipeline import (  # noqa: F401
    make_user,
    pipeline,
    referees_playing,
    upload_validated,
)
from tests.support.workers import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]

FIRST_LEGAL = b"""from arena_sdk import agent


@agent
def play(turn):
    return turn.legal_actions[0]
"""

# White walks into the fool's mate (1. f3 or g4, 2. the other), then plays at random.
FOOLISH_WHITE = b"""from arena_sdk import agent

OPENING = ("f3", "g4")


@agent
def play(turn):
    for action in turn.legal_actions:
        if action["text"] in OPENING:
            return action
    return turn.random.choice(turn.legal_actions)
"""

CALLER = b"""from arena_sdk import agent


@agent
def play(turn):
    for action in turn.legal_actions:
        if action["text"] == "Call":
            return action
    return turn.legal_actions[0]
"""


@pytest.fixture
def referee() -> Iterator[None]:
    with referees_playing():
        yield


def start_game(
    gateway,
    page: Page,
    environment: str,
    agent: bytes,
    *,
    private: bool = False,
    side: str = "first",
) -> Locator:
    """Upload ``agent`` as "bot" (``private``: the person's own private agent), log the
    person in and start a game against it on ``side`` (moving "first" or "second"): the
    page's play section."""
    person = UserFactory(display_name="Ada")
    gateway.workers.start("uploads")
    owner = person if private else make_user("agents@example.org")
    upload_validated(owner, environment, "bot", agent, is_public=not private)
    session = Client()
    session.force_login(person)
    page.context.add_cookies(
        [{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": gateway.url}]
    )
    page.goto(f"{gateway.url}/environments/{environment}/competitors/bot/")
    page.get_by_label("Your side").select_option(side)
    page.get_by_role("button", name="Play against bot").click()
    expect(page.get_by_role("heading", name="You vs bot v1")).to_be_visible()
    return page.locator("#play")


def play_to_the_end(play: Locator, move: Callable[[Locator, int], None], most: int) -> int:
    """At each of the person's turns, ``move(board, number)``; the number of moves made."""
    moves = 0
    while True:
        expect(play).to_have_attribute("data-play-state", re.compile("your-turn|over|done"))
        if play.get_attribute("data-play-state") != "your-turn":
            return moves
        request = play.get_attribute("data-play-request")
        move(play.locator("[data-play-board]"), moves)
        moves += 1
        assert moves <= most, f"more than {most} moves"
        # Answered: the page waits for the agent, or already offers the next request.
        play.page.wait_for_function(
            """(request) => {
                const play = document.getElementById("play");
                return play.dataset.playRequest !== request
                    || play.dataset.playState !== "your-turn";
            }""",
            arg=request,
        )


def expect_the_end(play: Locator, result: str | re.Pattern[str]) -> None:
    """The result takes the clock's place, and the replay is offered."""
    expect(play).to_have_attribute("data-play-state", "done")
    expect(play.locator("[data-play-result]")).to_have_text(result)
    expect(play.locator("[data-play-clock]")).to_be_hidden()
    expect(play.get_by_role("link", name="Replay of the match")).to_be_visible()


def the_game() -> Duel:
    """The person's game, once its worker has stored it (after the page's last event)."""
    games = Duel.objects.filter(
        is_validation=False,
        seats__revision__competitor__kind="human",
        seats__revision__competitor__owner__display_name="Ada",
    )
    wait_for(
        lambda: games.filter(status=DuelStatus.SUCCEEDED).exists(),
        timeout=30,
        what="the game stored",
    )
    return games.get()


@pytest.mark.usefixtures("referee")
def test_it_plays_tic_tac_toe_by_clicking_cells(gateway, page: Page, screenshot):
    play = start_game(gateway, page, "tic_tac_toe", FIRST_LEGAL)
    expect(play.locator("[data-play-side]")).to_have_text("You play X, seat 1.")

    def move(board: Locator, number: int) -> None:
        expect(play.locator("[data-play-turn]")).to_have_text("Your turn.")
        expect(play.locator("[data-play-clock]")).to_contain_text("for this move")
        if number == 1:
            screenshot("your-turn")
        # The last empty cell: the agent takes the first ones, so the person wins the
        # column on the right.
        board.get_by_role("button", name=re.compile(r"^Play row")).last.click()

    assert play_to_the_end(play, move, most=5) == 3
    expect_the_end(play, "You won!")
    expect(play.locator(".tic-tac-toe-player-1")).not_to_have_count(0)
    screenshot("over")
    match = the_game().matches.get()
    assert not match.faults and match.actions[0] == [8, None]


@pytest.mark.usefixtures("referee")
def test_it_plays_connect_four_by_clicking_a_cell_of_the_column(gateway, page: Page, screenshot):
    play = start_game(gateway, page, "connect_four", FIRST_LEGAL)
    expect(play.locator("[data-play-side]")).to_have_text("You play red (X), seat 1.")

    def move(board: Locator, number: int) -> None:
        # The agent fills column 0; the person drops in columns 0, 1, 2, 3 in turn by
        # clicking a cell of the column (its bottom row): four in a row at the bottom.
        column = min(number, 3)
        board.locator("tbody tr").last.locator("td").nth(column).click()

    assert play_to_the_end(play, move, most=21) == 4
    expect_the_end(play, "You won!")
    # The final board: the person's four red discs along the bottom row.
    bottom = play.locator("tbody tr").last
    expect(bottom.locator(".connect-four-player-1")).to_have_count(4)
    screenshot("over")


@pytest.mark.usefixtures("referee")
def test_it_plays_quarto_by_clicking_a_square_then_a_piece_against_a_private_agent(
    gateway, page: Page, screenshot
):
    # A private agent's duels are not watched live: the board is the person's own.
    play = start_game(gateway, page, "quarto", FIRST_LEGAL, private=True)

    def move(board: Locator, number: int) -> None:
        squares = board.locator("[data-square]")
        if number == 0:
            # The first move only gives a piece: no square to place on yet.
            expect(squares).to_have_count(0)
        else:
            expect(board.locator("[data-quarto-hint]")).to_contain_text("Click an empty square")
            squares.last.click()
        # The square chosen (drawn at once): now the piece to give, unless none is left.
        pieces = board.locator("[data-piece]")
        if pieces.count():
            if number:
                expect(board.locator(".quarto-picked")).to_have_count(1)
            if number == 1:
                screenshot("square-picked")
            pieces.first.click()

    assert play_to_the_end(play, move, most=9) >= 3
    expect_the_end(play, re.compile(r"You won!|You lost\.|A draw\."))
    screenshot("over")
    match = the_game().matches.get()
    assert not match.faults and match.actions[0][0] == {"square": None, "piece": 0}


@pytest.mark.usefixtures("referee")
def test_it_plays_chess_by_clicking_a_piece_then_a_target_at_a_phones_width(
    gateway, page: Page, screenshot
):
    page.set_viewport_size({"width": 390, "height": 844})
    environment = environment_add_openspiel(spec="openspiel:chess").name
    play = start_game(gateway, page, environment, FOOLISH_WHITE, side="second")
    # The person moves second: OpenSpiel's first seat, Black; the agent (White) moves first.
    route = [("e7", "e5"), ("d8", "h4")]

    def move(board: Locator, number: int) -> None:
        expect(play.locator("[data-play-side]")).to_have_text("You play Black, seat 1.")
        start, target = route[number]
        board.locator(f'[data-square="{start}"] button').click()
        targets = board.locator(".chess-target")
        if number == 0:
            # A pawn on its first move: one or two squares ahead.
            expect(targets).to_have_count(2)
            screenshot("targets")
        board.locator(f'[data-square="{target}"] button').click()

    assert play_to_the_end(play, move, most=2) == 2
    expect_the_end(play, "You won!")
    # The final board, the black queen on h4; and nothing wider than the phone.
    expect(play.locator('[data-square="h4"]')).to_have_text("♛")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = play.locator(".chess-board").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    screenshot("over")


@pytest.mark.usefixtures("referee")
def test_it_plays_leduc_poker_with_labelled_buttons_and_cards_in_words(
    gateway, page: Page, screenshot
):
    environment = environment_add_openspiel(spec="openspiel:leduc_poker").name
    play = start_game(gateway, page, environment, CALLER)
    cards = re.compile(r"Your card\s*[JQK][♠♥]")

    def move(board: Locator, number: int) -> None:
        expect(board).to_contain_text(cards)
        expect(board).not_to_contain_text("[Private")
        expect(board.locator(".leduc-card-hidden")).to_have_count(1)  # the opponent's
        if number == 0:
            screenshot("your-turn")
        play.get_by_role("group", name="Your legal moves").get_by_role(
            "button", name="Call"
        ).click()

    assert play_to_the_end(play, move, most=4) == 2
    expect_the_end(play, re.compile(r"You won!|You lost\.|A draw\."))
    expect(play.locator("[data-play-board]")).to_contain_text("Public card")
    screenshot("over")
