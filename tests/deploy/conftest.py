"""The production stack of a fresh clone, started once for the session when a test here
asks for it (``tests.support.compose_stack``)."""

from __future__ import annotations

from tests.support.compose_stack import compose_stack, compose_stack_session  # noqa: F401
