"""A revision's validation: self-play, whose duel is stored so that its matches can be
replayed; a one-player game's by a short evaluation (``duel_runner.evaluations``)."""

from __future__ import annotations

import logging

from django.utils import timezone

from core.errors import ArenaError
from core.jobs.policies import Outcome
from core.jobs.signals import revision_validated
from core.jobs.worker import Claimed, Done, GiveBack, job_run
from core.models import Duel, DuelStatus, JobKind, Revision
from duel_runner.evaluations import revision_validate_alone
from duel_runner.services import (
    LOG_CHARS,
    duel_store_result,
    environment_limits,
    hosted_backend,
    revision_agent_source,
)
from llm.probe import probe
from referee.validation import validate

logger = logging.getLogger(__name__)


def revision_validate(*, revision_id: int) -> None:
    """The validation job (``core.jobs.worker.job_run``): self-play the revision and store
    the validation duel so its matches can be replayed. A host that cannot build the
    revision, or cannot confine its agents, gives it back (never the revision's fault)."""
    job_run(kind=JobKind.VALIDATION, subject_id=revision_id, work=_validation_work)


def _validation_work(claimed: Claimed) -> Done:
    revision = Revision.objects.select_related("competitor__environment").get(
        pk=claimed.job.subject_id
    )
    environment = revision.competitor.environment
    if revision.competitor.is_llm:
        return _llm_validation(revision)
    claimed.hold_builds([revision], what=f"validation of {revision}")
    try:
        # Agents this worker cannot confine: given back too, never the revision's fault.
        backend = hosted_backend([revision], warm=False)
    except ArenaError as error:
        raise GiveBack(error.message) from error
    source = revision_agent_source(revision)
    if environment.players == 1:
        # One-player games are validated by a short evaluation instead of self-play.
        done, passed = revision_validate_alone(
            claimed=claimed, revision=revision, source=source, backend=backend
        )
        return _announced(done, revision, passed=passed)
    validation = validate(
        environment.game,
        source,
        backend=backend,
        matches=environment.validation_matches if environment.spec else None,
        **environment_limits(environment),
    )
    log = validation.message
    first_copy = validation.duel.logs[0]
    if first_copy:
        log += "\n\n--- agent log (first copy) ---\n" + first_copy

    def store() -> Outcome:
        duel = Duel.objects.seated(
            [revision] * len(validation.duel.players),
            environment=environment,
            is_validation=True,
            num_matches=len(validation.duel.matches) or environment.validation_matches,
            seed=validation.duel.seed,
            status=DuelStatus.RUNNING,
            # Its own times: it has no job (``Duel.played``).
            started_at=claimed.job.started_at,
            ended_at=timezone.now(),
        )
        duel_store_result(duel=duel, result=validation.duel, worker=claimed.worker)
        return Outcome(
            succeeded=validation.passed,
            error="" if validation.passed else validation.message,
            log=log[-LOG_CHARS:],
        )

    return _announced(Done(store=store), revision, passed=validation.passed)


def _llm_validation(revision: Revision) -> Done:
    """An LLM player's validation: one real request to its server, the game's first move,
    with the clock of a duel's first move (``llm.probe``); self-play would spend its tokens
    for nothing. A server that cannot play (unreachable, refusing, silent) fails it, with
    its own words, and the player does not play until it validates again."""
    environment = revision.competitor.environment
    try:
        config = revision.competitor.llm.config()
    except ArenaError as error:
        outcome = Outcome(succeeded=False, error=error.message, log=error.message)
        return _announced(Done(store=lambda: outcome), revision, passed=False)
    result = probe(
        config,
        environment.game,
        seconds=environment.move_time + environment.time_bank,
        players=environment.players,
    )
    log = (
        "An LLM player: validated by one request to its server (the first move of a "
        f"match), not by self-play.\n{result.message}"
    )
    outcome = Outcome(
        succeeded=result.passed, error="" if result.passed else result.message, log=log
    )
    return _announced(Done(store=lambda: outcome), revision, passed=result.passed)


def _announced(done: Done, revision: Revision, *, passed: bool) -> Done:
    """``done``, telling the other apps once it was recorded that the revision passed."""

    def announce() -> None:
        if passed:
            revision.refresh_from_db()
            revision_validated.send(sender=Revision, revision=revision)

    return Done(store=done.store, then=announce)
