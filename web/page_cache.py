"""Public pages kept for anonymous visitors, until the data behind them changes.

What an anonymous visitor sees depends on nothing of theirs: the same page for everyone
without an account, from the data alone (``reads.access``'s rules for nobody in
particular). So such a page, once rendered, is kept in Django's cache under its address
and the pages' version (``core.page_cache``), which every committed write to the data
bumps: it is shown again to every anonymous visitor until something it shows changes,
and never after. Signed-in visitors (their own competitors, logs, forms, the organizers'
private rows), visitors with a message to show, and requests other than GET always get
the page rendered for them.

A response is kept only if it is a 200 that sets no cookie (a page with a form's CSRF
token sets one: it is that visitor's) and whose ``Cache-Control`` does not say
``no-cache``, ``no-store`` or ``private`` (a view says so of a page showing what changes
without a write, such as an online model's connection).
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render

from core.page_cache import has_uncommitted_writes, pages_version

logger = logging.getLogger(__name__)

_NOT_KEPT = ("no-cache", "no-store", "private")


def _cacheable_request(request: HttpRequest) -> bool:
    return (
        request.method == "GET"
        and not request.user.is_authenticated
        and not len(get_messages(request))
        and not has_uncommitted_writes(connection)
    )


def _keepable(request: HttpRequest, response: HttpResponseBase) -> bool:
    return (
        isinstance(response, HttpResponse)
        and response.status_code == 200
        and not response.cookies
        # The view used a CSRF token (a form): the middleware sets this visitor's cookie.
        and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
        and not any(word in response.get("Cache-Control", "") for word in _NOT_KEPT)
    )


def _key(request: HttpRequest) -> str:
    address = request.build_absolute_uri().encode()
    return "arena:page:" + hashlib.sha256(address).hexdigest()


def cached_for_visitors(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Keep ``view``'s pages for anonymous visitors (see the module's docstring)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not _cacheable_request(request):
            return view(request, *args, **kwargs)
        key = _key(request)
        try:
            version = pages_version()
            kept = cache.get(key, version=version)
        except Exception:  # the cache is down: the site still answers, from the database
            logger.exception("the pages' cache could not be read")
            return view(request, *args, **kwargs)
        if kept is not None:
            content, content_type = kept
            return HttpResponse(content, content_type=content_type)
        response = view(request, *args, **kwargs)
        if _keepable(request, response):
            assert isinstance(response, HttpResponse)
            kept = (response.content, response["Content-Type"])
            try:
                cache.set(key, kept, settings.ARENA_PAGE_CACHE_SECONDS, version=version)
            except Exception:
                logger.exception("a page could not be kept in the cache")
        return response

    return wrapper


def render_secret(
    request: HttpRequest, template_name: str, context: dict[str, Any]
) -> HttpResponse:
    """A page showing a secret, in this response only (the database keeps its hash): no
    cache may keep it, the browser's included."""
    response = render(request, template_name, context)
    response["Cache-Control"] = "no-store"
    return response
