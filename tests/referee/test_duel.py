from __future__ import annotations

import json

import pytest

from environments.base import replay
from environments.registry import load_info, make_environment
from referee.duel import Referee, run_duel
from referee.duel_settings import DuelSettings
from referee.results import Outcome
from referee.validation import validate
from sandboxes.base import AgentSource, SandboxError, SandboxLimits
from tests.support.sandboxes import AGENTS, agent, hostile, player

DOCUMENT_FIELDS = {
    "result",
    "error_msg",
    "num_matches",
    "errors",
    "other_errors",
    "wins",
    "draws",
    "scores",
    "matches",
}
MATCH_FIELDS = {
    "result",
    "error_msg",
    "scores",
    "first_player",
    "seed",
    "actions",
    "timings",
    "faults",
    "seats",
}


def test_it_lets_minimax_beat_random_with_the_first_player_alternating(backend):
    result = run_duel(
        "connect_four",
        (player("connect_four/minimax.py"), player("connect_four/random_player.py")),
        backend=backend,
        matches=20,
        seed=11,
    )
    document = result.as_json()

    assert document["result"] == "PLAYER_1_WIN"
    assert document["wins"][0] >= 18
    assert [match["first_player"] for match in document["matches"]] == [1, 2] * 10
    assert document["errors"][0] == document["errors"][1] == 0


def test_it_writes_every_field_of_the_duel_document(backend):
    result = run_duel(
        "tic_tac_toe",
        (agent("random_agent.py"), agent("random_agent.py")),
        backend=backend,
        matches=4,
        seed=5,
    )
    document = json.loads(json.dumps(result.as_json()))

    assert set(document) >= DOCUMENT_FIELDS
    assert document["num_matches"] == 4
    assert document["wins"][0] + document["wins"][1] + document["draws"] == 4
    assert document["scores"][0] + document["scores"][1] == 4
    for match in document["matches"]:
        assert set(match) >= MATCH_FIELDS
        assert len(match["timings"]) == len(match["actions"]) == match["steps"]


def test_it_records_enough_to_replay_every_match(backend):
    result = run_duel(
        "connect_four",
        (agent("random_agent.py"), player("connect_four/kaggle_style.py")),
        backend=backend,
        matches=6,
        seed=3,
    )
    environment = make_environment("connect_four")

    for match in result.as_json()["matches"]:
        states = replay(environment, match["seed"], match["actions"])
        assert states[-1]["terminal"] is True
        winner_seat = states[-1]["winner"]
        expected = "DRAW" if winner_seat is None else f"PLAYER_{match['seats'][winner_seat]}_WIN"
        assert match["result"] == expected


def test_it_replays_identically_from_the_same_seed(backend):
    sources = (agent("random_agent.py"), player("connect_four/random_player.py"))
    first = run_duel("connect_four", sources, backend=backend, matches=4, seed=99)
    second = run_duel("connect_four", sources, backend=backend, matches=4, seed=99)

    assert [m.actions for m in first.matches] == [m.actions for m in second.matches]
    assert [m.seed for m in first.matches] == [m.seed for m in second.matches]


def test_it_plays_simultaneous_moves_and_times_both_players(backend):
    result = run_duel(
        "rock_paper_scissors",
        (
            player("rock_paper_scissors/frequency.py"),
            player("rock_paper_scissors/random_player.py"),
        ),
        backend=backend,
        matches=6,
        seed=2,
    )

    assert result.other_errors == 0 and result.errors_of(1) == result.errors_of(2) == 0
    for match in result.matches:
        assert all(None not in step for step in match.actions)
        assert all(None not in step for step in match.timings)


@pytest.mark.parametrize(
    ("environment", "style"),
    [
        ("tic_tac_toe", "tic_tac_toe/player_class.py"),
        ("connect_four", "connect_four/kaggle_style.py"),
        ("quarto", "quarto/heuristic.py"),
        ("sum_to_10", "sum_to_10/node_agent"),
    ],
)
def test_it_plays_every_agent_style_through_the_sandbox(backend, environment, style):
    result = run_duel(
        environment,
        (player(style), player(f"{environment}/random_player.py")),
        backend=backend,
        matches=4,
        seed=8,
    )

    assert result.as_json()["errors"][0] == 0, result.error_msg
    assert result.other_errors == 0
    assert result.scores[0] >= 2


