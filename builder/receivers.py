"""What the builder does when another app reports something (``core.jobs.signals``)."""

from __future__ import annotations

from django.dispatch import receiver

from core.jobs.signals import revision_build_missing
from core.models import Revision


@receiver(revision_build_missing, dispatch_uid="builder.revision_build_missing")
def build_here(*, revision: Revision, **_: object) -> None:
    # A duel or validation on this host wants a revision built on another one. The
    # builder's services (the Docker SDK) are imported here, not at every process's start.
    from builder.services import revision_build_here

    revision_build_here(revision=revision)
