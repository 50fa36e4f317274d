"""The build of a revision gives an upload the same verdict whatever the sandbox:
``requirements.txt`` is checked by the same rules, with the same message, before anything
that depends on the sandbox. The process sandbox then says what it did not install.

The requirement checks run before the Docker engine is asked for anything, so the
docker half of these tests needs no engine (the builds that do are in
``test_docker_build``).
"""

from __future__ import annotations

import io
import zipfile

import pytest

from builder import services
from core.models import Revision, StepStatus
from tests.pipeline import make_user, pipeline, upload  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

AGENT = b"""\
from arena_sdk import agent


@agent
def play(turn):
    return turn.legal_actions[0]
"""

SANDBOXES = ("process", "docker")


def upload_with_requirements(name: str, requirements: bytes) -> Revision:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("main.py", AGENT)
        archive.writestr("requirements.txt", requirements)
    return upload(
        make_user(f"{name}@example.org"),
        "tic_tac_toe",
        name,
        buffer.getvalue(),
        filename="bot.zip",
    )


@pytest.mark.parametrize(
    ("requirements", "deny", "allow", "reason"),
    [
        (b"six @ https://example.org/six-1.16.0-py2.py3-none-any.whl\n", [], [], "URLs"),
        (b"--index-url https://example.org/simple\nsix\n", [], [], "pip options"),
        (b"https://example.org/six.tar.gz\n", [], [], "URLs, file paths"),
        (b"six==1.16.0\n", ["six"], [], "is not allowed on this platform"),
        (b"six==1.16.0\n", [], ["numpy"], "not on the list of allowed packages (numpy)"),
        (b"caf\xe9\n", [], [], "must be UTF-8 text"),
    ],
    ids=["url", "index-url", "bare-url", "denied", "not-allowed", "not-utf8"],
)
def test_it_refuses_the_same_bad_requirements_with_the_same_message_in_every_sandbox(
    settings, requirements, deny, allow, reason
):
    settings.ARENA_REQUIREMENTS_DENY = deny
    settings.ARENA_REQUIREMENTS_ALLOW = allow
    errors = {}
    for sandbox in SANDBOXES:
        settings.ARENA_SANDBOX = sandbox

        revision = upload_with_requirements(f"bad-{sandbox}", requirements)

        assert revision.build_status == StepStatus.FAILED, sandbox
        assert revision.validation_status == StepStatus.NONE
        assert revision.image == ""
        errors[sandbox] = revision.job("build").error

    assert errors["process"] == errors["docker"]
    assert reason in errors["process"]


def test_it_refuses_bad_requirements_before_asking_the_docker_engine_for_anything(
    settings, monkeypatch
):
    settings.ARENA_SANDBOX = "docker"
    touched = []
    monkeypatch.setattr(services, "_base_image", lambda report: touched.append("base image"))

    revision = upload_with_requirements("index-url", b"--extra-index-url https://example.org\n")

    assert revision.build_status == StepStatus.FAILED
    assert "requirements.txt line 1" in revision.job("build").error
    assert touched == []


def test_it_checks_the_requirements_in_the_process_sandbox_and_says_they_are_not_installed(
    settings,
):
    settings.ARENA_SANDBOX = "process"
    settings.ARENA_REQUIREMENTS_DENY = ["torch"]
    settings.ARENA_REQUIREMENTS_ALLOW = []

    revision = upload_with_requirements(
        "good", b"# what it needs\nsix==1.16.0\nnumpy >= 1.20 ; python_version >= '3.8'\n"
    )

    assert revision.build_status == StepStatus.SUCCEEDED, revision.job("build").error
    assert (
        "requirements checked but not installed: six==1.16.0, "
        'numpy>=1.20; python_version >= "3.8". '
        "The process sandbox runs agents on this host's Python, so these must already be "
        "importable there."
    ) in revision.job("build").log
    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error


def test_it_says_nothing_is_missing_when_the_requirements_list_none(settings):
    settings.ARENA_SANDBOX = "process"

    revision = upload_with_requirements("empty", b"# nothing yet\n\n")

    assert revision.build_status == StepStatus.SUCCEEDED, revision.job("build").error
    assert "requirements: none listed" in revision.job("build").log
    assert "not installed" not in revision.job("build").log
