from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Length
from django.urls import reverse
from django.utils import timezone

if TYPE_CHECKING:
    from core.models.accounts import User
    from core.models.jobs import Job


class Environment(models.Model):
    """A game, copied from ``environments/<name>/info.yml`` by ``import_environments``,
    or an OpenSpiel game an organizer added in the admin by its ``spec``.

    For a built-in game the files stay the source of truth for limits; this copy is for
    browsing and for relations. An OpenSpiel game has no file: its row's limits are the
    ones its duels are played with.
    """

    name = models.SlugField(max_length=64, unique=True)
    #: The OpenSpiel game spec (``openspiel:go(board_size=9)``), written one way; empty
    #: for a built-in game, which its folder's ``name`` names.
    spec = models.CharField(max_length=200, blank=True, default="")
    title = models.CharField(max_length=120)
    description = models.TextField()
    rules = models.TextField()
    players = models.PositiveSmallIntegerField()
    matches_per_duel = models.PositiveIntegerField()
    #: A ladder's duels are short, so that its matchmaking chooses often.
    ladder_matches_per_duel = models.PositiveIntegerField(default=2)
    validation_matches = models.PositiveIntegerField()
    move_time = models.FloatField()
    time_bank = models.FloatField()
    startup_time = models.FloatField()
    memory_mb = models.PositiveIntegerField()
    cpu_seconds = models.PositiveIntegerField()
    is_active = models.BooleanField(default=True)
    standing_competition = models.BooleanField(
        default=True,
        help_text=(
            "Arena keeps a competition of this game open by itself, in which every "
            "validated revision is rated without anyone acting: a ladder for a game of two "
            "or more players, a score competition for a one-player game. It plays when "
            "organizers' tournaments leave the workers idle. Untick to close it."
        ),
    )
    #: What the published leaderboard was fitted to (rated matches and current revisions,
    #: hashed), when, and the first mover's advantage it found (Elo points).
    leaderboard_key = models.CharField(max_length=64, blank=True, editable=False)
    leaderboard_fitted_at = models.DateTimeField(null=True, blank=True, editable=False)
    first_move_advantage = models.FloatField(null=True, blank=True, editable=False)
    #: How long the last refit took: the next one waits ten times as long at least.
    leaderboard_fit_seconds = models.FloatField(default=0, editable=False)
    #: Counts the resets of its ratings: the leaderboard reads only the rated pairings
    #: (``RatedPairing``) of the current one.
    ratings_epoch = models.PositiveIntegerField(default=0, editable=False)
    imported_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title"]
        constraints = [
            models.UniqueConstraint(
                fields=["spec"], condition=~Q(spec=""), name="environment_spec_unique"
            )
        ]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("environment", args=[self.name])

    @property
    def game(self) -> str:
        """What the referee and ``environments.registry`` know the game by."""
        return self.spec or self.name


class CompetitorKind(models.TextChoices):
    """Where a competitor's agent runs."""

    #: Uploaded code, built and run by Arena in its sandbox.
    HOSTED = "hosted", "Hosted (uploaded code)"
    #: A client that connects over the network with a model token; nothing is uploaded.
    ONLINE = "online", "Online (connects over the network)"
    #: A model behind an OpenAI-compatible server, played by Arena's harness (``llm``).
    LLM = "llm", "LLM player (a model behind an OpenAI-compatible server)"
    #: A person playing in the browser: a remote seat driven by the site (``core.services.human``).
    HUMAN = "human", "Human (plays in the browser)"


#: Every competitor starts private, an upload, an LLM player and an online model alike:
#: nothing of how it plays (code, model and settings, its page) is shown until its owner
#: makes it public. Its name, results and replays in public tournaments and on the
#: leaderboard show either way.
PUBLIC_BY_DEFAULT = False


class DisabledBy(models.TextChoices):
    OWNER = "owner", "its owner"
    ORGANIZERS = "organizers", "the organizers"


class CompetitorQuerySet(models.QuerySet["Competitor"]):
    def listed(self) -> CompetitorQuerySet:
        """Competitors as lists show them: a person's seat in the browser is not one (the
        person is shown by name in their games, listed on "My games")."""
        return self.exclude(kind=CompetitorKind.HUMAN)

    def managed_by(self, user: User) -> CompetitorQuerySet:
        """Those ``user`` manages: their own, and their teams' (``Competitor.is_managed_by``)."""
        return self.filter(managers(user))


def managers(user: User, path: str = "") -> Q:
    """The condition ``Competitor.is_managed_by`` checks, on the competitors reached
    through ``path`` ("" for the competitor itself, else a relation ending at one). A
    person is in one team per competition, so it matches a competitor once."""
    prefix = f"{path}__" if path else ""
    return Q(**{f"{prefix}owner": user}) | Q(**{f"{prefix}team__memberships__user": user})


