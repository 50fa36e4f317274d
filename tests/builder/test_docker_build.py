"""The builder's docker path on a real engine: an image per revision, its dependencies
downloaded as wheels on the host and installed with no network, validation in it, and
the clean-up of images no revision needs.

Downloads come from PyPI the first time and from ``var/cache/wheels`` after that.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.core.management import call_command

from builder.requirements import WheelSet, pip_wheel
from builder.revision_image import (
    LABEL_ENVIRONMENT,
    LABEL_INSTANCE,
    revision_image_build,
)
from builder.services import instance_label, revision_images_prune
from core.jobs.local_builds import revision_host_lock
from core.models import Competitor, DuelStatus, Environment, Revision, StepStatus
from core.services.revisions import revision_create
from core.services.uploads import UploadRejected
from duel_runner.services import duel_play, revision_agent_source, sandbox_backend_close
from sandboxes import docker_engine, docker_images
from sandboxes.base import EntryKind
from sandboxes.docker_container import container_command
from sandboxes.docker_engine import LABEL_REVISION, LABEL_ROLE, EngineError
from tests.factories import queued_duel
from tests.pipeline import PLAYERS, make_user, make_zip, pipeline, upload, upload_zip  # noqa: F401
from tests.support.agents import USES_SIX
from tests.support.docker import containers_left_after_removal, docker_base_image

__all__ = ["docker_base_image"]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("docker_builds"),
    pytest.mark.slow,
]

MINIMAX = PLAYERS / "connect_four" / "minimax.py"


USES_NUMPY = b"""\
import numpy
from arena_sdk import Agent


class UsesNumpy(Agent):
    def act(self, turn):
        return int(numpy.array(turn.legal_actions).min())
