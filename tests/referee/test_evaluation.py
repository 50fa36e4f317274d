"""Evaluations: one agent, a fixed list of seeded episodes, the duel's sandboxes and faults."""

from __future__ import annotations

import json
import math
import statistics
import uuid

import pytest

from environments.base import replay
from environments.registry import make_environment
from llm.config import LLMConfig
from llm.local_server import LocalLLMServer
from referee.evaluation import run_evaluation, validate_evaluation
from referee.scores import episode_seeds, summarize, t_quantile_975
from sandboxes.base import AgentSource
from sandboxes.llm import LLMSandbox
from sandboxes.memory_seat_bus import MemorySeatBus
from sandboxes.remote import RemoteSandbox
from tests.support.online import BusClient, gateway_running
from tests.support.sandboxes import AGENTS, PLAYERS, hostile, player

SEEDS = episode_seeds(5, 4)


def test_it_plays_the_same_seeded_episodes_identically(any_backend):
    backend = any_backend
    first = run_evaluation(
        "cartpole", player("cartpole/random_player.py"), backend=backend, seeds=SEEDS
    )
    second = run_evaluation(
        "cartpole", player("cartpole/random_player.py"), backend=backend, seeds=SEEDS
    )

    assert first.infrastructure_error == ""
    assert [episode.seed for episode in first.episodes] == SEEDS
    assert first.as_json(include_log=False)["episodes"] != []
    assert [e.actions for e in first.episodes] == [e.actions for e in second.episodes]
    assert first.returns == second.returns
    for episode in first.episodes:
        assert episode.episode_return == len(episode.actions)  # a reward of 1 a step
        states = replay(make_environment("cartpole"), episode.seed, episode.actions)
        assert states[-1]["return"] == episode.episode_return
        assert len(episode.timings) == len(episode.actions)


def test_it_ranks_the_balancer_above_random_above_constant(backend):
    means = {
        name: run_evaluation(
            "cartpole", player(f"cartpole/{name}.py"), backend=backend, seeds=SEEDS
        ).summary.mean
        for name in ("balancer", "random_player", "constant")
    }

    assert means["balancer"] == 500.0  # held to the time limit, which ends the episode
    assert means["balancer"] > means["random_player"] > means["constant"]


def test_it_charges_a_timeout_to_its_episode_and_restarts_the_agent_once(any_backend):
    backend = any_backend
    # Silent from its third request: episode 0 is cut short with a timeout; the restarted
    # agent times out again on its third request; the rest is forfeited.
    # Its first two answers get a clock a cold container on a loaded machine keeps to.
    sleeper = hostile("sleep", at=3)
    evaluation = run_evaluation(
        "acrobot", sleeper, backend=backend, seeds=SEEDS, move_time=2.0, time_bank=2.0
    )

    assert evaluation.infrastructure_error == ""
    kinds = [[fault.kind.value for fault in episode.faults] for episode in evaluation.episodes]
    assert kinds == [["timeout"], ["timeout"], ["forfeit"], ["forfeit"]]
    assert evaluation.returns == [-500.0] * 4  # Acrobot's fault_return
    assert evaluation.restarts == 1
    assert evaluation.episodes[0].faults[0].step == 2


def test_it_charges_an_illegal_action_and_plays_on(backend):
    # Illegal from its second request on, in every episode.
    evaluation = run_evaluation(
        "cartpole", hostile("illegal", at=2), backend=backend, seeds=SEEDS[:2]
    )

    first, second = evaluation.episodes
    assert [fault.kind.value for fault in first.faults] == ["illegal_action"]
    assert (first.faults[0].step, len(first.actions), first.episode_return) == (1, 1, 0.0)
    # Not fatal: the same process is asked again in the next episode.
    assert [fault.kind.value for fault in second.faults] == ["illegal_action"]
    assert second.faults[0].step == 0
    assert evaluation.restarts == 0


def test_it_charges_a_crash_at_start_to_every_episode_it_spoils(backend):
    broken = AgentSource.from_path(AGENTS / "crash_at_import")
    evaluation = run_evaluation("frozen_lake", broken, backend=backend, seeds=SEEDS[:3])

    kinds = [episode.faults[0].kind.value for episode in evaluation.episodes]
    assert kinds == ["crash", "crash", "forfeit"]
    assert evaluation.returns == [0.0, 0.0, 0.0]