class Competitor(models.Model):
    """An agent entered in one environment by its owner: uploads make the revisions of a
    hosted one; an online one plays over the network; an LLM player is a model that
    Arena's harness prompts (``core.models.llm``)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="competitors"
    )
    environment = models.ForeignKey(
        Environment, on_delete=models.PROTECT, related_name="competitors"
    )
    name = models.SlugField(max_length=64)
    is_public = models.BooleanField(
        default=PUBLIC_BY_DEFAULT,
        help_text="Anyone may see a public competitor's page, and an upload's code.",
    )
    #: Off by default: an agent's log may say more about how it plays than its owner wants.
    share_logs = models.BooleanField(
        default=False,
        help_text="Once a duel is over, anyone may read its agent's logs: the duel's, and "
        "at each move in the replays (while the competitor is public).",
    )
    #: Out of play: it leaves every ladder, takes no upload and joins no tournament, while
    #: everything it played stays (``core.services.competitors``).
    is_disabled = models.BooleanField(default=False)
    #: Who disabled it: its owner may enable it again, not one the organizers disabled.
    disabled_by = models.CharField(max_length=10, choices=DisabledBy.choices, blank=True)
    kind = models.CharField(
        max_length=8, choices=CompetitorKind.choices, default=CompetitorKind.HOSTED
    )
    #: Entered in a competition by this team, whose members all manage it (upload, logs,
    #: settings) as its owner does; the competition's rules bind its uploads.
    team = models.ForeignKey(
        "core.Team",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="competitors",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CompetitorQuerySet.as_manager()

    class Meta:
        ordering = ["environment", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["environment", "name"], name="competitor_name_unique_per_environment"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.environment.name})"

    def get_absolute_url(self) -> str:
        return reverse("competitor", args=[self.environment.name, self.name])

    def is_managed_by(self, user: User) -> bool:
        """Its owner, and every member of its team, may upload its versions, read its
        private logs and change it."""
        if self.owner_id == user.pk:
            return True
        return self.team is not None and self.team.memberships.filter(user=user).exists()

    @property
    def disabled_message(self) -> str:
        """Why it does not play, for a refusal: who disabled it and how it comes back."""
        if self.disabled_by == DisabledBy.OWNER:
            return f"competitor {self.name} is disabled by its owner: enable it on its page first"
        return f"competitor {self.name} is disabled by the organizers"

    @property
    def is_online(self) -> bool:
        return self.kind == CompetitorKind.ONLINE

    @property
    def is_human(self) -> bool:
        return self.kind == CompetitorKind.HUMAN

    @property
    def has_seat(self) -> bool:
        """Plays through a remote seat on the seat bus: an online agent or a human."""
        return self.kind in (CompetitorKind.ONLINE, CompetitorKind.HUMAN)

    @property
    def is_llm(self) -> bool:
        return self.kind == CompetitorKind.LLM

    @property
    def is_hosted(self) -> bool:
        """Its revisions are uploads, built and validated by Arena."""
        return self.kind == CompetitorKind.HOSTED

    @property
    def seat(self) -> str:
        """An online competitor's key on the seat bus (``sandboxes.seat_bus``)."""
        return f"competitor-{self.pk}"

    def seat_in(self, duel_id: int) -> str:
        """Its key on the seat bus in duel ``duel_id``. A person has a seat per game, so
        that two games at once (two tabs) never see or answer each other's requests; an
        online agent keeps one seat, which its client holds across duels."""
        return f"{self.seat}-duel-{duel_id}" if self.is_human else self.seat


class StepStatus(models.TextChoices):
    """One step of a revision's pipeline (build, validation, publication): a copy of its
    job's status. None when nothing is to be done: never asked for (a publication), or
    its job was cancelled (the validation of a failed build, a publication no longer
    wanted); an online agent's, LLM player's or person's build and validation succeed at
    once, with nothing to do."""

    NONE = "none", "Not requested"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


def _revision_upload_path(revision: Revision, filename: str) -> str:
    competitor = revision.competitor
    return (
        f"revisions/{competitor.environment.name}/{competitor.name}/v{revision.version}/{filename}"
    )


class UploadContent(models.Model):
    """The bytes of an upload, stored once per content and named by their SHA-256.

    In the database rather than only on the media volume, so that every worker host reads
    them: the control machine's volume is not shared, and uploads are small
    (``ARENA_UPLOAD_MAX_BYTES``, 10 MiB). Revisions with the same upload share a row; it
    goes when the last of them is deleted (``core.services.uploads.upload_content_release``).
    """

    sha256 = models.CharField(max_length=64, primary_key=True)
    content = models.BinaryField()
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(size=Length("content")), name="upload_content_size_matches"
            ),
        ]

    def __str__(self) -> str:
        return f"upload {self.sha256[:12]} ({self.size:,} bytes)"


