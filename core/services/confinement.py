"""Whether this machine confines the agents Arena runs, and what follows when it cannot.

The docker sandbox always confines. The process sandbox confines where bubblewrap can
(``sandboxes.confinement.probe``: root, or user namespaces for others); where it cannot, an
agent could read every file of the machine that its user may, so Arena says so at start
(a system check, printed by ``migrate``, ``runserver``, ``check`` and the demo; the
admin's home) and refuses uploads from anyone but organizers, with the reason, unless the
operator accepts it knowingly (``ARENA_ALLOW_UNCONFINED_AGENTS``); and a worker that
cannot confine agents plays no code but organizers' (``unconfined_refusal``: the duel or
validation is then the platform's failure, never scored). Nothing falls back in silence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core import checks

from core.errors import ArenaError
from core.models import Revision, User
from sandboxes.confinement import probe


@dataclasses.dataclass(frozen=True)
class AgentsConfinement:
    #: Agents see their own files and runtime only.
    confined: bool
    #: Why they are not ("" when they are), with what to do about it.
    reason: str = ""

    @property
    def accepted(self) -> bool:
        """Unconfined agents are accepted from anyone (the operator said so)."""
        return self.confined or settings.ARENA_ALLOW_UNCONFINED_AGENTS

    def warning(self) -> str:
        """What an operator or organizer is told ("" when agents are confined)."""
        if self.confined:
            return ""
        consequence = (
            "uploads from everyone are accepted (ARENA_ALLOW_UNCONFINED_AGENTS is set)"
            if self.accepted
            else "uploads from people other than organizers are refused (set "
            "ARENA_ALLOW_UNCONFINED_AGENTS=true to accept them knowingly)"
        )
        return f"Agents are not confined on this machine: {self.reason}. So {consequence}."


def agents_confinement() -> AgentsConfinement:
    """This machine's confinement of the sandbox in the settings (probed once per process)."""
    if settings.ARENA_SANDBOX == "docker":
        return AgentsConfinement(True)
    found = probe()
    return AgentsConfinement(found.confined, found.reason)


class AgentsUnconfined(ArenaError):
    """A worker that cannot confine agents was asked to run code it may not run so."""


def may_run_unconfined(revision: Revision) -> bool:
    """Whether ``revision``'s code may run where agents are not confined: the operator
    accepts it knowingly, or an organizer uploaded it. The workers ask this before every
    duel, evaluation and validation, whatever the site accepted when it was uploaded (on
    another machine, or before this one lost its confinement)."""
    if settings.ARENA_ALLOW_UNCONFINED_AGENTS:
        return True
    uploader = revision.uploaded_by
    return uploader is not None and uploader.is_organizer


def unconfined_refusal(revisions: Iterable[Revision], *, reason: str) -> None:
    """Raises AgentsUnconfined when one of ``revisions`` may not run unconfined (this
    worker's sandbox cannot confine agents, for ``reason``)."""
    for revision in revisions:
        if not may_run_unconfined(revision):
            raise AgentsUnconfined(
                f"this worker cannot confine agents ({reason}), and {revision} was not "
                "uploaded by an organizer: it runs once the sandbox confines agents again "
                "(or with ARENA_ALLOW_UNCONFINED_AGENTS=true, knowingly)"
            )


def upload_refusal(user: User) -> str:
    """Why ``user``'s code may not be uploaded here ("" when it may)."""
    if user.is_organizer:
        return ""
    confinement = agents_confinement()
    if confinement.accepted:
        return ""
    # The operator's details (sysctls, packages) are for the admin's home and the logs.
    return (
        "this Arena cannot confine agents yet, so it accepts uploads from organizers only: "
        "ask them to fix the sandbox"
    )


def check_confinement(**kwargs: Any) -> list[checks.CheckMessage]:
    """A system check: printed by ``migrate``, ``runserver``, ``check`` and the demo."""
    warning = agents_confinement().warning()
    return [checks.Warning(warning, id="arena.W001")] if warning else []