def test_it_charges_a_spent_time_bank_as_a_timeout(backend):
    # Limits wide enough for the honest agent on a loaded machine.
    slow = hostile("slow", HOSTILE_SLEEP="1.0")
    result = run_duel(
        "sum_to_10",
        (slow, agent("random_agent.py")),
        backend=backend,
        matches=1,
        seed=1,
        move_time=0.5,
        time_bank=1.25,
        # From the first position: a random opening could leave too few moves to spend it.
        opening_moves=0,
    )
    [match] = result.matches
    [fault] = match.faults

    # 0.5 s over the limit on each move: the bank covers two moves, not the third.
    assert (fault.player, fault.kind.value) == (1, "timeout")
    assert "time bank" in fault.message
    assert match.result is Outcome.PLAYER_2_WIN
    assert next(step[0] for step in match.timings if step[0] is not None) >= 1.0


class BrokenBackend:
    name = "broken"
    confined = False
    unconfined_reason = "it starts nothing"

    def start(self, source, *, limits, label):
        raise SandboxError("no space left on device")


def test_it_never_scores_a_sandbox_failure():
    result = run_duel(
        "tic_tac_toe",
        (agent("random_agent.py"), agent("random_agent.py")),
        backend=BrokenBackend(),
        matches=2,
    )
    document = result.as_json()

    assert document["result"] == "ERROR"
    assert document["other_errors"] == 1
    assert document["errors"][0] == document["errors"][1] == 0
    assert "no space left on device" in document["error_msg"]


def test_it_validates_a_sound_agent(backend):
    validation = validate("quarto", player("quarto/heuristic.py"), backend=backend, seed=4)

    assert validation.passed, validation.message
    assert len(validation.duel.matches) == 2


def test_it_fails_validation_with_advice_and_the_log_tail(backend):
    broken = AgentSource.from_path(AGENTS / "crash_at_import")
    validation = validate("connect_four", broken, backend=backend, seed=4)

    assert not validation.passed
    assert validation.message.startswith("validation failed: crash")
    assert "tensorflow" in validation.message


def test_it_fails_validation_for_an_illegal_move(backend):
    validation = validate("connect_four", hostile("illegal", at=3), backend=backend, seed=4)

    assert not validation.passed
    assert "illegal_action" in validation.message
    assert "legal_actions" in validation.message


def test_it_takes_the_limits_from_info_yml():
    settings = DuelSettings.from_info(load_info("quarto"), matches=3)

    assert settings.matches == 3
    assert settings.move_time == 2.0
    assert settings.limits == SandboxLimits(memory_mb=512, cpu_seconds=1200)


def test_it_refuses_a_path_that_is_not_an_agent(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="no entry point"):
        AgentSource.from_path(tmp_path)
    with pytest.raises(ValueError, match=r"must be a \.py file"):
        AgentSource.from_path(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="no such file"):
        AgentSource.from_path(tmp_path / "missing.py")


def test_it_closes_agents_even_when_the_referee_fails(backend, monkeypatch):
    referee = Referee(
        environment="tic_tac_toe",
        sources=(agent("random_agent.py"), agent("random_agent.py")),
        settings=DuelSettings.from_info(load_info("tic_tac_toe"), matches=2),
        backend=backend,
    )
    monkeypatch.setattr(referee.environment, "scores", lambda: 1 / 0)
    result = referee.play()

    assert result.as_json()["result"] == "ERROR"
    assert "referee error" in result.error_msg


def test_it_says_bye_so_agents_can_exit_on_their_own(backend):
    result = run_duel(
        "sum_to_10",
        (agent("says_goodbye.py"), agent("random_agent.py")),
        backend=backend,
        matches=2,
        seed=1,
    )

    assert "saving what I learned after 2 matches" in result.logs[0]
