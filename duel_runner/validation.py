"""A revision's validation: self-play, whose duel is stored so that its matches can be
replayed; a one-player game's by a short evaluation (``duel_runner.evaluations``)."""

from __future__ import annotations

import contextlib
import logging

from django.db import transaction

from core.errors import ArenaError
from core.leases import worker_name
from core.local_builds import revisions_built_here
from core.models import Duel, DuelPlayer, DuelStatus, Revision, StepStatus
from core.services import (
    revision_step_begin,
    revision_step_finish,
    revision_step_give_back,
    revision_step_heartbeat,
)
from core.signals import revision_validated
from duel_runner.evaluations import revision_validate_alone
from duel_runner.services import (
    LOG_CHARS,
    RETRY_SECONDS,
    _log_local_builds,
    duel_store_result,
    environment_limits,
    revision_agent_source,
    sandbox_backend,
)
from referee.duel import validate

logger = logging.getLogger(__name__)


def revision_validate(*, revision_id: int) -> float | None:
    """Self-play the revision; store the validation duel so its matches can be replayed.

    The validation is held under a renewed lease; a worker that lost it meanwhile (the
    validation was queued again) stores nothing, neither the duel nor the outcome.
    Returns the seconds after which the task tries again when this host could not build
    the revision (the validation was queued again, see ``revision_step_give_back``).
    """
    worker = worker_name()
    revision = revision_step_begin(revision_id=revision_id, step="validation", worker=worker)
    if revision is None:
        return None
    environment = revision.competitor.environment
    with (
        revision_step_heartbeat(revision=revision, step="validation", worker=worker),
        contextlib.ExitStack() as builds,
    ):
        try:
            built = builds.enter_context(revisions_built_here([revision]))
        except ArenaError as error:
            logger.warning("%s: not validated on this host: %s", revision, error.message)
            again = revision_step_give_back(
                revision=revision, step="validation", worker=worker, problem=error.message
            )
            return RETRY_SECONDS if again else None
        _log_local_builds(built, f"validation of {revision}")
        source = revision_agent_source(revision)
        if environment.players == 1:
            # One-player games are validated by a short evaluation instead of self-play.
            if not revision_validate_alone(revision=revision, source=source, worker=worker):
                return None
            revision.refresh_from_db()
            if revision.validation_status == StepStatus.SUCCEEDED:
                revision_validated.send(sender=Revision, revision=revision)
            return None
        validation = validate(
            environment.game,
            source,
            backend=sandbox_backend(warm=False),
            matches=environment.validation_matches if environment.spec else None,
            **environment_limits(environment),
        )
        log = validation.message
        if validation.duel.player_1_log:
            log += "\n\n--- agent log (first copy) ---\n" + validation.duel.player_1_log
        with transaction.atomic():
            # The row lock keeps the lease from being taken over between the check and
            # the writes below.
            held = Revision.objects.select_for_update().filter(
                pk=revision.pk,
                validation_status=StepStatus.RUNNING,
                validation_lease_owner=worker,
            )
            if not held.exists():
                return None
            duel = Duel.objects.create(
                revision_1=revision,
                revision_2=revision,
                num_players=len(validation.duel.players),
                is_validation=True,
                num_matches=len(validation.duel.matches) or environment.validation_matches,
                seed=validation.duel.seed,
                status=DuelStatus.RUNNING,
                started_at=revision.validation_started_at,
            )
            DuelPlayer.objects.bulk_create(
                DuelPlayer(duel=duel, number=number, revision=revision)
                for number in range(3, duel.num_players + 1)
            )
            duel_store_result(duel=duel, result=validation.duel, worker=worker)
            revision_step_finish(
                revision=revision,
                step="validation",
                succeeded=validation.passed,
                error="" if validation.passed else validation.message,
                log=log[-LOG_CHARS:],
                worker=worker,
            )
    if validation.passed:
        revision_validated.send(sender=Revision, revision=revision)
    return None
