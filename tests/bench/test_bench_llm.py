"""The LLM benchmark's smoke run: the rule-based server in its own process, LLM seats
against a process-sandbox player, a few LLM duels at once beside a hosted duel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_it_measures_the_harness_overhead_and_llm_duels_beside_a_hosted_duel(tmp_path):
    figures_path = tmp_path / "figures.json"

    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_llm", "--quick", "--json", str(figures_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "harness over the server's own latency" in completed.stdout
    assert "hosted duel beside the LLM duels" in completed.stdout
    figures = json.loads(figures_path.read_text())
    overhead = figures["overhead"]
    assert overhead["moves"] > 0
    assert overhead["referee_median_ms"] > 0
    assert overhead["bare_median_ms"] > 0
    [load] = figures["load"]
    assert load["llm_finished"] == load["llm_duels"] == 3
    assert load["llm_errors"] == load["llm_faults"] == load["llm_error_matches"] == 0
    assert load["alone_moves_per_s"]["median"] > 0
    assert load["together_moves_per_s"]["median"] > 0
    assert load["other_process_llm_finished"] == 3
    assert load["other_process_moves_per_s"]["median"] > 0
