"""What one app tells the others, without importing them.

The sender is the app that did the work; receivers are connected in the ``ready()`` of
the apps that act on it. They run in the sender's process and transaction, right after
it, as a direct call would, and an exception in one reaches the sender.
"""

from __future__ import annotations

from django.dispatch import Signal

#: The duel runner recorded a duel's result (or its failure). Keyword argument: ``duel``.
duel_finished = Signal()

#: A revision passed its validation by self-play. Keyword argument: ``revision``.
revision_validated = Signal()
