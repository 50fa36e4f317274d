"""What the publisher does when another app reports something (``core.jobs.signals``)."""

from __future__ import annotations

from django.dispatch import receiver

from core.jobs.signals import revision_validated
from core.models import Revision
from core.services.publication import revision_publication_queue


@receiver(revision_validated, dispatch_uid="publisher.revision_validated")
def publish_validated(*, revision: Revision, **_: object) -> None:
    # A validated revision of a public competitor goes to the publication repository
    # (when one is configured); the publisher decides and starts its task.
    revision_publication_queue(revision=revision)
