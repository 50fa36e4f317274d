"""Small formatting filters and tags shared by the templates."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from reads.replays import Replay, show_action
from referee.match_points import score_text

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


def missing_as_dash(shown: Callable[[Any], str]) -> Callable[[Any], str]:
    """A filter that shows a missing value (None) as ``—``, as every page does."""

    @functools.wraps(shown)
    def filter_function(value: Any) -> str:
        return "—" if value is None else shown(value)

    return filter_function


@register.filter
@missing_as_dash
def seconds(value: float | str) -> str:
    """A duration for people: ``<1 ms``, ``42 ms``, ``3.2 s``, ``4 min 05 s``."""
    if value == "":
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
@missing_as_dash
def score(value: float) -> str:
    """Match points, as the game means them (``referee.match_points.score_text``): ``3``,
    ``2.5``, ``42⅓``."""
    return score_text(float(value))


@register.filter
def scores(values: list[float]) -> str:
    """Every player's match points, player 1's first: ``3 : 1``, ``2 : 1.5 : 0.5 : 0``."""
    return " : ".join(score(value) for value in values)


@register.filter
def get_item(mapping: dict[Any, Any], key: Any) -> Any:
    """``mapping[key]``, or None: a dict read by a key the template computes."""
    return mapping.get(key)


@register.filter
def words(value: str) -> str:
    """An identifier as words: ``illegal_action`` → ``illegal action``."""
    return str(value).replace("_", " ")


@register.filter
@missing_as_dash
def ago(moment: datetime) -> str:
    """How long ago, for people: ``just now`` under a minute, else ``5 minutes ago``."""
    if timezone.now() - moment < timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"


@register.filter
@missing_as_dash
def percent(value: float) -> str:
    """A share for people: ``12.5 %``."""
    return f"{float(value) * 100:.1f} %"


@register.filter
@missing_as_dash
def action(value: object) -> str:
    """An action as the replay viewer shows it (``reads.replays.show_action``)."""
    return show_action(value)


#: What marks a tournament, a competition or an agent that only some may see.
PRIVATE_BADGE = SafeString(' <span class="badge badge-muted">private</span>')


@register.filter
def private_badge(item: Any) -> str:
    """After an object's name: the "private" badge, unless it is public."""
    return "" if item.is_public else PRIVATE_BADGE


@register.simple_block_tag
def rows_table(content: SafeString, rows: object, *, empty: str, kind: str = "") -> SafeString:
    """A list page's table: ``content`` (its ``<thead>`` and ``<tbody>``) in a table that
    scrolls sideways on a narrow screen, or, when there are no ``rows``, the sentence
    ``empty`` in its place. ``kind`` is a class of its own (``llm-stats``)."""
    if not rows:
        return format_html('<p class="empty">{}</p>', empty)
    classes = f"table {kind}" if kind else "table"
    return format_html(
        '<div class="table-wrap"><table class="{}">{}</table></div>', classes, content
    )


CURRENT = SafeString(' aria-current="step"')


@register.simple_tag
def replay_move_items(replay: Replay, step: int) -> SafeString:
    """The replay's move list, one ``<li>`` a step, ``step`` marked current. Written here
    rather than in a template loop: a long match has hundreds of steps, and this is
    several times faster (the page of a 332-move chess match is drawn within 200 ms,
    ``tests/browser/test_replay_boards.py``). Everything is escaped by ``format_html``."""
    items = []
    for frame in replay.frames:
        here = frame["step"] == step
        moves = format_html_join(
            " · ",
            '<span class="move-player">{}</span> <code class="move-action">{}</code>',
            ((move["player"], move["action"]) for move in frame["moves"]),
        )
        took = frame["time"]
        items.append(
            format_html(
                '<li class="move{}"><a href="?step={}" data-step="{}"{}>'
                '<span class="move-number">{}</span><span class="move-text">{}</span>{}</a></li>',
                " current" if here else "",
                frame["step"],
                frame["step"],
                CURRENT if here else "",
                frame["step"],
                moves or "Start",
                format_html('<span class="move-time">{}</span>', seconds(took))
                if took is not None
                else "",
            )
        )
    return SafeString("\n".join(items))


@register.simple_tag(takes_context=True)
def page_url(context: template.Context, param: str, number: int) -> str:
    """This page's address with list ``param`` at page ``number`` (the other lists' pages
    and the rest of the query kept)."""
    query = context["request"].GET.copy()
    query[param] = str(number)
    return "?" + query.urlencode()
