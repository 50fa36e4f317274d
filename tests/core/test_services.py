from __future__ import annotations

import pytest

from core.errors import ArenaError
from core.models import Competitor, Environment, Revision, StepStatus
from core.services.revisions import competitor_get_or_create, revision_create
from core.services.uploads import UploadRejected
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

RANDOM = PLAYERS / "tic_tac_toe" / "random_player.py"


def test_it_builds_and_validates_an_upload():
    revision = upload(make_user(), "tic_tac_toe", "rando", RANDOM)

    assert revision.version == 1
    assert revision.build_status == StepStatus.SUCCEEDED
    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error
    assert revision.is_valid
    assert revision.sha256 and revision.size == RANDOM.stat().st_size
    assert revision.source.read() == RANDOM.read_bytes()


def test_it_numbers_revisions_of_a_competitor_in_order():
    owner = make_user()
    versions = [upload(owner, "tic_tac_toe", "rando", RANDOM).version for _ in range(3)]

    assert versions == [1, 2, 3]


def test_it_refuses_a_name_taken_by_someone_else():
    upload(make_user("alice@example.org"), "tic_tac_toe", "taken", RANDOM)

    with pytest.raises(ArenaError, match="taken"):
        competitor_get_or_create(
            owner=make_user("bob@example.org"),
            environment=Environment.objects.get(name="tic_tac_toe"),
            name="taken",
        )


def test_it_stores_nothing_for_a_rejected_upload(settings):
    owner = make_user()
    competitor = Competitor.objects.create(
        owner=owner, environment=Environment.objects.get(name="tic_tac_toe"), name="empty"
    )

    with pytest.raises(UploadRejected):
        revision_create(
            competitor=competitor, uploaded_by=owner, filename="bot.zip", content=b"not a zip"
        )

    assert Revision.objects.count() == 0
    assert not (settings.MEDIA_ROOT / "revisions").exists()


def test_it_fails_the_build_of_a_syntax_error_with_file_and_line():
    revision = upload(make_user(), "tic_tac_toe", "broken", b"def act(turn:\n    return 1\n")

    assert revision.build_status == StepStatus.FAILED
    assert "main.py, line 1" in revision.job("build").error
    assert revision.validation_status == StepStatus.NONE


def test_it_fails_validation_of_an_agent_that_crashes_with_its_log():
    source = b"import tensorflow\n"
    revision = upload(make_user(), "tic_tac_toe", "needs-tf", source)

    assert revision.build_status == StepStatus.SUCCEEDED
    assert revision.validation_status == StepStatus.FAILED
    assert "validation failed: crash" in revision.job("validation").error
    assert "No module named 'tensorflow'" in revision.job("validation").error


def test_it_refuses_uploads_to_a_closed_environment():
    owner = make_user()
    environment = Environment.objects.get(name="tic_tac_toe")
    environment.is_active = False
    environment.save()
    competitor = Competitor.objects.create(owner=owner, environment=environment, name="late")

    with pytest.raises(UploadRejected, match="closed"):
        revision_create(
            competitor=competitor, uploaded_by=owner, filename="a.py", content=RANDOM.read_bytes()
        )
