"""What each kind of job is (``POLICIES``): its task, its subject and the copy of its
status that the subject keeps, its lease and attempts, and what its messages say."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from django.conf import settings
from django.db import models

from core.models import CompetitorKind, Duel, Evaluation, Revision, StepStatus
from core.models.jobs import Job, JobKind, JobStatus

PLAY_DUEL = "duel_runner.tasks.play_duel"
PLAY_EVALUATION = "duel_runner.tasks.play_evaluation"
BUILD_REVISION = "builder.tasks.build_revision"
VALIDATE_REVISION = "duel_runner.tasks.validate_revision"
PUBLISH_REVISION = "publisher.tasks.publish_revision"


def _seat_queues(
    model: type[Duel] | type[Evaluation],
) -> Callable[[Sequence[int]], dict[int, str]]:
    """The queue of each duel or evaluation that has a seat waiting on the network (an
    online agent's, a person's, an LLM player's: ``ARENA_NETWORK_QUEUE``); the others go
    to their task's own. Two queries, however many subjects."""

    def queues(subject_ids: Sequence[int]) -> dict[int, str]:
        subjects = model.objects.filter(pk__in=subject_ids)
        networked = {
            *subjects.with_online_seat().values_list("pk", flat=True),
            *subjects.with_llm_seat().values_list("pk", flat=True),
        }
        return dict.fromkeys(networked, settings.ARENA_NETWORK_QUEUE)

    return queues


def _llm_revision_queues(subject_ids: Sequence[int]) -> dict[int, str]:
    """An LLM player's revision is validated by a request to its server: on the workers
    that reach the network (``ARENA_NETWORK_QUEUE``); the others on the task's own."""
    asking = Revision.objects.filter(pk__in=subject_ids, competitor__kind=CompetitorKind.LLM)
    return dict.fromkeys(asking.values_list("pk", flat=True), settings.ARENA_NETWORK_QUEUE)


@dataclasses.dataclass(frozen=True)
class Policy:
    """What one kind of job is: how it runs, what it is about, how long it may take."""

    #: The subject's model, and its field that keeps a copy of the job's status.
    subject: type[models.Model]
    status_field: str
    #: The Celery task (dotted path) that runs each job of this kind, by its subject's id.
    task: str
    #: The task's keyword argument that takes the subject's id.
    argument: str
    #: Settings: seconds a lease lasts without a heartbeat; claims allowed.
    lease_setting: str
    attempts_setting: str
    #: In messages: what a worker does with it, whose fault a failure is not, and what an
    #: organizer can do once it failed (with advice if it happens again).
    doing: str
    whose: str
    retry: str
    advice: str = ""
    #: The worker's ``store`` writes the subject's status with its outcome (a duel's, an
    #: evaluation's, whose status says whether it has a result); a revision's step has
    #: only the status, copied when its job is recorded. Times and errors are the job's.
    stores_status: bool = True
    #: The subject's copy of a cancelled job's status.
    cancelled: str = JobStatus.CANCELLED
    #: The kind of job about the same subject that must succeed before this one is sent
    #: (a validation waits for its build): queued meanwhile without being sent (its
    #: ``resend_at`` unset), sent when that one succeeds, cancelled when it fails or is
    #: cancelled, and queued to wait again when it is queued again.
    waits_for: str | None = None
    #: The queue of each subject's job whose queue is not its task's own (by subject id),
    #: chosen when the job is sent.
    queues: Callable[[Sequence[int]], dict[int, str]] | None = None

    @property
    def lease_seconds(self) -> int:
        return int(getattr(settings, self.lease_setting))

    @property
    def max_attempts(self) -> int:
        return int(getattr(settings, self.attempts_setting))

    def copy(self, status: str) -> str:
        """The subject's copy of ``status``."""
        return self.cancelled if status == JobStatus.CANCELLED else status


def _revision_step(
    step: str,
    *,
    task: str,
    attempts_setting: str,
    doing: str,
    retry: str,
    advice: str = "",
    waits_for: str | None = None,
    queues: Callable[[Sequence[int]], dict[int, str]] | None = None,
) -> Policy:
    """A step of a revision's pipeline: the revision keeps its status (``<step>_status``)."""
    return Policy(
        subject=Revision,
        status_field=f"{step}_status",
        task=task,
        argument="revision_id",
        lease_setting="ARENA_REVISION_LEASE_SECONDS",
        attempts_setting=attempts_setting,
        doing=doing,
        whose="your upload's",
        retry=retry,
        advice=advice,
        stores_status=False,
        cancelled=StepStatus.NONE,
        waits_for=waits_for,
        queues=queues,
    )


def _seated_play(
    subject: type[Duel] | type[Evaluation], *, task: str, whose: str, retry: str
) -> Policy:
    """Agents playing in seats (a duel, an evaluation): the subject keeps its own status
    and outcome, and shares the duels' lease and attempts."""
    name = subject._meta.model_name
    return Policy(
        subject=subject,
        status_field="status",
        task=task,
        queues=_seat_queues(subject),
        argument=f"{name}_id",
        lease_setting="ARENA_DUEL_LEASE_SECONDS",
        attempts_setting="ARENA_DUEL_MAX_ATTEMPTS",
        doing=f"playing this {name}",
        whose=whose,
        retry=retry,
    )


POLICIES: dict[str, Policy] = {
    JobKind.BUILD: _revision_step(
        "build",
        task=BUILD_REVISION,
        attempts_setting="ARENA_REVISION_MAX_ATTEMPTS",
        doing="building this revision",
        retry="rebuild it from the admin",
        advice="If it happens again, the build may need more memory or time than a worker "
        "has (large dependencies?).",
    ),
    JobKind.VALIDATION: _revision_step(
        "validation",
        task=VALIDATE_REVISION,
        attempts_setting="ARENA_REVISION_MAX_ATTEMPTS",
        doing="validating this revision",
        retry="re-validate it from the admin",
        advice="If it happens again, your agent may use more memory or CPU than a worker "
        "can give it.",
        waits_for=JobKind.BUILD,
        queues=_llm_revision_queues,
    ),
    JobKind.PUBLICATION: _revision_step(
        "publication",
        task=PUBLISH_REVISION,
        attempts_setting="ARENA_PUBLICATION_MAX_ATTEMPTS",
        doing="publishing this revision",
        retry="publish it again from the admin",
    ),
    JobKind.DUEL: _seated_play(
        Duel,
        task=PLAY_DUEL,
        whose="the agents'",
        retry="re-run it from the admin",
    ),
    JobKind.EVALUATION: _seated_play(
        Evaluation,
        task=PLAY_EVALUATION,
        whose="the agent's",
        retry="re-run the competition's failed evaluations from the admin",
    ),
}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a worker's job ended, as ``job_record`` stores it."""

    succeeded: bool
    error: str = ""
    log: str = ""


def backoff(first: float, tries: int) -> float:
    """The wait before the next try, after ``tries`` tries: ``first``, doubled each time."""
    return first * 2**tries


def policy_of(job: Job) -> Policy:
    return POLICIES[job.kind]
