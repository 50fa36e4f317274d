from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from referee.cli import main, summary
from referee.results import DuelResult, MatchRecord
from tests.support.sandboxes import AGENTS, PLAYERS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def private_sandbox_root(sandbox_root, monkeypatch):
    # The command line's default folder, as --sandbox-root would set it.
    monkeypatch.setattr("sandboxes.process.DEFAULT_ROOT", sandbox_root)


def test_it_prints_the_duel_document(capsys):
    code = main(
        [
            "run",
            "connect_four",
            str(PLAYERS / "connect_four/minimax.py"),
            str(PLAYERS / "connect_four/random_player.py"),
            "--matches",
            "4",
            "--seed",
            "1",
        ]
    )
    document = json.loads(capsys.readouterr().out)

    assert code == 0
    assert document["num_matches"] == 4
    assert document["wins"][0] >= 3


def test_it_validates_from_the_command_line(capsys):
    assert main(["validate", "sum_to_10", str(PLAYERS / "sum_to_10/optimal.py")]) == 0
    assert "validated" in capsys.readouterr().out

    assert main(["validate", "sum_to_10", str(AGENTS / "raises_in_act.py")]) == 1
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_it_explains_an_unknown_environment_and_a_bad_agent(capsys):
    assert main(["validate", "chess", str(AGENTS / "random_agent.py")]) == 2
    assert "unknown environment 'chess'" in capsys.readouterr().err

    assert main(["validate", "sum_to_10", str(AGENTS / "missing.py")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_it_plays_a_round_robin_and_replays_a_match(tmp_path, capsys):
    players = sorted(str(path) for path in (PLAYERS / "tic_tac_toe").glob("*.py"))
    code = main(
        [
            "round-robin",
            "tic_tac_toe",
            *players,
            "--matches",
            "2",
            "--seed",
            "3",
            "--output",
            str(tmp_path),
        ]
    )
    standings = capsys.readouterr().out

    assert code == 0
    assert "rank" in standings and "minimax" in standings
    duels = sorted(tmp_path.glob("*.json"))
    assert len(duels) == 3

    page = tmp_path / "replay.html"
    assert main(["replay", str(duels[0]), "--match", "1", "--html", str(page)]) == 0
    shown = capsys.readouterr().out
    assert "step 1:" in shown and "result:" in shown
    assert "tic-tac-toe" in page.read_text()


def test_it_plays_a_round_robin_of_a_four_player_game_over_every_group_of_four(tmp_path, capsys):
    players = [str(PLAYERS / "lowest_unique" / "low_bidder.py")]
    for name in ("rando_a", "rando_b", "rando_c", "rando_d"):
        copy = tmp_path / f"{name}.py"
        copy.write_bytes((PLAYERS / "lowest_unique" / "random_player.py").read_bytes())
        players.append(str(copy))
    output = tmp_path / "duels"

    code = main(
        ["round-robin", "lowest_unique", *players, "--matches", "4", "--output", str(output)]
    )
    standings = capsys.readouterr().out

    assert code == 0
    duels = sorted(output.glob("*.json"))
    assert len(duels) == 5  # C(5, 4)
    # Each agent played 4 duels of 3 opponents each: 12 wins, draws and losses in all.
    rows = [line.split() for line in standings.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == 5
    assert all(sum(int(value) for value in row[3:6]) == 12 for row in rows)
    assert main(["replay", str(duels[0]), "--match", "2"]) == 0
    assert "Points:" in capsys.readouterr().out


def test_it_runs_as_a_module():
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "referee",
            "run",
            "sum_to_10",
            str(PLAYERS / "sum_to_10/optimal.py"),
            str(PLAYERS / "sum_to_10/random_player.py"),
            "--matches",
            "2",
            "--summary",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )

    assert completed.returncode == 0, completed.stderr
    assert "sum_to_10: optimal vs random_player" in completed.stdout


def test_output_read_only_in_part_ends_the_command_quietly():
    # ``python -m duel_runner run ... | head``: the reader closes the pipe early.
    read_end, write_end = os.pipe()
    command = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "duel_runner",
            "run",
            "sum_to_10",
            str(PLAYERS / "sum_to_10/optimal.py"),
            str(PLAYERS / "sum_to_10/random_player.py"),
            # About 95 KB of output: more than the pipe holds.
            "--matches",
            "100",
        ],
        cwd=ROOT,
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write_end)
    with os.fdopen(read_end) as output:
        first_line = output.readline()
    _, stderr = command.communicate(timeout=60)

    assert first_line == "{\n"
    assert command.returncode == 1
    assert stderr == ""


