"""What one app tells the others, without importing them.

The sender is the app that did the work; receivers are connected in the ``ready()`` of
the apps that act on it. They run in the sender's process and transaction, right after
it, as a direct call would, and an exception in one reaches the sender.
"""

from __future__ import annotations

from django.dispatch import Signal

#: The duel runner recorded a duel's result (or its failure). Keyword argument: ``duel``.
duel_finished = Signal()

#: A job failed without its worker recording it: the watchdog gave up on it (every attempt
#: lost its lease, or no worker took it up), or its workers could not prepare it. Keyword
#: argument: ``job`` (``core.models.jobs.Job``), already stored as failed.
job_failed = Signal()

#: A revision passed its validation by self-play. Keyword argument: ``revision``.
revision_validated = Signal()

#: A worker is about to run a hosted revision on this host (a duel, a validation) and this
#: host lacks its build (``core.jobs.local_builds``). Keyword argument: ``revision``. The
#: builder's receiver makes it here from the stored upload, as the build did, while the
#: sender holds the revision's exclusive host lock; it raises ArenaError when it cannot.
revision_build_missing = Signal()
