"""What an owner does with a competitor, on the site and in the API alike (and the
organizers in the admin): who may see it, whether its logs are shared, disabling and
enabling it, deleting it. The same for an upload, an LLM player and an online model.

Disabled, a competitor plays no more: the tournament manager withdraws it from every
tournament and ladder it is in at its next pass, within seconds (its queued duels
cancelled; one being played ends), it leaves the leaderboard, takes no upload, its online
client is refused, and no tournament or score competition takes it in. Everything it
played stays: standings, replays, its opponents' ratings, its own history. Enabled again,
its newest validated revision rejoins the running ladders (not a tournament it was
withdrawn from). Its owner may enable what they disabled, not what the organizers did.
"""

from __future__ import annotations

import dataclasses

from django.db import transaction

from core.errors import ArenaError
from core.jobs.lifecycle import jobs_cancel
from core.models import Competitor, DisabledBy, Duel, Job, OnlineSeat, Revision
from core.services.publication import competitor_publish_latest
from core.services.revisions import revision_delete


def competitor_share_logs(*, competitor: Competitor, share: bool) -> None:
    """Its owner's choice: whether anyone may read what its agent logged in its finished
    duels and evaluations, while it is public (``reads.access.can_see_logs``)."""
    Competitor.objects.filter(pk=competitor.pk).update(share_logs=share)
    competitor.share_logs = share


def competitor_set_public(*, competitor: Competitor, is_public: bool) -> Revision | None:
    """Public: anyone may see it, its page and (a hosted one's) code, and its newest
    validated revision is queued for the publication repository when one is configured
    (``core.services.publication``; the revision queued is returned). Private: its owner
    and the organizers; its games in public tournaments still show its name. A revision
    already pushed to the repository stays there: making it private again removes
    nothing from git's history."""
    Competitor.objects.filter(pk=competitor.pk).update(is_public=is_public)
    competitor.is_public = is_public
    return competitor_publish_latest(competitor=competitor) if is_public else None


def competitor_disable(*, competitor: Competitor, by: DisabledBy) -> None:
    """Take it out of play (see the module's notes); disabling it again changes nothing,
    but the organizers' disabling stands over its owner's."""
    with transaction.atomic():
        current = Competitor.objects.select_for_update().get(pk=competitor.pk)
        if current.is_disabled and not (
            by == DisabledBy.ORGANIZERS and current.disabled_by == DisabledBy.OWNER
        ):
            competitor.is_disabled, competitor.disabled_by = True, current.disabled_by
            return
        Competitor.objects.filter(pk=competitor.pk).update(is_disabled=True, disabled_by=by)
        # An online model leaves the matchmaking queue (its client is refused from now on).
        OnlineSeat.objects.filter(competitor=competitor).update(queued_at=None)
        # Test duels with it not started yet are not played (the tournament manager
        # withdraws it from tournaments, with their queued duels).
        untouched = Duel.objects.filter(tournament__isnull=True, is_validation=False)
        jobs_cancel(
            jobs=Job.objects.filter(duel__in=untouched.with_competitor(competitor)),
            why=f"Not played: {competitor.name} was disabled.",
        )
    competitor.is_disabled, competitor.disabled_by = True, by


def competitor_enable(*, competitor: Competitor, by: DisabledBy) -> None:
    """Back in play: its newest validated revision rejoins the ladders. Its owner cannot
    enable a competitor the organizers disabled."""
    with transaction.atomic():
        current = Competitor.objects.select_for_update().get(pk=competitor.pk)
        if by == DisabledBy.OWNER and current.disabled_by == DisabledBy.ORGANIZERS:
            raise ArenaError(
                f"competitor {competitor.name} was disabled by the organizers: only they can "
                "enable it"
            )
        Competitor.objects.filter(pk=competitor.pk).update(is_disabled=False, disabled_by="")
    competitor.is_disabled, competitor.disabled_by = False, ""


def competitor_update(
    *,
    competitor: Competitor,
    share_logs: bool | None = None,
    is_public: bool | None = None,
    is_disabled: bool | None = None,
) -> Revision | None:
    """Its owner's changes, each one given (None: unchanged), together: the API's ``PATCH``
    and the buttons of its page. Returns the revision queued for publication when it was
    made public (``competitor_set_public``)."""
    published = None
    with transaction.atomic():
        if share_logs is not None:
            competitor_share_logs(competitor=competitor, share=share_logs)
        if is_public is not None:
            published = competitor_set_public(competitor=competitor, is_public=is_public)
        if is_disabled is True:
            competitor_disable(competitor=competitor, by=DisabledBy.OWNER)
        elif is_disabled is False:
            competitor_enable(competitor=competitor, by=DisabledBy.OWNER)
    return published


@dataclasses.dataclass(frozen=True)
class CompetitorDeletion:
    #: The competitor, disabled, when something keeps it; None once erased.
    kept: Competitor | None
    #: Why it was kept ("" when erased): the first reason a revision of it was kept.
    reason: str

    @property
    def erased(self) -> bool:
        return self.kept is None


def competitor_deletion_message(deletion: CompetitorDeletion) -> str:
    if deletion.erased:
        return "Erased, with its revisions, their validation duels and files; its name is free."
    return (
        f"Withdrawn rather than erased: {deletion.reason}. It is disabled, so it plays no "
        "more, and what it played stays."
    )


def competitor_delete(*, competitor: Competitor) -> CompetitorDeletion:
    """The owner's delete: each revision is deleted as ``revision_delete`` does (erased
    when nothing but its own validation refers to it, else withdrawn); the competitor goes
    with its last revision, freeing its name. When any revision is kept (it played others,
    is entered in a tournament, is on the leaderboard...), the competitor stays, disabled
    by its owner, with everything it played; deleting it again later erases what no
    longer needs keeping."""
    reasons = []
    with transaction.atomic():
        competitor = Competitor.objects.select_for_update().get(pk=competitor.pk)
        if competitor.disabled_by == DisabledBy.ORGANIZERS:
            # Erased, its name would be free to enter again, enabled.
            raise ArenaError(
                f"competitor {competitor.name} was disabled by the organizers: it cannot be "
                "deleted; ask them"
            )
        kept = []
        for revision in competitor.revisions.order_by("-version"):
            deletion = revision_delete(revision=revision)
            if not deletion.erased:
                reasons.append(deletion.reason)
                kept.append(revision.pk)
        # The competitor's own flag takes it out of play; its kept revisions stay enabled,
        # so that enabling the competitor again brings it back.
        Revision.objects.filter(pk__in=kept).update(is_disabled=False)
        if not reasons:
            # revision_delete erased the competitor with its last revision; one that had
            # none (never the case for an upload) goes here.
            Competitor.objects.filter(pk=competitor.pk).delete()
            return CompetitorDeletion(kept=None, reason="")
        competitor_disable(competitor=competitor, by=DisabledBy.OWNER)
    return CompetitorDeletion(kept=competitor, reason=reasons[0])