def test_it_plays_an_llm_player_and_writes_the_run_logs(tmp_path, capsys, monkeypatch):
    from llm.local_server import LocalLLMServer

    monkeypatch.setenv("ARENA_TEST_LLM_KEY", "sk-cli-secret")
    with LocalLLMServer() as server:
        code = main(
            [
                "run",
                "tic_tac_toe",
                f"llm:rule-based@{server.url}",
                f"llm:rule-based@{server.url}",
                "--llm1",
                "temperature=0",
                "--llm2",
                "temperature=1.5",
                "--llm2",
                "api_key_env=ARENA_TEST_LLM_KEY",
                "--matches",
                "4",
                "--output",
                str(tmp_path / "run"),
                "--summary",
            ]
        )
        keys = {headers.get("authorization") for headers in server.headers}
        requests = len(server.headers)
    assert code == 0
    assert "tic_tac_toe: rule-based-1 vs rule-based-2" in capsys.readouterr().out
    run = tmp_path / "run"
    results = json.loads((run / "game_results.json").read_text())
    assert [game["game"] for game in results["games"]] == [0, 1, 2, 3]
    assert all(
        game["conversation"] == f"conversations/game_{game['game']}.json"
        for game in results["games"]
    )
    game = json.loads((run / "conversations" / "game_0.json").read_text())
    assert set(game["conversations"]) == {"1", "2"}
    moves = 0
    for number, temperature in ((1, 0.0), (2, 1.5)):
        summary = json.loads((run / f"game_summary_rule-based-{number}.json").read_text())
        assert summary["games"] == 4
        assert summary["wins"] + summary["losses"] + summary["draws"] == 4
        assert summary["sampling"]["temperature"] == temperature
        # Each match's opening is the referee's: a player may have moved once in a match.
        assert summary["moves"] >= 4 and summary["median_latency_ms"] > 0
        assert summary["illegal_share"] == 0.0
        moves += summary["moves"]
    # Every move was one request to the server, and counted.
    assert moves == requests
    # The key is sent to the server, never written down.
    assert "Bearer sk-cli-secret" in keys
    assert not any("sk-cli-secret" in path.read_text() for path in run.rglob("*.json"))


def test_it_says_what_an_llm_player_looks_like(capsys):
    code = main(["run", "tic_tac_toe", "llm:no-url", str(PLAYERS / "tic_tac_toe/minimax.py")])
    assert code == 2
    assert "an LLM player is llm:MODEL@URL" in capsys.readouterr().err


def test_it_evaluates_an_agent_of_a_one_player_game(capsys):
    arguments = ["evaluate", "cartpole", str(PLAYERS / "cartpole/balancer.py"), "--seed", "2"]
    code = main([*arguments, "--episodes", "3"])
    text = capsys.readouterr().out
    same = main([*arguments, "--episodes", "3", "--json"])
    document = json.loads(capsys.readouterr().out)

    assert (code, same) == (0, 0)
    assert "mean return 500.00 (95 % interval 500.00 .. 500.00) over 3 episodes" in text
    assert "episode 3: 500 (time limit)" in text
    assert [episode["return"] for episode in document["episodes"]] == [500.0] * 3
    assert document["summary"]["mean"] == 500.0


def test_it_validates_an_agent_of_a_one_player_game_by_a_short_evaluation(capsys):
    code = main(["validate", "cartpole", str(PLAYERS / "cartpole/constant.py"), "--seed", "1"])

    assert code == 0
    assert capsys.readouterr().out.strip() == "validated: 2 episodes without a fault"


def test_it_points_to_the_command_that_fits_the_game(capsys):
    agent = str(PLAYERS / "cartpole/constant.py")

    assert main(["run", "cartpole", agent, agent]) == 2
    assert "cartpole is a one-player game: use evaluate" in capsys.readouterr().err
    assert main(["evaluate", "sum_to_10", agent]) == 2
    assert "sum_to_10 is a 2-player game: use run" in capsys.readouterr().err


