"""Request body sizes: an upload may be as large as the site allows
(``ARENA_UPLOAD_MAX_BYTES``, plus room for the multipart form around the file); every
other body is small (``ARENA_API_MAX_BODY_BYTES``). Over the limit the answer is 413 in
the API's error shape, decided on ``Content-Length`` before anything reads the body.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from ninja.errors import HttpError

#: The form fields and multipart boundaries around an uploaded file.
MULTIPART_ALLOWANCE = 64 * 1024
#: Methods whose body an operation may read.
WITH_BODY = frozenset({"POST", "PUT", "PATCH"})

View = TypeVar("View", bound=Callable[..., Any])
Run = Callable[..., HttpResponseBase]


def _upload_limit() -> int:
    return settings.ARENA_UPLOAD_MAX_BYTES + MULTIPART_ALLOWANCE


def _small_limit() -> int:
    return settings.ARENA_API_MAX_BODY_BYTES


def takes_upload(view: View) -> View:
    """Mark an operation (below its route decorator) whose body carries an upload."""
    view.body_limit = _upload_limit  # type: ignore[attr-defined]
    return view


def limit_request_body(run: Run) -> Run:
    """Wraps every operation's ``run`` (``NinjaAPI.add_decorator(..., mode="view")``), so
    that the check comes before authentication and before the body is parsed."""
    operation = inspect.unwrap(run).__self__
    limit: Callable[[], int] = getattr(operation.view_func, "body_limit", _small_limit)

    def refusal(request: HttpRequest) -> HttpResponseBase | None:
        if request.method not in WITH_BODY:
            return None
        try:
            length = int(request.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0  # Django reads no body then either
        if length <= limit():
            return None
        return operation.api.on_exception(
            request,
            HttpError(
                413,
                f"The request body is {length:,} bytes; at most {limit():,} are allowed here.",
            ),
        )

    if inspect.iscoroutinefunction(run):
        # An async operation (online play's): its caller awaits what this returns.
        @wraps(run)
        async def checked_async(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
            refused = refusal(request)
            if refused is not None:
                return refused
            response: HttpResponseBase = await run(request, **kwargs)
            return response

        return checked_async  # type: ignore[return-value]

    @wraps(run)
    def checked(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
        return refusal(request) or run(request, **kwargs)

    return checked
