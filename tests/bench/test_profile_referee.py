from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_splits_a_move_s_cpu_between_the_referee_and_the_agents():
    completed = subprocess.run(
        [sys.executable, "-m", "bench.profile_referee", "referee", "--matches", "200"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr
    split = re.search(
        r"referee ([\d.]+) µs .* both agents together (-?[\d.]+) µs", completed.stdout
    )
    assert split, completed.stdout[:2000]
    # The agents answer every move: their CPU is never nothing (before, it was read from
    # getrusage's children, which the agents are not, and came out as 0.0 or below).
    referee, agents = (float(value) for value in split.groups())
    assert referee > 0 and agents > 0, completed.stdout[:500]