def test_it_replays_an_episode_of_an_evaluation_document(capsys, tmp_path):
    agent = str(PLAYERS / "cartpole/constant.py")
    main(["evaluate", "cartpole", agent, "--episodes", "2", "--seed", "4", "--json"])
    document = json.loads(capsys.readouterr().out)
    (tmp_path / "evaluation.json").write_text(json.dumps(document))

    assert main(["replay", str(tmp_path / "evaluation.json"), "--match", "1"]) == 0
    text = capsys.readouterr().out
    episode = document["episodes"][1]
    assert f"match 1: seats ['constant'], seed {episode['seed']}" in text
    assert f"step {episode['steps']} · action 0" in text
    assert text.rstrip().endswith(f"result: return {episode['return']:g}")


def test_it_plays_a_four_player_game_with_llm_seats_and_writes_their_run_logs(tmp_path, capsys):
    from llm.local_server import LocalLLMServer

    with LocalLLMServer() as server:
        code = main(
            [
                "run",
                "lowest_unique",
                str(PLAYERS / "lowest_unique/low_bidder.py"),
                str(PLAYERS / "lowest_unique/random_player.py"),
                f"llm:rule-based@{server.url}",
                f"llm:rule-based@{server.url}",
                "--llm4",
                "temperature=1.5",
                "--matches",
                "4",
                "--output",
                str(tmp_path / "run"),
                "--summary",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0
    assert "lowest_unique: low_bidder vs random_player vs rule-based-3 vs rule-based-4" in out
    results = json.loads((tmp_path / "run" / "game_results.json").read_text())
    names = ["low_bidder", "random_player", "rule-based-3", "rule-based-4"]
    assert list(results["players"].values()) == names
    assert all(set(game["scores"]) == set(names) for game in results["games"])
    for number, temperature in ((3, None), (4, 1.5)):
        summary = json.loads(
            (tmp_path / "run" / f"game_summary_rule-based-{number}.json").read_text()
        )
        assert (summary["player"], summary["games"]) == (number, 4)
        assert summary["wins"] + summary["losses"] + summary["draws"] == 4
        if temperature is not None:
            assert summary["sampling"]["temperature"] == temperature
    assert not (tmp_path / "run" / "game_summary_low_bidder.json").exists()


def test_it_says_how_many_agents_a_game_seats(capsys):
    three = [str(PLAYERS / "connect_four/random_player.py")] * 3

    assert main(["run", "connect_four", *three]) != 0
    assert "connect_four seats 2 players; got 3 agents" in capsys.readouterr().err


def test_it_says_when_the_agents_run_unconfined(capsys, monkeypatch):
    from sandboxes import confinement

    unconfined = confinement.Confinement(None, reason="bubblewrap is not installed")
    monkeypatch.setattr(confinement, "probe", lambda: unconfined)

    assert main(["validate", "sum_to_10", str(AGENTS / "random_agent.py")]) == 0
    assert "the agents run unconfined here: bubblewrap is not installed" in capsys.readouterr().err


def test_its_summary_names_who_moved_first_as_the_game_says(capsys):
    """In OpenSpiel's chess White, who moves first, sits in the second seat: player 2 in
    match 0, where player 1 has the first seat."""
    random_player = str(PLAYERS / "openspiel" / "random_player.py")
    arguments = ["run", "openspiel:chess", random_player, random_player, "--seed", "5"]

    code = main([*arguments, "--matches", "2", "--summary"])
    shown = capsys.readouterr().out

    assert code == 0
    assert re.search(r"match +0  first: player 2 ", shown), shown
    assert re.search(r"match +1  first: player 1 ", shown), shown


def test_its_summary_says_when_everyone_moves_at_once():
    result = DuelResult(
        environment="rock_paper_scissors",
        players=["a", "b"],
        seed=1,
        matches=[
            MatchRecord(index=0, seed=1, seats=[1, 2]),
            MatchRecord(index=1, seed=2, seats=[2, 1]),
        ],
    )

    assert summary(result).count("first: all at once") == 2
