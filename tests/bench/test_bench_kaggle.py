from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# kaggle-environments is not one of Arena's dependencies (the bench runs it from a virtualenv
# of its own): a stand-in with its interface, whose matches last three moves.
FAKE_KAGGLE = """\
__version__ = "0.0-test"


class _Environment:
    def run(self, agents):
        assert agents == ["random", "random"]
        done = [{"status": "DONE"}, {"status": "DONE"}]
        return [[{"status": "ACTIVE"}] * 2] * 3 + [done]


def make(name):
    assert name == "connectx"
    return _Environment()
"""


def _bench(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.bench_kaggle", "--quick", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
    )


def test_it_measures_both_sides_and_writes_the_ratio(tmp_path):
    package = tmp_path / "site" / "kaggle_environments"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_KAGGLE)
    figures_path = tmp_path / "figures.json"

    completed = _bench(tmp_path, "--kaggle-python", sys.executable, "--json", str(figures_path))

    assert completed.returncode == 0, completed.stderr
    assert "kaggle-environments 0.0-test" in completed.stdout
    assert "x kaggle" in completed.stdout
    figures = json.loads(figures_path.read_text())
    rows = figures["rows"]
    assert rows["kaggle"]["moves_per_match"] == 3
    # Arena's duels are real: random Connect Four matches last at least 7 moves.
    assert rows["arena"]["moves_per_match"] >= 7
    assert rows["arena_short"]["moves_per_match"] >= 7
    assert rows["arena_warm"]["moves_per_match"] >= 7
    assert rows["arena_short_warm"]["moves_per_match"] >= 7
    assert rows["arena"]["over_kaggle"]["median"] > 0
    assert rows["json_floor"]["matches_per_second"]["median"] > 0
    assert figures["target_over_kaggle"] == 30


def test_it_says_how_to_get_kaggle_environments_when_it_is_missing(tmp_path):
    completed = _bench(tmp_path, "--kaggle-python", str(tmp_path / "nowhere" / "python"))

    assert completed.returncode != 0
    assert "make bench-kaggle" in completed.stderr
