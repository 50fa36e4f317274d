"""The command line starts quickly: what a player runs after every edit of their agent
imports no LLM client unless an LLM seat plays (``openai`` alone took half a second)."""

from __future__ import annotations

from tests.support.imports import imported_after

HEAVY = ("openai", "httpx2", "llm.harness", "llm.provider")


def test_the_command_line_imports_no_llm_client_for_a_duel_of_programs():
    assert imported_after("import referee.cli", HEAVY) == []


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
    assert "llm.harness" in imported_after(started, HEAVY)
