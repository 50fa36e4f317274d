"""Small formatting filters shared by the templates."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

from reads.replays import show_action

register = template.Library()

#: Status → CSS modifier: what a badge looks like.
STATUS_STYLES = {
    "none": "muted",
    "draft": "muted",
    "queued": "pending",
    "running": "pending",
    "succeeded": "good",
    "completed": "good",
    "failed": "bad",
    "cancelled": "muted",
}


@register.filter
def status_style(status: str) -> str:
    return STATUS_STYLES.get(str(status), "muted")


@register.filter
def seconds(value: float | None) -> str:
    """A duration for people: ``<1 ms``, ``42 ms``, ``3.2 s``, ``4 min 05 s``."""
    if value is None or value == "":
        return "—"
    value = float(value)
    if value < 0.001:
        return "<1 ms"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@register.filter
def score(value: float | None) -> str:
    """Match points: ``3``, ``2.5``."""
    if value is None:
        return "—"
    return f"{float(value):g}"


@register.filter
def scores(values: list[float]) -> str:
    """Every player's match points, player 1's first: ``3 : 1``, ``2 : 1.5 : 0.5 : 0``."""
    return " : ".join(score(value) for value in values)


@register.filter
def words(value: str) -> str:
    """An identifier as words: ``illegal_action`` → ``illegal action``."""
    return str(value).replace("_", " ")


@register.filter
def ago(moment: datetime | None) -> str:
    """How long ago, for people: ``just now`` under a minute, else ``5 minutes ago``."""
    if moment is None:
        return "—"
    if timezone.now() - moment < timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"


@register.filter
def percent(value: float | None) -> str:
    """A share for people: ``12.5 %``."""
    if value is None:
        return "—"
    return f"{float(value) * 100:.1f} %"


@register.filter
def action(value: object) -> str:
    """An action as the replay viewer shows it (``reads.replays.show_action``)."""
    if value is None:
        return "—"
    return show_action(value)
