"""The command line starts quickly: what a player runs after every edit of their agent
imports no LLM client unless an LLM seat plays (``openai`` alone took half a second)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("openai", "httpx2", "llm.harness", "llm.provider")


def imported_after(code: str) -> list[str]:
    """Which of ``HEAVY`` a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_the_command_line_imports_no_llm_client_for_a_duel_of_programs():
    assert imported_after("import referee.cli") == []


def test_an_llm_seat_imports_it_when_it_starts():
    started = """
from llm.config import LLMConfig
from sandboxes.base import AgentSource, SandboxError, SandboxLimits
from sandboxes.llm import LLMSandbox
sandbox = LLMSandbox(LLMConfig(model="rule-based", base_url="http://127.0.0.1:9/v1"))
try:
    sandbox.start(AgentSource.llm("model"), limits=SandboxLimits(), label="p1").close()
except SandboxError:
    pass
"""
    assert "llm.harness" in imported_after(started)
