"""One-player episodes drawn in a real browser from their page's document, and stepped with
the replay viewer's controls: CartPole's cart and pole move with the state, the caption
says what was pushed; Mountain Car, Acrobot and Frozen Lake are drawn too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from environments.registry import make_environment
from tests.support.episodes import balancing, evaluation_of, played_episode

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def page_errors(page: Page) -> Iterator[list[str]]:
    """Errors the page's scripts raise (none expected)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield errors


def drawing_of(page: Page) -> dict[str, str]:
    """What the CartPole drawing shows: the cart's place and the pole's ends."""
    return page.evaluate(
        """() => {
            const board = document.querySelector("[data-replay-board]");
            const pole = board.querySelector(".cartpole-pole");
            const cart = board.querySelector(".cartpole-cart");
            return {
                cart: cart.getAttribute("x"),
                pole: ["x1", "y1", "x2", "y2"].map(name => pole.getAttribute(name)).join(" "),
            };
        }"""
    )


def angles_of(episode: dict) -> list[float]:
    """The pole's angle (degrees, as the page rounds it) at each step of ``episode``."""
    environment = make_environment("cartpole")
    environment.reset(episode["seed"])
    angles = [environment.view()["angle"]]
    for [action] in episode["actions"]:
        environment.step({0: action})
        angles.append(environment.view()["angle"])
    return angles


def test_a_cartpole_episode_is_drawn_and_stepped(
    live_server, page: Page, page_errors: list[str], screenshot
) -> None:
    episode = played_episode("cartpole", seed=7, policy=balancing)
    evaluation = evaluation_of("cartpole", episode)

    page.goto(f"{live_server.url}/evaluations/{evaluation.pk}/episodes/0/")

    position = page.locator("[data-replay-position]")
    caption = page.locator("[data-replay-board] .cartpole-caption")
    expect(position).to_have_text("Step 500 of 500")
    expect(page.locator("[data-replay-board] svg.cartpole-drawing")).to_be_visible()
    expect(page.locator("[data-replay-nojs]")).to_be_hidden()
    final = drawing_of(page)
    screenshot("final")

    page.keyboard.press("Home")
    expect(position).to_have_text("Step 0 of 500")
    expect(caption).to_contain_text("Pole ")
    expect(caption).not_to_contain_text("Pushed")
    start = drawing_of(page)
    assert start != final

    page.keyboard.press("ArrowRight")
    expect(position).to_have_text("Step 1 of 500")
    push = "right" if episode["actions"][0] == [1] else "left"
    expect(caption).to_contain_text(f"Pushed {push}")
    page.get_by_role("button", name="Step forward", exact=True).click()
    expect(position).to_have_text("Step 2 of 500")

    # The pole leans as the state says, at the step where it leans most (away from the
    # start and the end, whose drawings are compared with it).
    angles = angles_of(episode)
    steepest = max(range(50, 450), key=lambda step: abs(angles[step]))
    page.locator("[data-replay-slider]").fill(str(steepest))
    expect(position).to_have_text(f"Step {steepest} of 500")
    side = "right" if angles[steepest] > 0 else "left"
    expect(caption).to_contain_text(f"pole {abs(angles[steepest]):.1f}° {side} of upright")
    x1, _y1, x2, _y2 = (float(value) for value in drawing_of(page)["pole"].split())
    assert (x2 > x1) == (angles[steepest] > 0)
    assert drawing_of(page) not in (start, final)
    assert page.url.endswith(f"?step={steepest}")
    screenshot("steepest")

    # Play moves on by itself; pause stops it.
    page.keyboard.press("Home")
    page.get_by_role("button", name="Play", exact=True).click()
    expect(position).not_to_have_text("Step 0 of 500")
    page.get_by_role("button", name="Pause", exact=True).click()
    expect(page.locator("[data-replay-play]")).to_have_attribute("aria-label", "Play")
    assert drawing_of(page) != start
    assert page_errors == []


@pytest.mark.parametrize(
    ("game", "drawing", "first"),
    [
        ("mountain_car", "svg.mountain-car-drawing", "Start · car at "),
        ("acrobot", "svg.acrobot-drawing", "Start · the free end is "),
        ("frozen_lake", "table.frozen-lake-board", "Start"),
    ],
)
def test_every_control_task_and_frozen_lake_is_drawn(
    live_server, page: Page, page_errors: list[str], screenshot, game: str, drawing: str, first: str
) -> None:
    episode = played_episode(game, seed=5)
    evaluation = evaluation_of(game, episode)

    page.goto(f"{live_server.url}/evaluations/{evaluation.pk}/episodes/0/?step=0")

    board = page.locator("[data-replay-board]")
    expect(board.locator(drawing)).to_be_visible()
    expect(board).to_contain_text(first)
    before = board.inner_html()
    page.keyboard.press("End")
    expect(page.locator("[data-replay-position]")).to_have_text(
        f"Step {episode['steps']} of {episode['steps']}"
    )
    expect(board.locator(drawing)).to_be_visible()
    expect(board).not_to_contain_text(first)
    assert board.inner_html() != before
    screenshot("last")
    assert page_errors == []