def _remote_seat(grace: float = 5.0) -> tuple[MemorySeatBus, RemoteSandbox, AgentSource]:
    """A remote seat on a bus of its own; the test runs it in ``gateway_running(bus)``.

    The grace runs from the seat's start until its client's stream is open: ``BusClient``
    opens it in a thread of its own, which a loaded machine may start late (as
    tests/sandboxes/test_remote.py's ``GRACE``, a limit an honest client never reaches)."""
    bus = MemorySeatBus()
    seat = f"test-{uuid.uuid4().hex[:12]}"
    remote = RemoteSandbox(bus, duel=1, grace=grace, allowance=0.2)
    return bus, remote, AgentSource.remote("online", seat=seat)


def test_it_evaluates_an_online_agent_on_the_same_episodes_as_a_hosted_one(backend):
    hosted = run_evaluation(
        "cartpole", player("cartpole/random_player.py"), backend=backend, seeds=SEEDS
    )
    bus, remote, online = _remote_seat()
    assert online.seat is not None
    with (
        gateway_running(bus),
        BusClient(bus, online.seat, PLAYERS / "cartpole" / "random_player.py") as client,
    ):
        evaluation = run_evaluation("cartpole", online, backend=remote, seeds=SEEDS)

    assert evaluation.infrastructure_error == "" and evaluation.faults == []
    # The same player on the same seeds: the same actions and returns, over the network.
    assert [e.actions for e in evaluation.episodes] == [e.actions for e in hosted.episodes]
    assert evaluation.returns == hosted.returns
    assert client.refused == []


def test_it_charges_an_online_agent_that_never_comes_to_every_episode():
    bus, remote, online = _remote_seat(grace=0.5)

    with gateway_running(bus):
        evaluation = run_evaluation(
            "cartpole", online, backend=remote, seeds=SEEDS[:3], startup_time=1.0
        )

    assert evaluation.infrastructure_error == ""
    assert evaluation.returns == [0.0, 0.0, 0.0]  # CartPole's fault_return
    reasons = [episode.error_msg for episode in evaluation.episodes]
    assert reasons[0] == "player 1 timeout: while starting: it did not finish starting within 1.0 s"
    # Gone past its grace period: no restart, the rest lost as a duel's would be.
    gone = "not played: it disconnected and did not come back within the 0.5 s grace period"
    assert reasons[1:] == [f"player 1 timeout: {gone}"] * 2
    assert evaluation.restarts == 0


def test_it_evaluates_an_llm_seat_and_keeps_each_episodes_conversation():
    key = "sk-evaluation-secret-2b7c"
    with LocalLLMServer() as server:
        seat = LLMSandbox(LLMConfig(base_url=server.url, model="scripted", api_key=key))
        evaluation = run_evaluation(
            "cartpole",
            AgentSource.llm("scripted"),
            backend=seat,
            seeds=SEEDS[:2],
            move_time=5.0,
            time_bank=5.0,
        )

    assert evaluation.infrastructure_error == "" and evaluation.faults == []
    for episode in evaluation.episodes:
        # The rule-based model always plays the first legal action: pushes left.
        assert episode.actions and {actions[0] for actions in episode.actions} == {0}
        conversation = episode.as_json()["conversation"]
        assert conversation["model"] == "scripted"
        assert [turn["step"] for turn in conversation["turns"]] == list(range(len(episode.actions)))
    assert key not in json.dumps(evaluation.as_json())


def test_it_validates_a_one_player_agent_by_a_short_evaluation(backend):
    passed = validate_evaluation("cartpole", player("cartpole/balancer.py"), backend=backend)
    failed = validate_evaluation("cartpole", hostile("illegal", at=5), backend=backend, seed=3)

    assert passed.passed, passed.message
    assert len(passed.evaluation.episodes) == 2
    assert not failed.passed
    assert failed.message.startswith("validation failed: illegal_action")
    assert "(move 5)" in failed.message


def test_it_computes_the_student_t_interval_of_the_mean():
    returns = [10.0, 12.0, 9.0, 11.0, 13.0]
    summary = summarize(returns)
    half_width = 2.776 * statistics.stdev(returns) / math.sqrt(5)

    assert summary.mean == 11.0
    assert summary.low == pytest.approx(11.0 - half_width)
    assert summary.high == pytest.approx(11.0 + half_width)
    assert summarize([7.0]).low is None
    assert summarize([3.0, 3.0]).half_width == 0.0


@pytest.mark.parametrize(
    ("degrees", "table"),
    [(1, 12.706), (10, 2.228), (11, 2.201), (20, 2.086), (30, 2.042), (120, 1.980)],
)
def test_it_matches_the_tables_of_t(degrees, table):
    assert t_quantile_975(degrees) == pytest.approx(table, abs=0.0015)
