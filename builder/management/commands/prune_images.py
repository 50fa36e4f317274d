from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from builder.requirements import wheel_cache_prune
from builder.services import revision_images_prune
from core.errors import ArenaError
from sandboxes.base import SandboxError


class Command(BaseCommand):
    help = (
        "Remove the revision images no revision needs any more (deleted, disabled, "
        "superseded, replaced by a rebuild) and old downloaded wheels; prints each one. "
        "Celery beat runs the same clean-up every ARENA_PRUNE_IMAGES_SECONDS."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--keep-wheels", action="store_true", help="leave the cache of downloaded wheels"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pruned = revision_images_prune()
        except (ArenaError, SandboxError) as error:
            raise CommandError(error.message) from error
        for image in pruned:
            if image.removed:
                self.stdout.write(f"removed {image.image}: {image.reason}")
            else:
                self.stdout.write(f"kept {image.image}: still in use ({image.reason})")
        removed = [] if options["keep_wheels"] else wheel_cache_prune()
        for folder in removed:
            self.stdout.write(f"removed wheels {folder}")
        if not pruned and not removed:
            self.stdout.write("nothing to remove")
