"""One shape for every error the API answers:

    {"error": {"code": "not_found", "message": "No environment named 'chess'.", "details": []}}

``code`` is stable (clients branch on it); ``message`` is for people; ``details`` lists,
for invalid input, where and what (``{"location": ["query", "limit"], "message": ...}``).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import (
    AuthenticationError,
    AuthorizationError,
    HttpError,
    Throttled,
    ValidationError,
)

from core.errors import ArenaError

logger = logging.getLogger(__name__)

#: HTTP status → the stable code of an ``HttpError`` raised with that status.
CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    422: "invalid",
    429: "rate_limited",
}


def error_body(code: str, message: str, details: list[Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or []}}


def install(api: NinjaAPI) -> None:
    """Register the handlers that give every error the shape above."""

    def answer(
        request: HttpRequest, status: int, code: str, message: str, details: list[Any] | None = None
    ) -> HttpResponse:
        return api.create_response(request, error_body(code, message, details), status=status)

    @api.exception_handler(ValidationError)
    def invalid(request: HttpRequest, error: ValidationError) -> HttpResponse:
        details = [
            {"location": list(item.get("loc", ())), "message": item.get("msg", "")}
            for item in error.errors
        ]
        return answer(request, 422, "invalid", "The request is not valid: see details.", details)

    @api.exception_handler(AuthenticationError)
    def unauthorized(request: HttpRequest, error: AuthenticationError) -> HttpResponse:
        message = getattr(error, "message", "") or "A valid API token is needed."
        response = answer(request, 401, "unauthorized", message)
        response["WWW-Authenticate"] = "Bearer"
        return response

    @api.exception_handler(AuthorizationError)
    def forbidden(request: HttpRequest, error: AuthorizationError) -> HttpResponse:
        message = getattr(error, "message", "") or "This token may not do that."
        return answer(request, 403, "forbidden", message)

    @api.exception_handler(Throttled)
    def throttled(request: HttpRequest, error: Throttled) -> HttpResponse:
        wait = f" Retry in {error.wait:.0f} s." if error.wait else ""
        response = answer(request, 429, "rate_limited", f"Too many requests.{wait}")
        # Whoever raised it (a throttle, or the online token check): integer seconds.
        response["Retry-After"] = str(max(1, math.ceil(error.wait or 1)))
        return response

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, error: Http404) -> HttpResponse:
        return answer(request, 404, "not_found", str(error) or "Not found.")

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, error: HttpError) -> HttpResponse:
        code = CODES.get(error.status_code, "error")
        return answer(request, error.status_code, code, str(error))

    @api.exception_handler(ArenaError)
    def refused(request: HttpRequest, error: ArenaError) -> HttpResponse:
        return answer(request, 400, "refused", error.message)

    @api.exception_handler(Exception)
    def failed(request: HttpRequest, error: Exception) -> HttpResponse:
        logger.exception("API error on %s %s", request.method, request.path)
        return answer(request, 500, "server_error", "Something went wrong on Arena's side.")
