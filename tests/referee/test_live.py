"""A running duel's events for spectators: what the referee tells, and the feed that
batches them away from the referee's thread."""

from __future__ import annotations

import threading
import time
from typing import Any

from referee.duel import run_duel
from referee.live import LiveFeed
from tests.support.live import assert_told_as_recorded
from tests.support.sandboxes import player


def test_it_tells_each_match_and_step_as_played_matching_the_record(backend):
    events: list[dict] = []
    result = run_duel(
        "tic_tac_toe",
        (player("tic_tac_toe/random_player.py"), player("tic_tac_toe/minimax.py")),
        backend=backend,
        matches=2,
        seed=5,
        progress=events.append,
    )

    assert_told_as_recorded(events, result.matches)
    assert [event["scores"] for event in events if event["type"] == "match_end"] == [
        [match.scores[0], match.scores[1]] for match in result.matches
    ]


def test_it_tells_every_seat_score_and_rank_of_a_game_of_four(backend):
    events: list[dict] = []
    result = run_duel(
        "lowest_unique",
        [player("lowest_unique/random_player.py")] * 2
        + [player("lowest_unique/low_bidder.py")] * 2,
        backend=backend,
        matches=4,
        seed=3,
        progress=events.append,
    )

    assert_told_as_recorded(events, result.matches)
    # Each player sat in each seat once: the rotation, as spectators are told it.
    seats = [event["seats"] for event in events if event["type"] == "match"]
    assert sorted(seats) == sorted([[1, 2, 3, 4], [2, 3, 4, 1], [3, 4, 1, 2], [4, 1, 2, 3]])
    ends = [event for event in events if event["type"] == "match_end"]
    assert [event["scores"] for event in ends] == [match.scores for match in result.matches]
    assert [event["ranks"] for event in ends] == [match.ranks for match in result.matches]


def test_it_sends_events_in_order_in_few_batches_and_the_rest_on_close():
    batches: list[list[dict]] = []
    feed = LiveFeed(batches.append, interval=0.05, name="test")
    started = time.monotonic()
    for number in range(10_000):
        feed.publish({"type": "step", "step": number})
    time.sleep(0.15)
    feed.publish({"type": "match_end"})
    feed.close()
    elapsed = time.monotonic() - started

    sent = [event for batch in batches for event in batch]
    assert [event.get("step") for event in sent[:-1]] == list(range(10_000))
    assert sent[-1] == {"type": "match_end"}
    # A batch an interval at most, and the rest on close (however slowly a loaded machine
    # published): not a batch an event.
    assert len(batches) <= elapsed / 0.05 + 2


def test_it_stops_quietly_when_its_sink_fails_and_never_blocks_the_referee():
    calls = []
    done = threading.Event()

    def broken(batch: list[dict]) -> None:
        calls.append(batch)
        raise OSError("the database is gone")

    feed = LiveFeed(broken, interval=0.01, name="test", thread_done=done.set)
    feed.publish({"type": "match"})
    time.sleep(0.1)
    started = time.perf_counter()
    for number in range(1000):
        feed.publish({"type": "step", "step": number})
    # Appends to a list: a referee blocked on the broken sink would wait far longer.
    assert time.perf_counter() - started < 5
    feed.close()

    assert feed.failed
    assert len(calls) == 1
    assert done.is_set()


def test_it_gives_up_rather_than_hold_more_than_its_limit():
    gate = threading.Event()

    def stuck(batch: list[dict[str, Any]]) -> None:
        gate.wait(5)

    feed = LiveFeed(stuck, interval=0.01, max_pending=100, name="test")
    for number in range(500):
        feed.publish({"type": "step", "step": number})
    gate.set()
    feed.close()

    assert feed.failed
