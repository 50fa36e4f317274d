from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from builder.services import base_image_options
from core.errors import ArenaError
from sandboxes.base import SandboxError
from sandboxes.base_image import SOURCES, base_image_build


class Command(BaseCommand):
    help = (
        "Build the base image of the docker sandbox (Python 3, NumPy, the SDK) unless it "
        "exists, and print its tag. Progress goes to stderr, the tag alone to stdout."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--source",
            choices=SOURCES,
            help="debootstrap (Debian mirror only) or dockerfile (python:3.11-slim from a "
            "registry); default: the ARENA_BASE_IMAGE_SOURCE setting, else debootstrap",
        )
        parser.add_argument(
            "--force", action="store_true", help="rebuild even if an image with the tag exists"
        )
        parser.add_argument(
            "--refresh-rootfs",
            action="store_true",
            help="run debootstrap again instead of using the cached Debian root file system",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            build = base_image_build(
                **{
                    **base_image_options(),
                    "source": options["source"] or settings.ARENA_BASE_IMAGE_SOURCE,
                },
                force=options["force"],
                refresh_rootfs=options["refresh_rootfs"],
                report=lambda line: self.stderr.write(line),
            )
        except (ArenaError, SandboxError) as error:
            raise CommandError(error.message) from error
        what = "built" if build.built else "reused"
        self.stderr.write(f"{what} in {build.seconds:.1f} s")
        self.stdout.write(build.tag)
