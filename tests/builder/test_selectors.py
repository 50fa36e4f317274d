"""Which revisions still need their images: the rules of the clean-up, without Docker."""

from __future__ import annotations

import pytest

from builder.selectors import revision_image_uses
from core.models import StepStatus, TournamentStatus
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    ParticipantFactory,
    RevisionFactory,
    TournamentFactory,
)

pytestmark = pytest.mark.django_db


def reasons(*revisions) -> list[str | None]:
    uses = revision_image_uses(revision_ids=[revision.pk for revision in revisions])
    return [uses[revision.pk].removal_reason for revision in revisions]


@pytest.fixture
def competitor():
    return CompetitorFactory()


def test_it_keeps_the_newest_validated_revision_only(competitor):
    old = RevisionFactory(competitor=competitor, validated=True)
    newest = RevisionFactory(competitor=competitor, validated=True)
    failed = RevisionFactory(
        competitor=competitor,
        build_status=StepStatus.SUCCEEDED,
        validation_status=StepStatus.FAILED,
    )

    assert reasons(old, newest, failed) == [
        "v2 of the competitor superseded it",
        None,
        "it did not pass validation",
    ]


def test_it_keeps_a_revision_being_validated_or_built(competitor):
    RevisionFactory(competitor=competitor, validated=True)
    validating = RevisionFactory(
        competitor=competitor,
        build_status=StepStatus.SUCCEEDED,
        validation_status=StepStatus.RUNNING,
    )
    building = RevisionFactory(competitor=competitor, build_status=StepStatus.RUNNING)

    uses = revision_image_uses(revision_ids=[validating.pk, building.pk])

    assert uses[validating.pk].removal_reason is None
    assert uses[building.pk].building


def test_it_keeps_a_superseded_revision_a_queued_duel_still_plays(competitor):
    old = RevisionFactory(competitor=competitor, validated=True)
    RevisionFactory(competitor=competitor, validated=True)
    DuelFactory(validation=True, revisions=[old, old])

    assert reasons(old) == [None]


@pytest.mark.parametrize(
    ("status", "kept"),
    [
        (TournamentStatus.DRAFT, True),
        (TournamentStatus.RUNNING, True),
        (TournamentStatus.COMPLETED, False),
    ],
)
def test_it_keeps_a_superseded_revision_entered_in_an_unfinished_tournament(status, kept):
    tournament = TournamentFactory(status=status)
    entry = ParticipantFactory(tournament=tournament)
    RevisionFactory(competitor=entry.revision.competitor, validated=True)

    assert (reasons(entry.revision) == [None]) is kept


def test_it_lets_the_image_of_a_disabled_revision_or_competitor_go(competitor):
    disabled = RevisionFactory(competitor=competitor, validated=True, is_disabled=True)
    other = RevisionFactory(competitor=CompetitorFactory(is_disabled=True), validated=True)

    assert reasons(disabled, other) == ["its revision or competitor is disabled"] * 2


def test_it_says_nothing_of_a_revision_that_no_longer_exists():
    assert revision_image_uses(revision_ids=[987654]) == {}
