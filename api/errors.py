"""One shape for every error the API answers:

    {"error": {"code": "not_found", "message": "No environment named 'chess'.", "details": []}}

``code`` is stable (clients branch on it); ``message`` is for people; ``details`` lists,
for invalid input, where and what (``{"location": ["query", "limit"], "message": ...}``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI, Schema
from ninja.errors import (
    AuthenticationError,
    AuthorizationError,
    HttpError,
    Throttled,
    ValidationError,
)

from core.errors import ArenaError, sentence
from core.services.uploads import UploadRejected

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


class ErrorDetail(Schema):
    #: Where: ``["query", "limit"]``, ``["form", "competitor"]``...
    location: list[str | int]
    message: str


class ErrorContent(Schema):
    code: str
    message: str
    details: list[ErrorDetail]


class ErrorOut(Schema):
    error: ErrorContent


#: What every operation may answer: a bad token (401), a token without the scope (403),
#: invalid parameters (422), too many requests (429).
COMMON = frozenset({401, 403, 422, 429})


def documented(ok: dict[int, Any], *errors: int | Iterable[int]) -> dict[Any, Any]:
    """The ``response`` of an operation: its success schemas, and ``ErrorOut`` for the
    common errors and ``errors`` (404, 413...), so that the OpenAPI document lists them."""
    codes = set(COMMON)
    for error in errors:
        codes |= {error} if isinstance(error, int) else set(error)
    return {**ok, frozenset(codes): ErrorOut}


def retry_after_header(wait: float) -> str:
    """``Retry-After`` for a wait of ``wait`` seconds: whole seconds, at least one."""
    return str(max(1, math.ceil(wait)))


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
        response["Retry-After"] = retry_after_header(error.wait or 1)
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
        return answer(request, 400, "refused", sentence(error.message))

    @api.exception_handler(UploadRejected)
    def upload_rejected(request: HttpRequest, error: UploadRejected) -> HttpResponse:
        return answer(request, 422, "upload_rejected", sentence(error.message))

    @api.exception_handler(RequestDataTooBig)
    def too_large(request: HttpRequest, error: RequestDataTooBig) -> HttpResponse:
        return answer(request, 413, "too_large", "The request body is too large.")

    # Django refuses a malformed or abusive body (a broken multipart body, too many fields)
    # while reading it: the client's fault, not a server error.
    @api.exception_handler(SuspiciousOperation)
    @api.exception_handler(MultiPartParserError)
    def bad_request(request: HttpRequest, error: Exception) -> HttpResponse:
        return answer(request, 400, "bad_request", f"The request body cannot be read: {error}")

    @api.exception_handler(Exception)
    def failed(request: HttpRequest, error: Exception) -> HttpResponse:
        logger.exception("API error on %s %s", request.method, request.path)
        return answer(request, 500, "server_error", "Something went wrong on Arena's side.")
