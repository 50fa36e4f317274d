"""Every list is paginated the same way: ``?limit=`` (1 to ``MAX_LIMIT``, ``DEFAULT_LIMIT``
when absent) and ``?offset=``; the body says how many items match in all and where the
next and previous pages are:

    {"count": 42, "next": "https://.../api/v1/duels?limit=20&offset=20", "previous": null,
     "items": [...]}

Limit and offset rather than cursors: lists are ordered on a stable key (newest first,
then by id), the totals are cheap at Arena's sizes, and people can jump to a page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Schema
from ninja.pagination import PaginationBase, paginate

View = TypeVar("View", bound=Callable[..., Any])

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: PostgreSQL's OFFSET is a bigint.
MAX_OFFSET = 2**63 - 1


class Pagination(PaginationBase):
    class Input(Schema):
        limit: int = Field(
            DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description=f"Items per page, {MAX_LIMIT} at most."
        )
        offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Items to skip.")

    class Output(Schema):
        #: Items matching the filters, on every page.
        count: int
        next: str | None
        previous: str | None
        items: list[Any]

    def paginate_queryset(
        self, queryset: QuerySet[Any], pagination: Input, request: HttpRequest, **params: Any
    ) -> dict[str, Any]:
        limit, offset = pagination.limit, pagination.offset
        count = queryset.count()
        following = offset + limit if offset + limit < count else None
        preceding = max(offset - limit, 0) if offset > 0 else None
        return {
            "count": count,
            "next": _page_url(request, limit, following),
            "previous": _page_url(request, limit, preceding),
            "items": list(queryset[offset : offset + limit]) if offset < count else [],
        }


def _page_url(request: HttpRequest, limit: int, offset: int | None) -> str | None:
    """The request's own URL, filters kept, at another offset."""
    if offset is None:
        return None
    query = request.GET.copy()
    query["limit"] = str(limit)
    query["offset"] = str(offset)
    return request.build_absolute_uri(
        f"{request.path}?{urlencode(sorted(query.lists()), doseq=True)}"
    )


def paginated(view: View) -> View:
    """ninja's ``@paginate(Pagination)``, below the route decorator.

    ninja reads the view's signature through its pagination wrapper, whose namespace is
    ninja's: the string annotations of ``from __future__ import annotations`` would not
    resolve there, so they are resolved here first, in the view's own module.
    """
    view.__annotations__ = get_type_hints(view, include_extras=True)
    return paginate(Pagination)(view)
