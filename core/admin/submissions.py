"""The admin of competitors and their revisions (uploads with their build, validation and
publication): rebuild, re-validate, make public and publish, disable, and a new tournament
of the selected revisions."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets
from django.db.models import Count, Exists, OuterRef, Prefetch, QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html

from core.admin.base import (
    EMPTY,
    ArenaAdmin,
    ReadOnlyInline,
    admin_changelist_link,
    admin_link,
    preformatted,
    public_link,
    seconds,
    status_badge,
)
from core.admin.jobs import job_summary
from core.errors import ArenaError
from core.models import Competitor, DisabledBy, Duel, Revision, StepStatus
from core.services.competitors import (
    competitor_disable,
    competitor_enable,
    competitor_set_public,
)
from core.services.publication import (
    revision_publication_problem,
    revision_republish,
)
from core.services.revisions import revision_rebuild, revision_revalidate


def _steps_summary(revision: Revision) -> str:
    return format_html(
        "{} / {}",
        status_badge(revision.build_status, f"build {revision.get_build_status_display()}"),
        status_badge(
            revision.validation_status,
            f"validation {revision.get_validation_status_display()}",
        ),
    )


class RevisionInline(ReadOnlyInline):
    model = Revision
    fields = ("version", "steps", "is_disabled", "size", "created_at")
    ordering = ("-version",)

    @admin.display(description="status")
    def steps(self, revision: Revision) -> str:
        return _steps_summary(revision)


@admin.register(Competitor)
class CompetitorAdmin(ArenaAdmin):
    can_add = False  # competitors are made by uploads
    list_display = (
        "name",
        "environment",
        "owner_link",
        "kind",
        "is_public",
        "share_logs",
        "is_disabled",
        "revision_count",
        "latest",
        "rating_link",
        "created_at",
        "public",
    )
    list_filter = ("environment", "kind", "is_public", "share_logs", "is_disabled")
    search_fields = ("name", "owner__email", "owner__display_name", "owner__team")
    list_select_related = ("environment", "owner", "rating")
    readonly_fields = (
        "name",
        "environment",
        "owner_link",
        "kind",
        "llm_link",
        "rating_link",
        "created_at",
        # Its owner's choice (the competitor page, the API), shown here.
        "share_logs",
        # Set with the disabled box (or the actions): the organizers, here.
        "disabled_by",
    )
    fields = (
        "name",
        "environment",
        "owner_link",
        "kind",
        "llm_link",
        "is_public",
        "share_logs",
        "is_disabled",
        "disabled_by",
        "rating_link",
        "created_at",
    )
    inlines = (RevisionInline,)
    actions = ("disable", "enable", "make_public", "make_private")

    def save_model(self, request: HttpRequest, obj: Competitor, form: Any, change: bool) -> None:
        """The disabled box ticked here is the organizers' disabling (its owner cannot undo
        it); cleared, the competitor is enabled whoever disabled it."""
        if "is_disabled" in form.changed_data:
            disabled = obj.is_disabled
            obj.is_disabled = not disabled  # as stored, for the service to change
            super().save_model(request, obj, form, change)
            if disabled:
                competitor_disable(competitor=obj, by=DisabledBy.ORGANIZERS)
            else:
                competitor_enable(competitor=obj, by=DisabledBy.ORGANIZERS)
            return
        super().save_model(request, obj, form, change)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Competitor]:
        # Each competitor's newest revision, read with the page's rows (one query).
        newer = Revision.objects.filter(
            competitor=OuterRef("competitor"), version__gt=OuterRef("version")
        )
        latest = Prefetch(
            "revisions", Revision.objects.filter(~Exists(newer)), to_attr="latest_revisions"
        )
        return (
            super()
            .get_queryset(request)
            .annotate(revisions_count=Count("revisions"))
            .prefetch_related(latest)
        )

    @admin.display(description="owner", ordering="owner__email")
    def owner_link(self, competitor: Competitor) -> str:
        return admin_link(competitor.owner, competitor.owner.email)

    @admin.display(description="revisions", ordering="revisions_count")
    def revision_count(self, competitor: Competitor) -> str:
        count = competitor.revisions_count  # type: ignore[attr-defined]
        return admin_changelist_link(Revision, str(count), competitor__id__exact=competitor.pk)

    @admin.display(description="latest revision")
    def latest(self, competitor: Competitor) -> str:
        latest = getattr(competitor, "latest_revisions", None)
        revision = latest[0] if latest else None
        if revision is None:
            return EMPTY
        return format_html(
            "{} {}", admin_link(revision, f"v{revision.version}"), _steps_summary(revision)
        )

    @admin.display(description="LLM settings")
    def llm_link(self, competitor: Competitor) -> str:
        player = getattr(competitor, "llm", None) if competitor.is_llm else None
        return admin_link(player, f"{player.model} at {player.base_url}") if player else EMPTY

    @admin.display(description="rating")
    def rating_link(self, competitor: Competitor) -> str:
        rating = getattr(competitor, "rating", None)
        if rating is None:
            return EMPTY
        return admin_link(rating, f"{rating.mu:.1f} ± {rating.sigma:.1f} ({rating.games} games)")

    @admin.display(description="public page")
    def public(self, competitor: Competitor) -> str:
        return public_link(competitor)

    @admin.action(description="Disable (out of every ladder, no new uploads or tournaments)")
    def disable(self, request: HttpRequest, queryset: QuerySet[Competitor]) -> None:
        competitors = list(queryset)
        for competitor in competitors:
            competitor_disable(competitor=competitor, by=DisabledBy.ORGANIZERS)
        self.message_user(
            request,
            f"{len(competitors)} competitor(s) disabled; their owners cannot enable them.",
            messages.SUCCESS,
        )

    @admin.action(description="Enable")
    def enable(self, request: HttpRequest, queryset: QuerySet[Competitor]) -> None:
        competitors = list(queryset)
        for competitor in competitors:
            competitor_enable(competitor=competitor, by=DisabledBy.ORGANIZERS)
        self.message_user(request, f"{len(competitors)} competitor(s) enabled.", messages.SUCCESS)

    @admin.action(description="Make public (code visible to everyone, and published)")
    def make_public(self, request: HttpRequest, queryset: QuerySet[Competitor]) -> None:
        competitors = list(queryset)
        # Their newest validated revisions go to the publication repository, if configured.
        queued = [
            competitor_set_public(competitor=competitor, is_public=True)
            for competitor in competitors
        ]
        self.message_user(
            request, f"{len(competitors)} competitor(s) are public.", messages.SUCCESS
        )
        published = [str(revision) for revision in queued if revision is not None]
        if published:
            names = ", ".join(published)
            self.message_user(request, f"Queued for publication: {names}.", messages.SUCCESS)

    @admin.action(description="Make private")
    def make_private(self, request: HttpRequest, queryset: QuerySet[Competitor]) -> None:
        competitors = list(queryset)
        for competitor in competitors:
            competitor_set_public(competitor=competitor, is_public=False)
        self.message_user(
            request, f"{len(competitors)} competitor(s) are private.", messages.SUCCESS
        )


def _busy(revision: Revision, *steps: str) -> str:
    """Why a rebuild or re-validation did not act: the step already queued or running."""
    for step in steps:
        status = getattr(revision, f"{step}_status")
        if status == StepStatus.QUEUED:
            return f"its {step} is already queued"
        if status == StepStatus.RUNNING:
            return f"its {step} is already running; wait for it to finish"
    return "another organizer changed it at the same time; look again"


def _step_fields(step: str) -> tuple[str, ...]:
    return (
        f"{step}_status_badge",
        f"{step}_job",
        f"{step}_times",
        f"{step}_error_text",
        f"{step}_log_text",
    )


def _step_display(step: str) -> tuple[Any, Any, Any, Any, Any]:
    """The read-only rows of one step, from its job: status, job (attempts, re-sends,
    lease), times, error, log."""

    @admin.display(description="status", ordering=f"{step}_status")
    def badge(self: Any, revision: Revision) -> str:
        value = getattr(revision, f"{step}_status")
        return status_badge(value, getattr(revision, f"get_{step}_status_display")())

    @admin.display(description="job")
    def job(self: Any, revision: Revision) -> str:
        return job_summary(revision.job(step))

    @admin.display(description="times")
    def times(self: Any, revision: Revision) -> str:
        job = revision.job(step)
        if job is None or job.started_at is None:
            return EMPTY
        started = timezone.localtime(job.started_at).strftime("%Y-%m-%d %H:%M:%S")
        if job.ended_at is None:
            return f"started {started}"
        return f"started {started}, took {seconds(job.duration)}"

    @admin.display(description="error")
    def error(self: Any, revision: Revision) -> str:
        job = revision.job(step)
        return preformatted(job.error if job else "")

    @admin.display(description="log")
    def log(self: Any, revision: Revision) -> str:
        job = revision.job(step)
        return preformatted(job.log if job else "")

    return badge, job, times, error, log


@admin.register(Revision)
class RevisionAdmin(ArenaAdmin):
    can_add = False  # revisions are uploads
    list_display = (
        "__str__",
        "competitor_link",
        "environment",
        "build_status_badge",
        "validation_status_badge",
        "publication_status_badge",
        "attempts",
        "is_disabled",
        "size",
        "created_at",
        "public",
    )
    list_filter = (
        "build_status",
        "validation_status",
        "publication_status",
        "is_disabled",
        "competitor__environment",
    )
    search_fields = (
        "competitor__name",
        "competitor__owner__email",
        "competitor__owner__display_name",
        "filename",
        "sha256",
    )
    list_select_related = ("competitor__environment", "competitor__owner")
    date_hierarchy = "created_at"
    fieldsets = (
        (
            "Upload",
            {
                "fields": (
                    "competitor_link",
                    "version",
                    "uploaded_by_link",
                    "source_link",
                    "filename",
                    "sha256",
                    "size",
                    "entry_point",
                    "has_requirements",
                    "is_disabled",
                    "created_at",
                )
            },
        ),
        ("Build", {"fields": ("image", *_step_fields("build"))}),
        ("Validation", {"fields": ("validation_duel", *_step_fields("validation"))}),
        ("Publication", {"classes": ("collapse",), "fields": _step_fields("publication")}),
    )
    readonly_fields = tuple(
        field for field in flatten_fieldsets(fieldsets) if field != "is_disabled"
    )
    actions = ("rebuild", "revalidate", "republish", "disable", "enable", "create_tournament")

    build_status_badge, build_job, build_times, build_error_text, build_log_text = _step_display(
        "build"
    )
    (
        validation_status_badge,
        validation_job,
        validation_times,
        validation_error_text,
        validation_log_text,
    ) = _step_display("validation")
    (
        publication_status_badge,
        publication_job,
        publication_times,
        publication_error_text,
        publication_log_text,
    ) = _step_display("publication")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Revision]:
        return super().get_queryset(request).prefetch_related("jobs")

    @admin.display(description="attempts (build / validation)")
    def attempts(self, revision: Revision) -> str:
        """Build and validation attempts, and re-sends of lost queue messages."""
        jobs = [revision.job(step) for step in ("build", "validation")]
        resends = sum(job.resends for job in jobs if job)
        text = " / ".join(str(job.attempts) if job else "0" for job in jobs)
        return f"{text} (re-sent {resends}x)" if resends else text

    @admin.display(description="competitor", ordering="competitor__name")
    def competitor_link(self, revision: Revision) -> str:
        return admin_link(revision.competitor)

    @admin.display(description="environment", ordering="competitor__environment__title")
    def environment(self, revision: Revision) -> str:
        return revision.competitor.environment.title

    @admin.display(description="uploaded by")
    def uploaded_by_link(self, revision: Revision) -> str:
        return admin_link(revision.uploaded_by)

    @admin.display(description="source")
    def source_link(self, revision: Revision) -> str | None:
        competitor = revision.competitor
        try:
            url = reverse(
                "revision_source",
                args=[competitor.environment.name, competitor.name, revision.version],
            )
        except NoReverseMatch:
            return revision.source.name
        return format_html('<a href="{}">{}</a> (download)', url, revision.source.name)

    @admin.display(description="self-play duel")
    def validation_duel(self, revision: Revision) -> str:
        duel = (
            Duel.objects.of_revision(revision)
            .filter(is_validation=True)
            .order_by("-created_at")
            .first()
        )
        return admin_link(duel, f"duel {duel.pk}") if duel else EMPTY

    @admin.display(description="public page")
    def public(self, revision: Revision) -> str:
        return public_link(revision)

    @admin.action(description="Rebuild (build, then validate)")
    def rebuild(self, request: HttpRequest, queryset: QuerySet[Revision]) -> None:
        def rebuild_one(revision: Revision) -> None:
            if not revision_rebuild(revision=revision):
                revision.refresh_from_db()
                raise ArenaError(f"not rebuilt: {_busy(revision, 'build', 'validation')}")

        self.run_each(request, queryset, rebuild_one, done="Rebuilt and re-validated")

    @admin.action(description="Re-validate (self-play again)")
    def revalidate(self, request: HttpRequest, queryset: QuerySet[Revision]) -> None:
        def revalidate_one(revision: Revision) -> None:
            if not revision_revalidate(revision=revision):
                revision.refresh_from_db()
                if revision.build_status != StepStatus.SUCCEEDED:
                    raise ArenaError("its build has not succeeded; rebuild it instead")
                raise ArenaError(f"not re-validated: {_busy(revision, 'validation')}")

        self.run_each(request, queryset, revalidate_one, done="Re-validated")

    @admin.action(description="Re-publish (push to the publication repository again)")
    def republish(self, request: HttpRequest, queryset: QuerySet[Revision]) -> None:
        def requeue(revision: Revision) -> None:
            problem = revision_publication_problem(revision)
            if problem:
                raise ArenaError(f"cannot be published: {problem}")
            # A publication whose worker's lease ran out (it was killed) is taken over.
            if not revision_republish(revision=revision):
                revision.refresh_from_db()
                raise ArenaError(f"not re-published: {_busy(revision, 'publication')}")

        self.run_each(request, queryset, requeue, done="Re-published")

    @admin.action(description="Disable (out of new tournaments)")
    def disable(self, request: HttpRequest, queryset: QuerySet[Revision]) -> None:
        self.update_selected(request, queryset, is_disabled=True, done="disabled")

    @admin.action(description="Enable")
    def enable(self, request: HttpRequest, queryset: QuerySet[Revision]) -> None:
        self.update_selected(request, queryset, is_disabled=False, done="enabled")

    @admin.action(description="Create a tournament from the selected revisions")
    def create_tournament(
        self, request: HttpRequest, queryset: QuerySet[Revision]
    ) -> HttpResponseRedirect | None:
        environments = set(queryset.values_list("competitor__environment", flat=True))
        if len(environments) != 1:
            self.message_user(request, "Select revisions of one environment only.", messages.ERROR)
            return None
        query = urlencode(
            {
                "environment": environments.pop(),
                "participants": ",".join(str(pk) for pk in queryset.values_list("pk", flat=True)),
            }
        )
        return HttpResponseRedirect(reverse("admin:core_tournament_add") + "?" + query)
