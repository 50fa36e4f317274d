"""requirements.txt: what is accepted, what the organizers' lists refuse, and the wheels
downloaded for it (PyPI the first time; no Docker needed)."""

from __future__ import annotations

import time

import pytest

from builder.requirements import (
    RequirementsPolicy,
    RequirementsRejected,
    requirements_parse,
    wheels_download,
)

ANY = RequirementsPolicy(max_bytes=200 * 1024 * 1024)


def names(text: str, policy: RequirementsPolicy = ANY) -> list[str]:
    return [str(requirement) for requirement in requirements_parse(text, policy=policy)]


def test_it_accepts_plain_requirements_with_extras_markers_and_comments():
    text = """\
# what the agent needs
six==1.16.0   # pinned
requests[socks] >= 2.0, < 3
pywin32 ; sys_platform == "win32"

numpy
"""

    assert names(text) == [
        "six==1.16.0",
        "requests[socks]<3,>=2.0",
        'pywin32; sys_platform == "win32"',
        "numpy",
    ]


def test_it_joins_continued_lines_as_pip_does():
    assert names("six\\\n==1.16.0\n") == ["six==1.16.0"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("-e .", "pip options"),
        ("--index-url https://example.org/simple", "pip options"),
        ("-i https://example.org/simple", "pip options"),
        ("-f /tmp/wheels", "pip options"),
        ("--find-links=/tmp/wheels", "pip options"),
        ("-r other.txt", "pip options"),
        ("six @ https://example.org/six-1.16.0-py2.py3-none-any.whl", "URLs are not allowed"),
        ("https://example.org/six-1.16.0-py2.py3-none-any.whl", "not a requirement"),
        ("git+https://example.org/six.git", "not a requirement"),
        ("./vendored/six", "not a requirement"),
        ("/opt/six", "not a requirement"),
        ("six-1.16.0-py2.py3-none-any.whl", "files are not allowed"),
        ("six==1.16.0 --hash=sha256:0000", "not a requirement"),
        ("six==${SIX_VERSION}", "not a requirement"),
    ],
)
def test_it_refuses_anything_but_a_plain_requirement(line, reason):
    with pytest.raises(RequirementsRejected, match=reason) as refused:
        names(f"numpy\n{line}\n")

    assert "requirements.txt line 2" in refused.value.message


def test_it_matches_the_lists_by_normalised_project_name():
    policy = RequirementsPolicy.create(max_bytes=1, deny="Python_Dateutil, six")

    with pytest.raises(RequirementsRejected, match=r"'python\.dateutil' is not allowed"):
        names("python.dateutil==2.9.0\n", policy)
    assert policy.refusal("SIX") is not None
    assert policy.refusal("numpy") is None


def test_it_checks_the_deny_list_before_the_allow_list():
    policy = RequirementsPolicy.create(max_bytes=1, deny=["six"], allow=["six", "numpy"])

    assert policy.refusal("six") == "the package 'six' is not allowed on this platform"
    assert policy.refusal("numpy") is None
    assert policy.refusal("pandas") == (
        "the package 'pandas' is not on the list of allowed packages (numpy, six)"
    )


def test_it_keeps_the_base_images_numpy_when_it_satisfies_the_requirement(settings, tmp_path):
    settings.ARENA_WHEEL_CACHE = tmp_path / "wheels"
    lines: list[str] = []

    wheels = wheels_download(
        requirements=requirements_parse("numpy>=1.20,<2\n", policy=ANY),
        policy=ANY,
        deadline=time.monotonic() + 60,
        base_numpy=lambda: "1.24.2",
        report=lines.append,
    )

    assert wheels.wheels == ()
    assert lines == ["numpy: the base image's NumPy 1.24.2 satisfies requirements.txt"]
    assert not (tmp_path / "wheels").exists()  # nothing downloaded


def test_it_stops_a_download_larger_than_the_cap(settings, tmp_path):
    settings.ARENA_WHEEL_CACHE = tmp_path / "wheels"
    small = RequirementsPolicy(max_bytes=4096)

    with pytest.raises(RequirementsRejected, match="larger than 4 KiB, the limit"):
        wheels_download(
            requirements=requirements_parse("six==1.16.0\n", policy=small),
            policy=small,
            deadline=time.monotonic() + 120,
            base_numpy=lambda: None,
        )

    assert list((tmp_path / "wheels" / "sets").iterdir()) == []  # nothing half-kept


def test_it_reuses_the_wheels_of_the_same_requirements(settings):
    # The shared cache in var/cache/wheels: fast after the first run on a machine.
    first = wheels_download(
        requirements=requirements_parse("six==1.16.0\n", policy=ANY),
        policy=ANY,
        deadline=time.monotonic() + 120,
        base_numpy=lambda: None,
    )
    again = wheels_download(
        requirements=requirements_parse("six == 1.16.0  # same\n", policy=ANY),
        policy=ANY,
        deadline=time.monotonic() + 120,
        base_numpy=lambda: None,
    )

    assert first.wheels == again.wheels == ("six-1.16.0-py2.py3-none-any.whl",)
    assert again.reused and again.folder == first.folder
    assert first.pip_wheel is not None and first.pip_wheel.name.startswith("pip-")
