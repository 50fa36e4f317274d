"""``manage.py build_base_image``: the docker sandbox's base image from the command line."""

from __future__ import annotations

import io

from django.core.management import call_command

from tests.support.docker import docker_base_image

__all__ = ["docker_base_image"]


def test_it_prints_the_tag_from_the_management_command(docker_base_image):
    stdout, stderr = io.StringIO(), io.StringIO()

    call_command("build_base_image", stdout=stdout, stderr=stderr)

    assert stdout.getvalue().strip() == docker_base_image
    assert "reused" in stderr.getvalue()
