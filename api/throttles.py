"""Request rates: per user for token holders, per address for anonymous visitors.

Counted in Django's cache (``CACHES``): per process with the default in-memory cache, shared
by every process when it is Redis. Over the rate the answer is 429 with ``Retry-After``.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja.throttling import SimpleRateThrottle


class _SettingRateThrottle(SimpleRateThrottle):
    """The rate is read from the setting ``rate_setting`` on every request, so it can be
    changed without a restart of the API object (and in tests)."""

    rate_setting = ""

    def __init__(self) -> None:
        super().__init__(getattr(settings, self.rate_setting))

    def allow_request(self, request: HttpRequest) -> bool:
        self.rate = getattr(settings, self.rate_setting)
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request)


def _is_user(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated)


class TokenThrottle(_SettingRateThrottle):
    scope = "token"
    rate_setting = "ARENA_API_TOKEN_RATE"

    def get_cache_key(self, request: HttpRequest) -> str | None:
        if not _is_user(request):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class AnonymousThrottle(_SettingRateThrottle):
    scope = "anonymous"
    rate_setting = "ARENA_API_ANONYMOUS_RATE"

    def get_cache_key(self, request: HttpRequest) -> str | None:
        if _is_user(request):
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