"""


@pytest.fixture
def docker_builds(pipeline, settings, docker_base_image: str) -> Iterator[None]:  # noqa: F811
    """The docker sandbox, default requirement rules; afterwards no container of this run
    is left (images and their containers carry the run's ``arena.instance``)."""
    settings.ARENA_SANDBOX = "docker"
    settings.ARENA_REQUIREMENTS_DENY = []
    settings.ARENA_REQUIREMENTS_ALLOW = []
    instance = {LABEL_INSTANCE: instance_label()}
    yield
    sandbox_backend_close()  # removals run in the background: wait for them
    # The pipeline fixture removes this run's images afterwards. An abandoned build's step
    # container is the engine's to remove (the build is cancelled), in its own time: on a
    # loaded machine it may be created after the builder's sweep gave up.
    assert containers_left_after_removal(instance) == []


def pruned_images():
    """``revision_images_prune`` once the validations' containers, which are removed in the
    background after their duels, are gone (an image a container still uses is rightly
    kept until the next prune)."""
    sandbox_backend_close()
    return revision_images_prune()


def in_image(image: str, script: str) -> str:
    """What ``sh -c script`` prints in a container of ``image`` (as its user, no network)."""
    code, output = docker_engine.container_run(
        image=image, command=["sh", "-c", script], role="test", timeout=60
    )
    assert code == 0, output
    return output.decode()


# -- images -------------------------------------------------------------------------


def test_it_builds_an_image_of_the_revision_and_validates_it_in_docker():
    revision = upload(make_user(), "connect_four", "minimax", MINIMAX)

    assert revision.build_status == StepStatus.SUCCEEDED, revision.job("build").error
    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error
    assert revision.image == f"arena-revision:{revision.pk}-{revision.sha256[:12]}"
    labels = docker_images.image_labels(revision.image)
    assert labels[LABEL_ROLE] == "revision"
    assert labels[LABEL_REVISION] == str(revision.pk)
    assert labels[LABEL_ENVIRONMENT] == "connect_four"
    assert f"built {revision.image}" in revision.job("build").log
    # The duel runner starts the image itself, with the command the image carries.
    source = revision_agent_source(revision)
    assert source.image == revision.image
    config = docker_images.image_inspect(revision.image)["Config"]
    assert config["Cmd"] == container_command("main.py", EntryKind.PYTHON)
    assert config["User"] == "10001:10001"


def test_it_gives_the_agent_its_files_read_only():
    revision = upload(make_user(), "connect_four", "minimax", MINIMAX)

    owners = in_image(
        revision.image,
        "id -u; stat -c '%U %a %n' /agent /agent/main.py; "
        "touch /agent/planted 2>/dev/null && echo writable || echo refused",
    )

    assert owners.split() == [
        "10001",
        "root",
        "755",
        "/agent",
        "root",
        "644",
        "/agent/main.py",
        "refused",
    ]


def test_it_installs_requirements_as_wheels_and_validates_an_agent_that_imports_them():
    revision = upload_zip(
        "six-user", {"main.py": USES_SIX, "requirements.txt": b"six==1.16.0  # for py2/3\n"}
    )

    assert revision.build_status == StepStatus.SUCCEEDED, revision.job("build").error
    assert "six-1.16.0-py2.py3-none-any.whl" in revision.job("build").log
    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error
    assert "six 1.16.0 from /opt/arena/deps/six.py" in revision.job("validation").log


def test_it_uses_the_numpy_of_the_base_image_when_it_satisfies_the_requirement():
    revision = upload_zip(
        "numpy-user", {"main.py": USES_NUMPY, "requirements.txt": b"numpy>=1.20\n"}
    )

    assert revision.build_status == StepStatus.SUCCEEDED, revision.job("build").error
    assert "the base image's NumPy" in revision.job("build").log
    assert "wheels to install: none" in revision.job("build").log
    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error


def test_it_fails_the_build_of_a_requirement_that_does_not_exist():
    revision = upload_zip(
        "missing-dep",
        {"main.py": USES_SIX, "requirements.txt": b"arena-no-such-package-xyz==1.0\n"},
    )

    assert revision.build_status == StepStatus.FAILED
    assert "No matching distribution found for arena-no-such-package-xyz==1.0" in (
        revision.job("build").error
    )
    assert revision.validation_status == StepStatus.NONE
    assert revision.image == ""


def test_it_refuses_a_denied_package(settings):
    settings.ARENA_REQUIREMENTS_DENY = ["six"]

    revision = upload_zip("denied", {"main.py": USES_SIX, "requirements.txt": b"six==1.16.0\n"})

    assert revision.build_status == StepStatus.FAILED
    assert "the package 'six' is not allowed on this platform" in revision.job("build").error


def test_it_refuses_a_denied_package_that_a_dependency_pulls_in(settings):
    settings.ARENA_REQUIREMENTS_DENY = ["six"]

    revision = upload_zip(
        "denied-dependency",
        {"main.py": USES_SIX, "requirements.txt": b"python-dateutil==2.9.0.post0\n"},
    )

    assert revision.build_status == StepStatus.FAILED
    assert "the package 'six' is not allowed on this platform" in revision.job("build").error
    assert "needed by your requirements" in revision.job("build").error


def test_it_refuses_a_package_off_the_allow_list(settings):
    settings.ARENA_REQUIREMENTS_ALLOW = ["numpy"]

    revision = upload_zip("not-allowed", {"main.py": USES_SIX, "requirements.txt": b"six\n"})

    assert revision.build_status == StepStatus.FAILED
    assert "not on the list of allowed packages (numpy)" in revision.job("build").error


def test_it_refuses_a_requirement_with_a_url():
    url = b"six @ https://files.pythonhosted.org/packages/six-1.16.0-py2.py3-none-any.whl\n"

    revision = upload_zip("by-url", {"main.py": USES_SIX, "requirements.txt": url})

    assert revision.build_status == StepStatus.FAILED
    assert "requirements.txt line 1" in revision.job("build").error
    assert "URLs are not allowed" in revision.job("build").error


def test_it_fails_the_build_of_a_syntax_error_with_file_and_line():
    revision = upload(make_user(), "tic_tac_toe", "broken", b"def act(turn:\n    return 1\n")

    assert revision.build_status == StepStatus.FAILED
    assert "main.py, line 1" in revision.job("build").error
    assert revision.image == ""


def test_it_refuses_an_upload_without_an_entry_point():
    owner = make_user()
    competitor = Competitor.objects.create(
        owner=owner, environment=Environment.objects.get(name="tic_tac_toe"), name="headless"
    )

    with pytest.raises(UploadRejected, match="no entry point"):
        revision_create(
            competitor=competitor,
            uploaded_by=owner,
            filename="bot.zip",
            content=make_zip({"helper.py": b"x = 1\n", "requirements.txt": b"six\n"}),
        )


def test_it_stops_a_build_that_outlives_its_time_limit(settings):
    settings.ARENA_BUILD_TIMEOUT_SECONDS = 1

    revision = upload_zip("slow", {"main.py": USES_SIX, "requirements.txt": b"six==1.15.0\n"})

    assert revision.build_status == StepStatus.FAILED
    assert "did not finish within 1 s" in revision.job("build").error
    duration = revision.job("build").duration
    assert duration is not None and duration < 10


# -- another host ---------------------------------------------------------------------


def test_a_host_without_the_image_makes_the_same_one_itself_before_a_duel(settings, tmp_path):
    revision = upload_zip("six-user", {"main.py": USES_SIX, "requirements.txt": b"six==1.16.0\n"})
    opponent = upload(
        make_user(), "tic_tac_toe", "rando", PLAYERS / "tic_tac_toe" / "random_player.py"
    )
    assert revision.is_valid and opponent.is_valid
    files = in_image(revision.image, "cd /agent && sha256sum * && ls /opt/arena/deps")
    # Another host: its own engine lacks the image, its own folders and wheel cache are empty.
    sandbox_backend_close()
    docker_images.image_remove(revision.image)
    settings.ARENA_BUILD_ROOT = tmp_path / "host-2-builds"
    settings.ARENA_WHEEL_CACHE = tmp_path / "host-2-wheels"
    duel = queued_duel([revision, opponent], num_matches=2, seed=5)

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error
    assert docker_images.image_exists(revision.image)
    assert in_image(revision.image, "cd /agent && sha256sum * && ls /opt/arena/deps") == files
    assert docker_images.image_labels(revision.image)[LABEL_REVISION] == str(revision.pk)
    assert list((tmp_path / "host-2-wheels" / "sets").glob("*/wheels/six-1.16.0-*.whl"))
    assert "six 1.16.0 from /opt/arena/deps/six.py" in duel.players()[0].log


# -- clean-up -----------------------------------------------------------------------


def test_it_prunes_the_image_of_a_superseded_revision_and_keeps_the_newest_validated():
    owner = make_user()
    first = upload(owner, "tic_tac_toe", "evolving", PLAYERS / "tic_tac_toe" / "random_player.py")
    second = upload(owner, "tic_tac_toe", "evolving", PLAYERS / "tic_tac_toe" / "minimax.py")
    assert first.is_valid and second.is_valid

    pruned = pruned_images()

    assert [(image.image, image.reason) for image in pruned] == [
        (first.image, "v2 of the competitor superseded it")
    ]
    assert not docker_images.image_exists(first.image)
    assert docker_images.image_exists(second.image)


def test_it_prunes_the_image_of_a_disabled_revision_from_the_command_line(capsys):
    revision = upload(
        make_user(), "tic_tac_toe", "retired", PLAYERS / "tic_tac_toe" / "random_player.py"
    )
    Revision.objects.filter(pk=revision.pk).update(is_disabled=True)
    sandbox_backend_close()  # its validation's containers, removed in the background

    call_command("prune_images", "--keep-wheels")

    assert f"removed {revision.image}: its revision or competitor is disabled" in (
        capsys.readouterr().out
    )
    assert not docker_images.image_exists(revision.image)


def test_it_leaves_an_image_a_duel_of_this_host_holds_and_removes_it_later():
    revision = upload(
        make_user(), "tic_tac_toe", "retired", PLAYERS / "tic_tac_toe" / "random_player.py"
    )
    Revision.objects.filter(pk=revision.pk).update(is_disabled=True)
    sandbox_backend_close()  # its validation's containers are gone: only the lock holds it

    with revision_host_lock(revision.pk, shared=True):  # as a duel starting it holds it
        pruned = revision_images_prune()
    assert [(image.image, image.removed) for image in pruned] == [(revision.image, False)]
    assert pruned[0].reason == "a duel or build on this host holds it"
    assert docker_images.image_exists(revision.image)

    assert [image.image for image in revision_images_prune()] == [revision.image]
    assert not docker_images.image_exists(revision.image)


def test_it_reports_a_wheel_that_fails_to_install_in_the_image(docker_base_image, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "main.py").write_bytes(USES_SIX)
    installer = pip_wheel(deadline=time.monotonic() + 120)

    with pytest.raises(EngineError, match="returned a non-zero code") as failed:
        revision_image_build(
            tag="arena-revision:0-broken",
            base=docker_base_image,
            agent_dir=agent,
            entry="main.py",
            kind=EntryKind.PYTHON,
            wheels=WheelSet(wheels, ("broken-1.0-py3-none-any.whl",), installer, 9, reused=False),
            labels={LABEL_REVISION: "0", LABEL_INSTANCE: instance_label()},
            deadline=time.monotonic() + 120,
        )

    assert "broken-1.0-py3-none-any.whl" in failed.value.message
    assert not docker_images.image_exists("arena-revision:0-broken")