#: A revision's steps, each a job (``core.models.jobs``) whose status the revision keeps a
#: copy of in ``<step>_status``: its pages and queries filter on it.
STEPS = ("build", "validation", "publication")


def resend_at_default() -> datetime:
    """When queued work whose message went to the broker now is sent again if still queued."""
    return timezone.now() + timedelta(seconds=settings.ARENA_RESEND_AFTER_SECONDS)


def _step_constraint(step: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(**{f"{step}_status__in": StepStatus.values}),
        name=f"revision_{step}_status_valid",
    )


class RevisionQuerySet(models.QuerySet["Revision"]):
    def validated(self) -> RevisionQuerySet:
        """Ready to play in tournaments and ladders, and to be played: a human's seat is
        none of these (its games are unrated, outside any competition)."""
        return self.filter(
            build_status=StepStatus.SUCCEEDED,
            validation_status=StepStatus.SUCCEEDED,
            is_disabled=False,
            competitor__is_disabled=False,
        ).exclude(competitor__kind=CompetitorKind.HUMAN)


class Revision(models.Model):
    """One upload of a competitor. Its build, validation and publication are jobs
    (``Revision.job``); it keeps their status and what the build made (``image``)."""

    competitor = models.ForeignKey(Competitor, on_delete=models.CASCADE, related_name="revisions")
    #: 1, 2, 3... per competitor, allocated under a row lock on the competitor.
    version = models.PositiveIntegerField()
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.FileField(upload_to=_revision_upload_path, max_length=300)
    #: The upload's bytes, which every host reads (builds, duels, downloads, publication);
    #: ``source`` keeps the same bytes on the control machine's media volume, as before.
    #: Empty for online and LLM players.
    upload = models.ForeignKey(
        UploadContent,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="revisions",
        editable=False,
    )
    #: The name the upload had (``agent.py`` or ``bot.zip``).
    filename = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    #: Path inside the upload that starts the agent (``main.py``, ``agent.py``, ``agent``).
    entry_point = models.CharField(max_length=200)
    has_requirements = models.BooleanField(default=False)
    #: The docker sandbox's image of this revision (its files and dependencies), made by
    #: its last successful build; empty for the process sandbox.
    image = models.CharField(max_length=200, blank=True)
    is_disabled = models.BooleanField(default=False)
    #: Marked final by its team for its competition's final tournament (``Competition.
    #: final_submissions`` at most per team, one per competitor).
    marked_final_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    build_status = models.CharField(
        max_length=16, choices=StepStatus.choices, default=StepStatus.QUEUED
    )

    validation_status = models.CharField(
        max_length=16, choices=StepStatus.choices, default=StepStatus.QUEUED
    )

    publication_status = models.CharField(
        max_length=16, choices=StepStatus.choices, default=StepStatus.NONE
    )

    objects = RevisionQuerySet.as_manager()

    class Meta:
        ordering = ["competitor", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["competitor", "version"], name="revision_version_unique"
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="revision_version_positive"),
            models.CheckConstraint(
                condition=Q(upload__isnull=True) | Q(upload=F("sha256")),
                name="revision_upload_matches_sha256",
            ),
            *[_step_constraint(step) for step in STEPS],
        ]

    def __str__(self) -> str:
        if self.competitor.is_human:
            # A person is shown as the person, not as the seat that carries their moves.
            return self.competitor.owner.display_name or "A person"
        return f"{self.competitor.name} v{self.version}"

    def get_absolute_url(self) -> str:
        competitor = self.competitor
        return reverse(
            "revision", args=[competitor.environment.name, competitor.name, self.version]
        )

    @property
    def build_dir(self) -> Path:
        """Where the builder unpacks this revision and duels start it from."""
        return Path(settings.ARENA_BUILD_ROOT) / f"revision-{self.pk}"

    @property
    def is_valid(self) -> bool:
        return (
            self.build_status == StepStatus.SUCCEEDED
            and self.validation_status == StepStatus.SUCCEEDED
            and not self.is_disabled
        )

    @property
    def is_being_checked(self) -> bool:
        """Its build or validation is queued or running (a worker has it to do)."""
        pending = {StepStatus.QUEUED, StepStatus.RUNNING}
        return self.build_status in pending or self.validation_status in pending

    def job(self, step: str) -> Job | None:
        """The job of ``step`` (build, validation, publication): from the revision's
        prefetched ``jobs`` when they were prefetched, else one query. None when the step
        was never asked for (a publication)."""
        return next((job for job in self.jobs.all() if job.kind == step), None)
