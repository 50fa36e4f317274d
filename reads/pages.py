"""The site's lists, a page at a time: how many rows each shows, and the one way a page of
rows is read (a count and one slice, whatever the history's length)."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet

from core.models import Tournament
from reads.access import Visitor, tournaments_visible

RECENT_TOURNAMENTS = 10
#: Rows a page of the site's lists shows: the list's page number comes from the address
#: (``?page=2``), so that no page reads more rows as the history grows.
LEADERBOARD_ROWS = 50
#: The environment page's top of its leaderboard (the rest on the leaderboard's page).
LEADERBOARD_TOP = 20
TOURNAMENT_ROWS = 20
STANDING_ROWS = 50
DUEL_ROWS = 50
REVISION_ROWS = 20


def rows_page(rows: QuerySet[Any], number: str | int | None, per_page: int) -> Page:
    """Page ``number`` of ``rows`` (an ordered query): a count and one slice. Anything but
    a page number gives the first page; a number past the end, the last."""
    return Paginator(rows, per_page).get_page(number)


def visible_tournaments(user: Visitor) -> QuerySet[Tournament]:
    return Tournament.objects.select_related("environment").filter(tournaments_visible(user))
